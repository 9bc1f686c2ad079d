"""What a sync looks up around the bound workspaces (compile/targets.py's Survey): the same
answers as the os.path calls it stands for, each path looked up once."""

from __future__ import annotations

import os

from projector.compile.targets import Survey


def test_canonical_paths_are_os_realpath_s(tmp_path):
    real = tmp_path / "real"
    (real / "a" / "b").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)  # a folder link on the way
    (real / "a" / "to-b").symlink_to("b")  # a relative link at the end
    (real / "a" / "loop").symlink_to("loop")
    (real / "a" / "dangling").symlink_to(tmp_path / "nowhere")
    survey = Survey()
    for path in ["link/a/b", "link/a/to-b", "link/a/to-b/c/d", "real/a/b", "link/a/missing/deeper", "link/a/loop",
                 "link/a/dangling", "link/a/dangling/x", "link", "nowhere/at/all", ""]:
        full = os.path.normpath(tmp_path / path)
        assert survey.canonical(full) == os.path.realpath(full), path
    assert survey.canonical("/") == "/"


def test_existence_is_looked_up_once_and_a_removal_is_forgotten(tmp_path, monkeypatch):
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / ".mcp.json").write_text("{}")
    looked: list[str] = []
    lexists = os.path.lexists
    monkeypatch.setattr(os.path, "lexists", lambda p: looked.append(p) or lexists(p))
    survey = Survey()
    assert survey.exists(str(tmp_path / "w" / ".mcp.json")) and survey.exists(str(tmp_path / "w" / ".mcp.json"))
    assert not survey.exists(str(tmp_path / "gone")) and not survey.exists(str(tmp_path / "gone" / ".mcp.json"))
    assert len(looked) == len(set(looked)), "each path once"
    assert str(tmp_path / "gone") in looked and str(tmp_path / "gone" / ".mcp.json") not in looked, "nothing in an absent folder"
    (tmp_path / "w" / ".mcp.json").unlink()
    survey.forget(str(tmp_path / "w" / ".mcp.json"))
    assert not survey.exists(str(tmp_path / "w" / ".mcp.json"))
