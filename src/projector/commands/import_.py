"""`projector import`: bring the MCP servers the clients already have into the model.

Reads every installed client's entries (compile.importing), writes the providers into the model
keeping its comments (core.modeledit, as `bind` does), and records each imported entry as taken
over in the ledger, with its original bytes: the user said so by importing it, so the next sync
manages it, and `projector remove` gives it back as it was. An entry under another name than
its provider's is taken out while the provider's entry stands in for it, and put back likewise. ``--dry-run`` shows the model's diff
and the report and writes nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from projector.commands.common import busy, err, known_clients, load_model, sync_lock
from projector.commands.init import starter_text
from projector.compile import clients as client_registry
from projector.compile import documents, ledger
from projector.compile.documents.base import neighbours
from projector.compile.importing import Claim, found_entries, gather, identity_of
from projector.compile.ledger import FileRecord, entry_hash
from projector.core import files, locations, model
from projector.core.errors import ProjectorError, display_path
from projector.core.record import replace

def run(config: str | None, only: list[str] | None, dry_run: bool) -> int:
    from projector.core import modeledit

    environ = os.environ
    known = known_clients(only)
    path = model.model_path(config, environ)
    shown = display_path(path)
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else None
        providers = load_model(config).providers if text is not None else ()
        existing = {p.name: identity_of(p) for p in providers}
        defaults = {p.name: list(p.default) if p.default is not None else None for p in providers}
        ways = {p.name: {"oauth": p.oauth is not None, "token_env": p.token_env} for p in providers}
    except ProjectorError as error:
        err(f"error: {error}\n{shown} has mistakes of its own: fix them first (`projector edit`); nothing was imported")
        return 1
    clients = client_registry.selected(tuple(only) if only else None, environ)
    found, problems = found_entries(clients, environ)
    imported = gather(found, existing, defaults, ways)
    home = locations.home(environ)
    bindings = {display_path(folder, home): settings for folder, settings in imported.bindings.items()}
    before = text if text is not None else starter_text()
    after = modeledit.add_providers(before, imported.providers, bindings) if imported.providers or bindings else before
    try:
        model.checked_text(after, path, environ, tuple(known))
    except ProjectorError as error:
        reasons = "\n".join(f"  {problem.message}" for problem in error.problems)
        err(f"error: the imported providers would make the model invalid (please report this):\n{reasons}\nnothing was imported")
        return 1
    for problem in problems:
        err(f"error: {problem}")
    if dry_run:
        _show_diff(text, after, shown)
    for line in imported.report:
        print(line)
    if not found:
        print("nothing to import: no client here has an MCP entry" + (f" ({', '.join(c.name for c in clients)} looked at)" if clients else ""))
    elif not imported.report:
        print("nothing new to import: every entry is a provider of the model already")
    if dry_run:
        return 1 if problems else 0
    try:
        with files.exclusive(sync_lock(environ), 10.0):
            state = ledger.load(ledger.ledger_path(environ))  # first: without it, the model is not written either
            if after != text:
                files.write_text(path, after, expected=text)
            _claim(imported.claims, state)
    except ProjectorError as error:
        err(f"error: {error}\nnothing was imported")
        return 2
    except files.ChangedMeanwhile:
        err(f"error: {shown} changed while projector imported into it; nothing was written, try again")
        return 1
    except files.Busy:
        return busy("nothing was imported")
    if imported.providers:
        print(f"updated {shown}: `projector diff` shows what sync writes (projector's own shape of each entry: where a client "
              "reads the same server, it says `restyles`), `projector remove` gives every entry back as it is now")
    return 1 if problems else 0


def _show_diff(before: str | None, after: str, shown: str) -> None:
    from projector.compile.report import text_diff

    print(text_diff(before, after, shown), end="")


def _claim(claims: tuple[Claim, ...], state: ledger.Ledger) -> None:
    """Each imported entry becomes projector's, its original kept (ledger.FileRecord.taken)."""
    records: dict[str, FileRecord] = {}
    texts: dict[Path, documents.Document] = {}
    for claim in claims:
        record = records.get(str(claim.path)) or state.record(claim.path) or FileRecord(claim.client.id)
        if claim.name in record.entries or json.dumps([*claim.client.servers_key, claim.name]) in record.pruned:
            continue  # projector's already
        if claim.path not in texts:
            texts[claim.path] = documents.parse(claim.client.format, files.read_text(claim.path).text or "", str(claim.path))
        document = texts[claim.path]
        original = {"value": claim.value, "text": document.source_of(claim.client.servers_key, claim.name),
                    **neighbours(document, claim.client.servers_key, claim.name)}
        if claim.replaced_by is not None:  # taken out while the provider's entry stands in for it (engine)
            replaced = {json.dumps([*claim.client.servers_key, claim.name]): {**original, "for": claim.replaced_by}}
            records[str(claim.path)] = replace(record, pruned={**record.pruned, **replaced})
            continue
        records[str(claim.path)] = replace(record, entries={**record.entries, claim.name: entry_hash(claim.client.reading.normal(claim.value))},
                                           taken={**record.taken, claim.name: original})
    if records:
        files.write_text(ledger.ledger_path(os.environ), state.with_records(records).to_json())
