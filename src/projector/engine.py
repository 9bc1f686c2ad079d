"""The compiler: one computation, shown by ``diff`` and carried out by ``sync``.

    projector.yaml ─load─▶ Model ─plan─▶ servers ─render per client─▶ desired entries
    client file ─read─▶ Document ─reconcile with the ledger─▶ edits ─▶ new text

``compute`` reads and decides; nothing is written until ``write`` is called with its result.
A client whose file cannot be read or parsed gets a problem and is left untouched; the others
go on.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from projector import documents, files
from projector.clients import Client
from projector.errors import DocumentError, Problem, display_path
from projector.ledger import FileRecord, Ledger
from projector.model import Model
from projector.plan import plan
from projector.reconcile import reconcile


@dataclass(frozen=True)
class FileResult:
    client: Client
    path: Path
    shown: str  # the path as a person reads it (~/...)
    before: str | None  # None: the file does not exist
    after: str | None  # None: the file is (to be) removed
    bom: bool
    record: FileRecord | None  # the ledger's record after the sync
    notes: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class Outcome:
    results: tuple[FileResult, ...]
    problems: tuple[Problem, ...]  # files left untouched
    warnings: tuple[str, ...]

    @property
    def changed(self) -> tuple[FileResult, ...]:
        return tuple(r for r in self.results if r.changed)


def projector_on_path(environ: Mapping[str, str]) -> str | None:
    """projector as PATH finds it: the stable entry (a pipx or Homebrew shim), not resolved
    through symlinks, so an upgrade that moves the real file does not break the entries."""
    found = shutil.which("projector", path=environ.get("PATH", os.defpath))
    return os.path.abspath(found) if found else None


def compute(
    model: Model,
    clients: list[Client],
    environ: Mapping[str, str],
    ledger: Ledger,
    force: bool = False,
) -> Outcome:
    compiled = plan(model, projector_on_path(environ))
    providers = {p.name: p for p in model.providers}
    home = Path(environ.get("HOME") or Path.home())
    results, problems, warnings = [], [], list(compiled.warnings)
    for client in clients:
        path = client.global_file(environ)
        assert path is not None  # every descriptor ends its folder list with one under ~
        shown = display_path(path, home)
        desired = {name: client.render(server) for name, server in compiled.servers}
        try:
            result = _file_result(client, path, shown, desired, ledger.record(path), providers, force)
        except DocumentError as error:
            problems += error.problems
            continue
        except (OSError, UnicodeDecodeError) as error:
            problems.append(Problem(shown, None, None, _reason(error)))
            continue
        results.append(result)
        warnings += result.notes
    return Outcome(tuple(results), tuple(problems), tuple(warnings))


def _reason(error: Exception) -> str:
    if isinstance(error, UnicodeDecodeError):
        return "not UTF-8 text; left untouched"
    return f"{error.strerror or error}; left untouched" if isinstance(error, OSError) else str(error)


def _file_result(
    client: Client,
    path: Path,
    shown: str,
    desired: dict,
    record: FileRecord | None,
    providers: Mapping,
    force: bool,
) -> FileResult:
    read = files.read_text(path)
    document = documents.parse(client.format, read.text or "", shown)
    key = client.servers_key
    current = document.servers(key)
    owned = dict(record.entries) if record else {}
    decision = reconcile(shown, current, desired, owned, providers, force)
    after: str | None = document.edited(key, decision.edits) if decision.edits else document.text
    created = record.created if record else None
    if decision.owned and not owned:
        created = "file" if read.text is None else ("key" if current is None else None)
    if not decision.owned and created:
        after = _undo_creation(client, after, shown, created, read.text)
    new_record = FileRecord(client.id, decision.owned, created) if decision.owned else None
    before = read.text
    if before is None and after == "":
        after = None
    return FileResult(client, path, shown, before, after, read.bom, new_record, decision.notes)


def _undo_creation(client: Client, text: str, shown: str, created: str, original: str | None) -> str | None:
    """With its last entry gone, take away what projector brought into being."""
    document = documents.parse(client.format, text, shown)
    if not document.key_is_empty(client.servers_key) and document.servers(client.servers_key) is not None:
        return text  # the user added entries of their own: keep them
    stripped = document.without_key(client.servers_key)
    if created == "file" and not documents.parse(client.format, stripped, shown).servers(()):  # nothing else there
        return None
    return stripped


def write(outcome: Outcome, ledger: Ledger) -> Ledger:
    """Carry out the outcome: changed files written or removed; the new ledger returned."""
    records: dict[str, FileRecord | None] = {}
    for result in outcome.results:
        if result.changed:
            if result.after is None:
                files.remove(result.path)
            else:
                files.write_text(result.path, result.after, bom=result.bom)
        records[str(result.path)] = result.record
    return ledger.with_records(records)
