"""`projector adopt CLIENT PROVIDER`: keep a hand edit of an entry as projector's own.

terraform import's idea: the entry as the client's file holds it now becomes the content
projector owns, so `status` counts it in sync and `sync` leaves it, until the model changes what
projector would write there (then sync writes that, as for any entry of its own). An entry of a
provider the model no longer has is handed over instead: projector stops managing it. An entry
projector never wrote keeps its original in the ledger: `remove` gives it back as it was.
"""

from __future__ import annotations

import os

from projector.commands.common import UsageError, busy, compute, err, sync_lock
from projector.compile import clients as client_registry
from projector.compile import documents, ledger
from projector.compile.ledger import FileRecord, entry_hash
from projector.core import files
from projector.core.errors import ProjectorError, did_you_mean
from projector.core.record import replace

ADOPTABLE = ("drift", "foreign")
STATES = {"in-sync": "as projector writes it", "adopted": "adopted already", "add": "not there yet", "update": "projector's, to be updated",
          "restyle": "projector's (imported), to be written in its spelling",
          "remove": "projector's, to be removed"}


def run(client: str, provider: str, config: str | None) -> int:
    known = client_registry.registry()
    if client not in known:
        err(f"error: unknown client {client!r}{did_you_mean(client, known)} (known: {', '.join(known)})")
        return 2
    try:
        with files.exclusive(sync_lock(os.environ), 10.0):
            return _adopt(client, provider, config)
    except files.Busy:
        return busy("nothing was changed")
    except (ProjectorError, UsageError) as error:
        err(f"error: {error}")
        return 2


def _adopt(client: str, provider: str, config: str | None) -> int:
    outcome, state = compute(config, [client], False)
    result = next((r for r in outcome.results if not r.target.is_project), None)
    if result is None:
        for problem in outcome.problems:
            err(f"error: {problem}")
        return 1
    document = documents.parse(result.target.format, result.before or "", result.shown)
    entries = document.servers(result.target.key) or {}
    if provider not in entries:
        err(f'error: {result.shown} has no entry "{provider}"{did_you_mean(provider, entries)}; nothing was changed')
        return 1
    how = dict(result.states).get(provider)
    if how not in ADOPTABLE:
        print(f'{result.shown}: entry "{provider}" is {STATES.get(how or "", how)}; nothing to adopt')
        return 0
    record = state.record(result.path) or FileRecord(client)
    wanted = (result.target.desired or {}).get(provider)
    if wanted is None:  # its provider left the model: the entry is the user's from now on
        updated = replace(record, entries={k: v for k, v in record.entries.items() if k != provider},
                          adopted={k: v for k, v in record.adopted.items() if k != provider})
        message = f'{result.shown}: entry "{provider}" is yours now; projector no longer manages it'
    else:
        normal = result.client.reading.normal  # what the client adds by itself does not count
        # An entry projector never wrote stays the user's to have back: its original is kept.
        taken = {provider: {"value": entries[provider], "text": document.source_of(result.target.key, provider)}} if how == "foreign" else {}
        updated = replace(record, entries={**record.entries, provider: entry_hash(normal(entries[provider]))},
                          adopted={**record.adopted, provider: entry_hash(normal(wanted))}, taken={**record.taken, **taken})
        message = (f'{result.shown}: adopted entry "{provider}" as it is; sync keeps it until the model changes '
                   "what projector writes there")
    new = state.with_records({str(result.path): updated})
    files.write_text(ledger.ledger_path(os.environ), new.to_json())
    print(message)
    return 0
