"""The npm packages the tests run against (tests/tools/package.json), in a cache outside the clone.

    python tests/tools/npm_tools.py install    # make test runs this; a no-op when already there

The cache is ``$PROJECTOR_TEST_TOOLS`` or ``~/.cache/projector-test-tools/<hash of package.json>``,
so a later run on the same machine reuses it. npm runs with a throw-away HOME. When npm or the
registry cannot be reached, one line says why and the tests that need these tools skip — except
under CI (``CI=true``), where they must run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

MANIFEST = Path(__file__).resolve().parent / "package.json"


def _cache() -> Path:
    if os.environ.get("PROJECTOR_TEST_TOOLS"):
        return Path(os.environ["PROJECTOR_TEST_TOOLS"])
    digest = hashlib.sha256(MANIFEST.read_bytes()).hexdigest()[:12]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "projector-test-tools" / digest


_CACHE = _cache()  # at import: tests give every test a throw-away HOME before it runs


def cache() -> Path:
    return _CACHE


def binary(name: str) -> Path | None:
    path = cache() / "node_modules" / ".bin" / name
    return path if path.exists() else None


def missing_reason() -> str | None:
    """None when the tools are installed; else why not (from the last install attempt)."""
    if (cache() / ".complete").exists():
        return None
    note = cache() / ".failed"
    return note.read_text().strip() if note.exists() else "npm test tools are not installed: run `make test`"


def install() -> int:
    target = cache()
    if (target / ".complete").exists():
        return 0
    npm = shutil.which("npm")
    target.mkdir(parents=True, exist_ok=True)
    if npm is None:
        return _failed(target, "npm is not on PATH: the real-client and MCP peer tests are skipped")
    shutil.copy(MANIFEST, target / "package.json")
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, HOME=home, npm_config_cache=str(target / ".npm-cache"), npm_config_update_notifier="false")
        print(f"installing the npm test tools into {target} (once per machine)", file=sys.stderr)
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(target)], env=env,
                              capture_output=True, text=True, timeout=1500)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["npm install failed"])[-1]
        return _failed(target, f"npm install failed ({last}): the real-client and MCP peer tests are skipped")
    (target / ".failed").unlink(missing_ok=True)
    (target / ".complete").write_text("ok\n")
    return 0


def _failed(target: Path, reason: str) -> int:
    (target / ".failed").write_text(reason + "\n")
    print(reason, file=sys.stderr)
    return 1 if os.environ.get("CI") == "true" else 0


if __name__ == "__main__" and sys.argv[1:] == ["install"]:
    sys.exit(install())
