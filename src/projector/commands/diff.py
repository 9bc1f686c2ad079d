"""`projector diff`: what `sync` would change, as a unified diff per file (a dry run of it).

Like `git diff`: coloured on a terminal unless $NO_COLOR is set or TERM=dumb, and shown through
a pager on a terminal ($PAGER, else `less` with LESS=FRX: it quits when the diff fits on one
screen and keeps the colours).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from projector.commands.common import compute, err, report_warnings
from projector.compile import engine
from projector.core.errors import ProjectorError


def run(config: str | None, client: list[str] | None, force: bool, stat: bool = False, color: bool | None = None, pager: bool | None = None) -> int:
    from projector.compile.report import diff_stat, unified_diff

    try:
        outcome, state = compute(config, client, force)
    except ProjectorError as error:
        err(f"error: {error}")
        return 2
    written = engine.write(outcome, state)  # the dry-run system writes nothing
    terminal = sys.stdout.isatty()
    colour = wants_colour(terminal, os.environ) if color is None else color
    changed = [result for result in written.results if result.changed]
    text = diff_stat(changed) if stat else "".join(unified_diff(result, colour) for result in changed)
    show(text, terminal if pager is None else pager, os.environ)
    report_warnings(outcome)
    if outcome.problems:
        return 2
    return 1 if changed else 0


def wants_colour(terminal: bool, environ: Mapping[str, str]) -> bool:
    """Colour by default on a terminal; NO_COLOR (https://no-color.org) and TERM=dumb say no."""
    return terminal and not environ.get("NO_COLOR") and environ.get("TERM") != "dumb"


def show(text: str, paged: bool, environ: Mapping[str, str]) -> None:
    """``text`` on stdout, through the pager when ``paged`` (nothing to show: no pager)."""
    import shlex
    import shutil

    try:
        command = shlex.split(environ.get("PAGER", "less"))
    except ValueError:
        command = []
    usable = bool(command) and command[0] != "cat" and shutil.which(command[0], path=environ.get("PATH")) is not None
    if not text or not paged or not usable or environ.get("TERM") == "dumb":
        sys.stdout.write(text)
        return
    import subprocess

    sys.stdout.flush()
    subprocess.run(command, input=text, text=True, env={**environ, "LESS": environ.get("LESS", "FRX")}, check=False)
