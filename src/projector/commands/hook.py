"""`projector hook SHELL`: the prompt hook for bash, zsh or fish."""

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
