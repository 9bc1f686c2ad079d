"""The model cache: a bridge start reads the checked model as JSON while the file is unchanged,
and a file rewritten with the same bytes (a checkout, a dotfile manager) is not checked again."""

from __future__ import annotations

import os
import time

from projector.core import model

TEXT = "version: 1\nproviders:\n  docs:\n    url: https://kb.example.com/mcp\n"


def checks(tmp_path, text: str) -> int:
    asked = []

    def known() -> tuple[str, ...]:
        asked.append(1)  # called only when the model is validated
        return ("claude-code",)

    model.cached(tmp_path / "projector.yaml", {}, known, tmp_path / "state" / "model-cache.json")
    return len(asked)


def test_same_bytes_need_no_check_and_new_bytes_do(tmp_path):
    path = tmp_path / "projector.yaml"
    path.write_text(TEXT)
    assert checks(tmp_path, TEXT) == 1
    assert checks(tmp_path, TEXT) == 0
    time.sleep(0.01)
    path.write_text(TEXT)  # rewritten: new mtime and ctime, same bytes
    os.utime(path, (1, 1))
    assert checks(tmp_path, TEXT) == 0
    path.write_text(TEXT.replace("kb.example.com", "kb.example.org"))
    assert checks(tmp_path, TEXT) == 1
    loaded = model.cached(path, {}, lambda: ("claude-code",), tmp_path / "state" / "model-cache.json")
    assert loaded.provider("docs").url == "https://kb.example.org/mcp"


def test_the_same_bytes_at_another_path_need_no_check(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "projector.yaml").write_text(TEXT)
    (tmp_path / "b" / "projector.yaml").write_text(TEXT)
    cache = tmp_path / "state" / "model-cache.json"
    asked = []
    for folder in ("a", "b", "a"):
        loaded = model.cached(tmp_path / folder / "projector.yaml", {}, lambda: asked.append(1) or ("claude-code",), cache)
        assert loaded.source == tmp_path / folder / "projector.yaml"
    assert len(asked) == 1
