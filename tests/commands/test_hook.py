"""The shell hooks in real bash, zsh and fish: a change that matters triggers exactly one sync,
no change triggers none, and a failing sync is reported once, not at every prompt."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

MODEL = "version: 1\nclients: [codex]\nproviders:\n  docs:\n    url: https://kb.example.com/mcp\n    token_env: DOCS_TOKEN\n"
SHELLS = {
    "bash": (["bash", "--norc", "--noprofile", "-c"], 'eval "$(projector hook bash)"'),
    "zsh": (["zsh", "-f", "-c"], 'eval "$(projector hook zsh)"'),
    "fish": (["fish", "--no-config", "-c"], "projector hook fish | source"),
}


def _shim(sandbox) -> None:
    """`projector` on PATH that notes each run in sync.log, then runs the real one."""
    shim = sandbox.bin / "projector"
    shim.write_text(f'#!/bin/sh\necho "$*" >> {sandbox.root}/sync.log\nexec {sys.executable} -m projector "$@"\n')
    shim.chmod(0o755)


def _run(sandbox, shell: str, steps: list[str]) -> subprocess.CompletedProcess[str]:
    command, load = SHELLS[shell]
    if shutil.which(command[0]) is None:
        pytest.skip(f"{command[0]} is not installed (.ci/run installs it)")
    separator = "; " if shell != "fish" else "; "
    script = separator.join([load, *steps])
    return subprocess.run([*command, script], env=dict(sandbox.env, PROJECTOR_CONFIG=str(sandbox.root / "projector.yaml")),
                          capture_output=True, text=True, timeout=120, cwd=sandbox.root)


def _syncs(sandbox) -> int:
    log = sandbox.root / "sync.log"
    return sum(line.startswith("sync") for line in log.read_text().splitlines()) if log.exists() else 0


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_one_sync_per_change_and_none_without(sandbox, shell):
    _shim(sandbox)
    model = sandbox.model(MODEL)
    done = _run(sandbox, shell, ["_projector_hook", "_projector_hook", "_projector_hook"])
    assert done.returncode == 0, done.stderr
    assert _syncs(sandbox) == 1, "the first prompt syncs, the next ones do not"
    assert (sandbox.home / ".codex" / "config.toml").exists()

    model.write_text(MODEL.replace("kb.example.com", "kb2.example.com"))
    _run(sandbox, shell, ["_projector_hook", "_projector_hook"])
    assert _syncs(sandbox) == 2, "a changed model: exactly one more sync"
    assert "kb2.example.com" in (sandbox.home / ".codex" / "config.toml").read_text()

    (sandbox.home / ".codex" / "config.toml").write_text("# the client rewrote me\n")
    _run(sandbox, shell, ["_projector_hook", "_projector_hook"])
    assert _syncs(sandbox) == 3, "a changed client file: one sync"
    assert "[mcp_servers.docs]" in (sandbox.home / ".codex" / "config.toml").read_text()


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_a_failing_sync_is_reported_once(sandbox, shell):
    _shim(sandbox)
    sandbox.model("version: 1\nproviders:\n  docs:\n    urll: x\n")
    done = _run(sandbox, shell, ["_projector_hook", "_projector_hook", "_projector_hook"])
    assert done.stderr.count("unknown key") == 1, done.stderr
    assert _syncs(sandbox) == 1
    sandbox.model(MODEL)  # fixed: the next prompt syncs again
    _run(sandbox, shell, ["_projector_hook"])
    assert _syncs(sandbox) == 2


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_a_relocating_variable_set_or_unset_in_the_shell_syncs_once(sandbox, shell):
    """The watch list holds the variables that move the clients' files (from their descriptors)."""
    _shim(sandbox)
    sandbox.model(MODEL)
    moved = sandbox.root / "codex-home"
    setting = f"export CODEX_HOME={moved}" if shell != "fish" else f"set -gx CODEX_HOME {moved}"
    unsetting = "unset CODEX_HOME" if shell != "fish" else "set -e CODEX_HOME"
    done = _run(sandbox, shell, ["_projector_hook", "_projector_hook", setting, "_projector_hook", "_projector_hook",
                                 unsetting, "_projector_hook", "_projector_hook"])
    assert done.returncode == 0, done.stderr
    assert _syncs(sandbox) == 3, "the first prompt, then one sync per change of CODEX_HOME"
    assert (moved / "config.toml").exists() and (sandbox.home / ".codex" / "config.toml").exists()


def test_unknown_shell(sandbox):
    result = sandbox.run("hook", "tcsh")
    assert result.returncode == 2 and "no hook for 'tcsh'" in result.stderr


def test_trusting_a_project_file_syncs_once_at_the_next_prompt(sandbox):
    _shim(sandbox)
    sandbox.model(MODEL)
    workspace = sandbox.file("work/a/.projector.yaml", "providers:\n  notes:\n    command: ./notes\n").parent
    _run(sandbox, "bash", ["_projector_hook"])
    assert _syncs(sandbox) == 1 and "notes" not in (sandbox.home / ".codex" / "config.toml").read_text()
    done = _run(sandbox, "bash", [f"projector trust {workspace} >/dev/null", "_projector_hook", "_projector_hook"])
    assert done.returncode == 0, done.stderr
    assert _syncs(sandbox) == 2, "the trust store changed: exactly one more sync"
    assert "[mcp_servers.notes]" in (sandbox.home / ".codex" / "config.toml").read_text()
