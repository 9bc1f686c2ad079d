"""Which entries of one client file to set, keep or remove (pure).

- An entry projector wrote and nobody changed follows the model: replaced, or removed with its
  provider.
- An entry projector wrote that was changed by hand is drift: reported and kept (``--force``
  overwrites).
- A same-name entry projector did not write is adopted only when it has a shape projector or its
  predecessor wrote: the provider's URL (any query), or ``<path>/projector mcp --provider <name>``.
  Anything else is the user's: left alone, with a warning.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from projector.compile.ledger import entry_hash
from projector.compile.plan import bridge_args
from projector.core.model import Provider

URL_KEYS = ("url", "httpUrl", "serverUrl", "uri")


@dataclass(frozen=True)
class Decision:
    edits: dict[str, Any | None]  # name -> new value, or None to remove
    owned: dict[str, str]  # name -> hash of what the file holds for us afterwards
    notes: tuple[str, ...]
    states: tuple[tuple[str, str], ...] = ()  # name -> in-sync | add | update | remove | drift | foreign


def _without_query(url: str) -> str:
    return url.partition("#")[0].partition("?")[0].rstrip("/")


def command_of(value: Any) -> tuple[str, list[Any]] | None:
    """A stdio entry's program and arguments, in any client's dialect; None for anything else."""
    if not isinstance(value, Mapping):
        return None
    command, args = value.get("command"), value.get("args") or []
    if isinstance(command, list) and command:  # OpenCode: program and arguments in one array
        command, args = command[0], command[1:]
    if not isinstance(command, str) or not isinstance(args, list):
        return None
    return command, args


def endpoint(value: Any) -> tuple[str, ...]:
    """What an entry connects to, in any client's dialect: ("url", u) or ("command", name, *args)."""
    if not isinstance(value, Mapping):
        return ()
    url = next((value[k] for k in URL_KEYS if isinstance(value.get(k), str)), None)
    if url is not None:
        return ("url", _without_query(url))
    found = command_of(value)
    if found is None:
        return ()
    return ("command", posixpath.basename(found[0]), *map(str, found[1]))


def recognisable(value: Any, provider: Provider) -> bool:
    """An entry projector (or its predecessor) writes for ``provider``."""
    found = endpoint(value)
    bridge = ("command", "projector", *bridge_args(provider.name))
    direct = provider.url is not None and found == ("url", _without_query(provider.url))
    return direct or found[: len(bridge)] == bridge  # any --config after


def reconcile(
    where: str,
    current: Mapping[str, Any] | None,
    desired: Mapping[str, Any],
    owned: Mapping[str, str],
    providers: Mapping[str, Provider],
    force: bool = False,
) -> Decision:
    current = current or {}
    edits: dict[str, Any | None] = {}
    kept: dict[str, str] = {}
    notes: list[str] = []
    states: dict[str, str] = {}
    for name, value in desired.items():
        present = current.get(name)
        if name not in current:
            edits[name], states[name] = value, "add"
        elif present == value:
            states[name] = "in-sync"
        elif name in owned and (entry_hash(present) == owned[name] or force):
            edits[name], states[name] = value, "update"
        elif name in owned:
            notes.append(f'{where}: entry "{name}" was changed by hand since projector wrote it; kept (--force overwrites)')
            kept[name], states[name] = owned[name], "drift"
            continue
        elif recognisable(present, providers[name]) or force:
            edits[name], states[name] = value, "update"
        else:
            notes.append(f'{where}: entry "{name}" was not written by projector; left as it is (rename or remove it to let projector manage it)')
            states[name] = "foreign"
            continue
        kept[name] = entry_hash(value)
    for name, digest in owned.items():
        if name in desired or name not in current:
            continue
        if entry_hash(current[name]) == digest or force:
            edits[name], states[name] = None, "remove"
        else:
            notes.append(f'{where}: entry "{name}" of a removed provider was changed by hand; kept (--force removes it)')
            kept[name], states[name] = digest, "drift"
    return Decision(edits=edits, owned=kept, notes=tuple(notes), states=tuple(sorted(states.items())))


def prune(where: str, current: Mapping[str, Any] | None, providers: Mapping[str, Provider], shadows: str) -> Decision:
    """Project entries that would shadow a provider's global entry: those with a shape projector
    (or its predecessor) wrote are removed; the user's own are left, with a warning."""
    edits: dict[str, Any | None] = {}
    notes: list[str] = []
    states: dict[str, str] = {}
    for name, value in (current or {}).items():
        if name not in providers:
            continue
        if recognisable(value, providers[name]):
            edits[name], states[name] = None, "remove"
        else:
            notes.append(f'{where}: entry "{name}" shadows the global entry in {shadows}; left as it is')
            states[name] = "foreign"
    return Decision(edits=edits, owned={}, notes=tuple(notes), states=tuple(sorted(states.items())))
