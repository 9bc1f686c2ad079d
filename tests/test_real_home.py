"""No test touches the real HOME, not even while pytest collects the tests (module-level code
runs then, before any fixture has given a test its own HOME)."""

from __future__ import annotations

import os
import subprocess
import sys

from paths import TESTS


def test_collecting_the_suite_writes_nothing_into_home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "PROJECTOR_TEST_HOME"))}
    environ["HOME"] = str(home)
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", str(TESTS)],
                          env=environ, cwd=TESTS.parent, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    assert written == [], f"collecting the tests wrote into HOME: {written}"
