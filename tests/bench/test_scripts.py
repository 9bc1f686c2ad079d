"""The benchmarks under bench/ still start: each reads its own imports and options (a moved test
helper once broke two of them unnoticed)."""

from __future__ import annotations

import subprocess
import sys

import paths
import pytest

SCRIPTS = sorted((paths.TESTS.parent / "bench").glob("*_bench.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_benchmark_starts_and_shows_its_options(script):
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "--runs" in done.stdout
