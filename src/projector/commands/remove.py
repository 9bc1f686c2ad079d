"""`projector remove`: every projector entry out of every client, each file as it was before.

A sync of a model with no providers, over every client projector knows (a client uninstalled
since still has its file) and every file the ledger names (one a variable such as CODEX_HOME
pointed at back then): projector's entries go, an entry it took over is given back as it was,
and a servers key or a whole file that projector created goes. Entries changed by hand stay
unless --force. Every entry a sync removed from a project file is put back (the whole file as it
was, while nothing else changed it since). The model stays; the shell hook, if still installed,
writes the entries again at the next prompt.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from projector.commands.common import busy, carry_out, err, known_clients, report_warnings
from projector.compile import engine, ledger
from projector.compile.system import RealSystem
from projector.compile.targets import TargetFile
from projector.core import files, model
from projector.core.errors import Problem, ProjectorError, display_path
from projector.core.locations import home
from projector.core.modeltypes import Model
from projector.core.record import replace


def run(config: str | None, only: list[str] | None, force: bool) -> int:
    from projector.core import fingerprint
    from projector.compile.report import change_line

    environ = os.environ
    known = known_clients(only)
    clients = [c for i, c in known.items() if not only or i in only]
    nothing = Model(model.model_path(config, environ).absolute(), None, (), ())

    def removal() -> tuple[engine.Outcome, ledger.Ledger]:
        state = ledger.load(ledger.ledger_path(environ))
        outcome = engine.compute(nothing, clients, environ, state, RealSystem(), force=force)
        return _with_recorded_files(outcome, state, clients, force), state

    try:
        outcome, written = carry_out(removal, 10.0)
    except files.Busy:
        return busy("nothing was changed")
    except ProjectorError as error:  # the ledger cannot be read: nothing is removed without it
        err(f"error: {error}")
        return 2
    fingerprint.forget(str(nothing.source), environ)  # the next sync works the entries out afresh
    changed = [result for result in written.results if result.changed or result.named("give-back")]
    for result in changed:
        print(change_line(result))
    if not changed and not outcome.problems and not written.problems:
        print("nothing to remove: no client file holds an entry projector wrote")
    report_warnings(outcome, written.problems)
    return 1 if outcome.problems or written.problems else 0


def _with_recorded_files(outcome: engine.Outcome, state: ledger.Ledger, clients: list, force: bool) -> engine.Outcome:
    """``outcome`` with the files the ledger names that are not among its targets."""
    by_id = {c.id: c for c in clients}
    seen = {str(c.global_file(os.environ)) for c in clients} | {r.target.ledger_key for r in outcome.results}
    results, problems = list(outcome.results), list(outcome.problems)
    for path, record in state.files.items():
        client = by_id.get(record.client)
        if client is None or path in seen or "#" in path:  # path#key: hook groups, in a hook file no client reads now
            continue
        shown = display_path(path, home(os.environ))
        if record.left is not None:  # a project file's record: what a sync removed there
            result = _restored(client, Path(path), shown, record, outcome.system)
        else:
            target = TargetFile(client, Path(path), shown, client.format, client.servers_key, {}, (), client.name)
            result = engine.evaluate(target, record, {}, force, outcome.system)
        (problems if isinstance(result, Problem) else results).append(result)
    return replace(outcome, results=tuple(results), problems=tuple(problems))


def _restored(client: Any, path: Path, shown: str, record: ledger.FileRecord, system: Any) -> engine.FileResult | Problem:
    """A project file with the entries projector removed put back (its format and key from the
    client's project file whose path it ends with)."""
    spec = next((s for s in client.project_files if str(path).endswith(os.sep + s.path)), None)
    if spec is None:
        return Problem(shown, None, None, f"not a project file {client.name} reads; left untouched")
    target = TargetFile(client, path, shown, spec.format, spec.servers_key, None, (), client.name, (client.reading,), client.file_keys)
    return engine.restored(target, record, system)
