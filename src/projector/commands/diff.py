"""`projector diff`: what `sync` would change, as a unified diff per file (a dry run of it).

Like `git diff`: coloured on a terminal unless $NO_COLOR is set or TERM=dumb, and shown through
a pager on a terminal ($PAGER, else `less` with LESS=FRX: it quits when the diff fits on one
screen and keeps the colours).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from projector.commands.common import dry_sync, err, report_warnings
from projector.compile import engine
from projector.compile.ledger import Ledger
from projector.core.errors import ProjectorError
from projector.core.record import replace


def run(config: str | None, client: list[str] | None, force: bool, stat: bool = False, color: bool | None = None, pager: bool | None = None,
        as_json: bool = False) -> int:
    from projector.compile.report import by_file, diff_heading, diff_stat, restyle_lines, restyled, unified_diff

    try:
        outcome, state, written = dry_sync(config, client, force)
    except ProjectorError as error:
        err(f"error: {error}")
        return 2
    terminal = sys.stdout.isatty()
    colour = wants_colour(terminal, os.environ) if color is None else color
    changed = [result for result in by_file(written.results) if result.changed]  # a file of several targets is one diff
    drifted = [] if force else drift(outcome, state, written.results)
    code = 2 if outcome.problems else (1 if changed or drifted else 0)
    if as_json:
        import json

        files = [{"path": r.shown, "client": r.client.id, "kind": "project" if r.target.is_project else "global",
                  "drift": r.named("drift"), "restyles": restyled(r), "entries": dict(r.states), "diff": unified_diff(r, False)}
                 for r in changed + drifted]
        print(json.dumps({"schema": 1, "changes": bool(changed or drifted), "files": files, "warnings": list(outcome.warnings),
                          "errors": [str(p) for p in outcome.problems]}, indent=2))
        return code
    if stat:
        text = diff_stat(changed + drifted) + "".join(line + "\n" for line in restyle_lines(changed))
    else:  # a heading, and a restyle, are said above the file's diff (a patch reader skips the lines)
        text = "".join(diff_heading(r) + "".join(f"# {line}\n" for line in restyle_lines([r])) + unified_diff(r, colour) for r in changed)
        text += "".join(f"# {r.shown}: drift {', '.join(r.named('drift'))} (changed by hand, kept by sync); "
                        "`projector sync --force` would write:\n" + unified_diff(r, colour) for r in drifted)
    show(text, terminal if pager is None else pager, os.environ)
    report_warnings(outcome)
    return code


def drift(outcome: engine.Outcome, state: Ledger, results: tuple[engine.FileResult, ...]) -> list[engine.FileResult]:
    """The files sync leaves as they are while they hold entries changed by hand (which sync
    keeps), each as `sync --force` would write it, so the diff shows the drift: what is there
    against what projector would write. Only those files are evaluated again (with force), not
    the whole sync. A file of several targets (Codex's config.toml: its servers, and the trust
    of projector's hook groups) is one result, from its text to what the last of them leaves,
    with the entry states of all (a file sync changes is shown as sync writes it, its drift
    named above it)."""
    from projector.compile.report import by_file

    files = by_file(results)
    paths = {result.path for result in files if not result.changed and result.named("drift")}
    if not paths:
        return []
    kept = {result.path: result.states for result in files}
    return [replace(r, states=kept[r.path]) for r in by_file(engine.forced(outcome, state, paths)) if r.changed]


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
