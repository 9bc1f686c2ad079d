"""What `--help`, `--version` and shell completion show a person (snapshots at 80 columns)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

COMMANDS = ["diff", "sync", "status", "explain", "doctor", "adopt", "remove", "import", "bind", "unbind", "trust", "untrust", "edit",
            "hook", "completion", "init", "ps", "stop", "login", "logout"]


def _help(sandbox, *args: str) -> str:
    result = subprocess.run([*sandbox_command(), *filter(None, args), "--help"], env={**sandbox.env, "COLUMNS": "80"}, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def sandbox_command() -> list[str]:
    import sys

    return [sys.executable, "-m", "projector"]


def test_every_help_text(sandbox, snapshot):
    texts = {name: _help(sandbox, name) for name in ["", *COMMANDS]}
    assert texts == snapshot
    for name, text in texts.items():
        lines = text.splitlines()
        assert all(len(line) <= 80 for line in lines), f"{name}: a line wider than 80 columns"
        assert "<str>" not in text and "<bool>" not in text and "…" not in text, name
    listed = texts[""].split("Commands:\n")[1]
    assert "..." not in listed, "every command's summary is whole"


def test_unbind_help_speaks_of_unbinding(sandbox):
    text = _help(sandbox, "unbind")
    assert "bind" not in text.replace("unbind", "").replace("binding", ""), text


def test_version(sandbox):
    from projector import __version__

    for flag in ("--version", "-V"):
        result = sandbox.run(flag)
        assert (result.returncode, result.stdout) == (0, f"projector {__version__}\n")


SHELLS = {
    "bash": ["bash", "--norc", "--noprofile", "-c",
             'eval "$(projector completion bash)"; COMP_WORDS=(projector sy); COMP_CWORD=1; _projector_completion projector; '
             'printf "%s\\n" "${COMPREPLY[@]}"; COMP_WORDS=(projector diff --client co); COMP_CWORD=3; '
             '_projector_completion projector; printf "%s\\n" "${COMPREPLY[@]}"'],
    "fish": ["fish", "--no-config", "-c", "projector completion fish | source; complete -C 'projector sy'; complete -C 'projector diff --client co'"],
    "zsh": ["zsh", "-f", "-c", "autoload -Uz compinit && compinit -u; eval \"$(projector completion zsh)\"; whence -w _projector_completion"],
}


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_completion_in_real_shells(sandbox, shell):
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed (.ci/run installs it)")
    sandbox.install_projector()
    done = subprocess.run(SHELLS[shell], env=sandbox.env, capture_output=True, text=True, timeout=120, cwd=sandbox.root)
    assert done.returncode == 0, done.stderr
    if shell == "zsh":  # completing needs zle, which a script has not; the function is defined and registered
        assert done.stdout.strip() == "_projector_completion: function"
        return
    words = [line.split("\t")[0] for line in done.stdout.splitlines()]
    assert words[0] == "sync" and sorted(words[1:]) == ["codex", "continue", "copilot", "copilot-jetbrains"], done.stdout  # each shell's own order


def test_completion_of_an_unknown_shell(sandbox):
    result = sandbox.run("completion", "tcsh")
    assert result.returncode == 2 and "no completion for 'tcsh'" in result.stderr


def test_help_says_the_defaults_the_readme_says(sandbox):
    """--config's default names $XDG_CONFIG_HOME; --pager's names less with LESS=FRX (issue 30)."""
    config = " ".join(sandbox.run("sync", "--help").stdout.split())
    assert "$PROJECTOR_CONFIG, else $XDG_CONFIG_HOME/projector/projector.yaml, else ~/.config/projector/projector.yaml" in config
    pager = " ".join(sandbox.run("diff", "--help").stdout.split())
    assert "$PAGER, else less with LESS=FRX" in pager and "less -R" not in pager


MODEL_NAMES = "version: 1\nclients: [codex]\nproviders:\n  docs:\n    url: https://x.example.com/mcp\n    kbs: [handbook, api-a]\n  lint:\n    command: l\n"
NAMES = {
    "bash": ["bash", "--norc", "--noprofile", "-c",
             'eval "$(projector completion bash)"; '
             'COMP_WORDS=(projector bind ~/w --provider ""); COMP_CWORD=4; _projector_completion projector; printf "%s\\n" "${COMPREPLY[@]}"; '
             'COMP_WORDS=(projector bind ~/w --provider docs --kb ""); COMP_CWORD=6; _projector_completion projector; printf "%s\\n" "${COMPREPLY[@]}"; '
             'COMP_WORDS=(projector adopt codex ""); COMP_CWORD=3; _projector_completion projector; printf "%s\\n" "${COMPREPLY[@]}"'],
    "fish": ["fish", "--no-config", "-c", "projector completion fish | source; complete -C 'projector bind ~/w --provider '; "
             "complete -C 'projector bind ~/w --provider docs --kb '; complete -C 'projector adopt codex '"],
}


@pytest.mark.parametrize("shell", sorted(NAMES))
def test_completion_offers_the_models_providers_and_kbs(sandbox, shell):
    """`bind --provider <Tab>`, `--kb <Tab>` and `adopt codex <Tab>` offer the model's names, not file names."""
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed (.ci/run installs it)")
    sandbox.install_projector()
    sandbox.file(".config/projector/projector.yaml", MODEL_NAMES)
    done = subprocess.run(NAMES[shell], env=sandbox.env, capture_output=True, text=True, timeout=120, cwd=sandbox.root)
    assert done.returncode == 0, done.stderr
    offered = [line.split("\t")[0] for line in done.stdout.splitlines()]
    assert (sorted(offered[:2]), sorted(offered[2:4]), sorted(offered[4:])) == (["docs", "lint"], ["api-a", "handbook"], ["docs", "lint"])  # fish sorts
