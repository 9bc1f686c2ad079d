"""`projector edit`: the model in $EDITOR, saved only once it passes the checks a sync makes,
offered again while it does not (chezmoi edit, visudo)."""

from __future__ import annotations

import subprocess
import sys

from test_cli import MODEL

BROKEN = MODEL.replace("url:", "urll:")


def _editor(sandbox, *texts: str) -> str:
    """An $EDITOR that writes the next of ``texts`` into the file it is given, each time it runs."""
    for index, text in enumerate(texts):
        (sandbox.root / f"edit-{index}").write_text(text)
    script = sandbox.bin / "fake-editor"
    script.write_text(f'#!/bin/sh\nn=$(ls {sandbox.root}/opened-* 2>/dev/null | wc -l)\ntouch {sandbox.root}/opened-$n\n'
                      f'cat {sandbox.root}/edit-$n > "$1"\n')
    script.chmod(0o755)
    return str(script)


def _edit(sandbox, editor: str, answers: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "projector", "edit", *args], env={**sandbox.env, "EDITOR": editor},
                          input=answers, capture_output=True, text=True, timeout=60, cwd=sandbox.root)


def test_a_mistake_is_shown_and_the_editor_opened_again_then_the_good_model_saved(sandbox):
    config = sandbox.model(MODEL.replace("[a, b]", "[a]"))
    done = _edit(sandbox, _editor(sandbox, BROKEN, MODEL), "y\n", "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert "providers.docs.urll: unknown key (did you mean \"url\"?)" in done.stderr and "edit again? [Y/n]" in done.stderr
    assert config.read_text() == MODEL
    assert done.stdout == f"updated {config}: run `projector sync` to apply it (the shell hook does it at the next prompt)\n"


def test_declining_keeps_the_model_and_the_edit(sandbox):
    config = sandbox.model(MODEL)
    done = _edit(sandbox, _editor(sandbox, BROKEN), "n\n", "--config", str(config))
    assert done.returncode == 1
    assert config.read_text() == MODEL
    kept = done.stderr.rsplit("your edit is kept in ", 1)[1].strip()
    assert open(kept).read() == BROKEN


def test_no_model_yet_starts_from_the_starter(sandbox):
    done = _edit(sandbox, "true", "")
    assert done.returncode == 0, done.stderr
    written = sandbox.home / ".config" / "projector" / "projector.yaml"
    assert written.read_text().splitlines()[1].startswith("# projector model")
    assert "{" not in written.read_text().splitlines()[0], "the starter's placeholders are filled in"
    assert done.stdout.startswith("wrote ~/.config/projector/projector.yaml")


def test_an_editor_that_fails_changes_nothing(sandbox):
    config = sandbox.model(MODEL)
    done = _edit(sandbox, "false", "", "--config", str(config))
    assert done.returncode == 1 and "the editor (false) exited with status 1" in done.stderr
    assert config.read_text() == MODEL
