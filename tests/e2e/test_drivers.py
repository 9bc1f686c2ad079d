"""The drivers' own set-up: Gemini CLI reads its system settings file only where root alone can
write, so below a world-writable folder (HOME in /tmp/x/home) its tests skip with that reason."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import paths
import pytest

sys.path.insert(0, str(paths.TOOLS))
import drivers  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="Gemini's rule is about root's folders: run as root to check it")


def test_a_settings_file_below_a_world_writable_folder_is_refused(tmp_path):
    shared = tmp_path / "x"
    shared.mkdir()
    shared.chmod(0o1777)
    settings = shared / "home" / ".cache" / "gemini-system-settings.json"
    assert drivers.insecure_for_gemini(settings) == f"{shared} is writable by group or others (mode 1777)"
    assert drivers.insecure_for_gemini(Path("/usr/lib/os-release-of-nobody")) is None, "root's own folders are fine"


def test_the_gemini_driver_skips_with_the_reason_where_gemini_would_refuse_its_settings(monkeypatch, tmp_path):
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    monkeypatch.setattr(drivers.npm_tools, "cache", lambda: open_folder / "cache")
    reason = drivers.DRIVERS["gemini"].unusable()
    assert reason is not None and "is writable by group or others" in reason and str(open_folder) in reason
    assert drivers.DRIVERS["qwen"].unusable() is None, "Qwen Code reads its file wherever it is"
