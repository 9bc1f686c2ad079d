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


@pytest.mark.parametrize(
    ("first_lines", "expected"),
    [
        ("#!/opt/venv/bin/python3\n", "/opt/venv/bin/python3"),
        ("#!/usr/bin/env sh\n", "WHICH sh"),
        ("#!/bin/sh\n'''exec' \"/opt/my venv/bin/python\" \"$0\" \"$@\"\n' '''\n", "/opt/my venv/bin/python"),  # pip's launcher
    ],
)
def test_the_python_of_an_installed_projector_is_read_from_its_script(tmp_path, first_lines, expected):
    """--projector PATH runs the bench's baseline on the script's own Python, however pip wrote it."""
    import shutil

    sys.path.insert(0, str(paths.TESTS.parent / "bench"))
    from measure import interpreter

    script = tmp_path / "projector"
    script.write_text(first_lines + "from projector.entry import main\n")
    assert interpreter(str(script)) == (shutil.which("sh") if expected == "WHICH sh" else expected)
