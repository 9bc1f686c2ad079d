"""`projector diff`: what `sync` would change, as a unified diff per file (a dry run of it)."""

from __future__ import annotations

import sys

from projector.commands.common import compute, err, report_warnings
from projector.compile import engine
from projector.core.errors import ProjectorError


def run(config: str | None, client: list[str] | None, force: bool, color: bool | None) -> int:
    from projector.compile.report import unified_diff

    try:
        outcome, state = compute(config, client, force)
    except ProjectorError as error:
        err(f"error: {error}")
        return 2
    written = engine.write(outcome, state)  # the dry-run system writes nothing
    colour = sys.stdout.isatty() if color is None else color
    changed = [result for result in written.results if result.changed]
    for result in changed:
        sys.stdout.write(unified_diff(result, colour))
    report_warnings(outcome)
    if outcome.problems:
        return 2
    return 1 if changed else 0

