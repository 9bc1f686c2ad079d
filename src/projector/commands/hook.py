"""`projector hook SHELL` (the prompt hook) and `projector completion SHELL` (tab completion)."""

from __future__ import annotations

import sys
from pathlib import Path

from projector.commands.common import err

SHELLS = {"bash": "bash.sh", "zsh": "zsh.sh", "fish": "fish.fish"}
SNIPPETS = Path(__file__).resolve().parent.parent / "shell"


def run(shell: str) -> int:
    if shell not in SHELLS:
        err(f"error: no hook for {shell!r} (shells: {', '.join(SHELLS)})")
        return 2
    sys.stdout.write((SNIPPETS / SHELLS[shell]).read_text(encoding="utf-8"))
    return 0


def completion(shell: str, complete_var: str) -> int:
    """typer's completion script for ``shell``; a completion asks `projector` itself (with
    ``complete_var`` set: the command line, cli.py, answers it) for the words that fit, so it
    knows every command and option."""
    if shell not in SHELLS:
        err(f"error: no completion for {shell!r} (shells: {', '.join(SHELLS)})")
        return 2
    from typer.completion import completion_init, get_completion_script

    completion_init()
    print(get_completion_script(prog_name="projector", complete_var=complete_var, shell=shell))
    return 0
