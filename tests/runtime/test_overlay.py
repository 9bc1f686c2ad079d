"""overlay: a workspace's environment, built in layers; only names are ever reported."""

from __future__ import annotations

from projector.runtime.launch import Launch
from projector.runtime.overlay import build


def launch(tmp_path, env=(), env_files=(), direnv=False, command="srv") -> Launch:
    return Launch("srv", True, True, str(tmp_path), command, (), str(tmp_path), tuple(env), tuple(env_files), direnv, ())


def test_layers_apply_in_order_files_then_direnv_then_env_with_expansion_and_unsets(tmp_path):
    (tmp_path / "one.env").write_text("A=file\nB=${BASE}-b\nSECRET=s3cr3t\n")
    (tmp_path / "two.env").write_text("A=second\nbroken line\n")
    seen = []

    def direnv(root, environ, notices):
        seen.append(dict(environ))
        return [("FROM_DIRENV", "d"), ("BASE", None), ("DIRENV_DIFF", "x")]

    built = build(
        launch(tmp_path, env=[("A", "${A}+env"), ("GONE", None), ("C", "${MISSING:-dflt}")], env_files=[str(tmp_path / "one.env"), str(tmp_path / "two.env")], direnv=True),
        {"BASE": "base", "GONE": "here", "KEEP": "k"},
        direnv=direnv,
    )
    assert seen[0]["A"] == "second" and seen[0]["B"] == "base-b"  # direnv sees the files' layer
    env = built.environ
    assert env["A"] == "second+env" and env["C"] == "dflt" and env["FROM_DIRENV"] == "d" and env["KEEP"] == "k"
    assert "BASE" not in env and "GONE" not in env
    assert dict(built.names)[f"direnv {tmp_path}"] == ("FROM_DIRENV", "BASE")  # direnv's bookkeeping left out
    assert built.notices == (f"{tmp_path}/two.env:2: not a NAME=value line; it was skipped",)
    assert "s3cr3t" not in repr((built.names, built.notices))
