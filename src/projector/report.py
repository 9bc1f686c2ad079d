"""How results are shown: unified diffs (coloured on a terminal) and one line per change."""

from __future__ import annotations

import difflib

from projector.engine import FileResult

_COLOURS = {"+": "\033[32m", "-": "\033[31m", "@": "\033[36m"}
_RESET = "\033[0m"


def unified_diff(result: FileResult, colour: bool) -> str:
    before = (result.before or "").splitlines(keepends=True)
    after = (result.after or "").splitlines(keepends=True)
    lines = difflib.unified_diff(
        before,
        after,
        fromfile=result.shown if result.before is not None else "/dev/null",
        tofile=result.shown if result.after is not None else "/dev/null",
    )
    out = []
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        if colour and line[:1] in _COLOURS and not line.startswith(("+++", "---")):
            line = _COLOURS[line[0]] + line.rstrip("\n") + _RESET + "\n"
        elif colour and line.startswith(("+++", "---")):
            line = "\033[1m" + line.rstrip("\n") + _RESET + "\n"
        out.append(line)
    return "".join(out)


def change_line(result: FileResult) -> str:
    if result.before is None:
        verb = "created"
    elif result.after is None:
        verb = "removed"
    else:
        verb = "updated"
    return f"{verb} {result.shown} ({result.client.name})"
