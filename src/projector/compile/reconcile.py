"""Which entries of one client file to set, keep or remove (pure).

- An entry projector wrote and nobody changed follows the model: replaced, or removed with its
  provider.
- An entry projector wrote that was changed by hand is drift: reported and kept (``--force``
  overwrites). `projector adopt` makes the hand edit projector's own: kept, and in sync, while
  the model wants the entry it wanted when the edit was adopted.
- A same-name entry projector did not write is the user's. projector takes it over only when it
  is the very entry projector would write, or has a shape only projector or its predecessor
  writes (``recognise``): for a server, the provider's URL narrowed with ``?kbs=``, or
  ``<path>/projector mcp --provider <name>``; for a hook group, one that runs ``projector
  dispatch``. A server entry taken over keeps its original in the ledger (``taken``), and is
  given back as it was, never deleted, when projector lets go of it; the sync says so once.
  One of a shape only projector writes (``Reading.only_projectors``) keeps none: it is
  projector's own, found where a lost or 0.3.0 ledger no longer says so, and goes with its
  provider.
  Anything else is left alone, with a warning (`projector adopt` or `projector import` make it
  projector's, its original kept).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from projector.compile.clients import Reading, without_query
from projector.compile.documents.base import Verbatim
from projector.compile.ledger import entry_hash
from projector.core.invocation import bridge_args
from projector.core.modeltypes import Provider
from projector.core.record import Factory, Record


class Decision(Record):
    """What one file's entries become, and why."""

    edits: dict[str, Any | None]  # name -> new value, or None to remove
    owned: dict[str, str]  # name -> hash of what the file holds for us afterwards
    notes: tuple[str, ...]
    # name -> in-sync | add | update | restyle | remove | give-back | drift | foreign | adopted
    states: tuple[tuple[str, str], ...] = ()
    adopted: dict[str, str] = Factory(dict)  # name -> hash of the entry projector would write, when adopted
    # name -> the user's original of an entry projector manages: {"value": ..., "text": ...}
    # (an entry taken over at this sync has no "text" yet: the engine reads it from the file)
    taken: dict[str, Any] = Factory(dict)


def _unchanged(reading: Reading, present: Any, digest: str) -> bool:
    """The entry is what projector wrote (what its client adds by itself does not count). An
    older ledger hashed the entry as written, keys the client adds included."""
    return digest in (entry_hash(reading.normal(present)), entry_hash(present))


def reconcile(
    where: str,
    current: Mapping[str, Any] | None,
    desired: Mapping[str, Any],
    owned: Mapping[str, str],
    recognise: Callable[[str, Any], bool],
    reading: Reading,
    force: bool = False,
    adopted: Mapping[str, str] | None = None,
    client: str = "CLIENT",
    taken: Mapping[str, Mapping[str, Any]] | None = None,
    keeps_originals: bool = True,
    same_server: Callable[[str, Any, Any], bool] | None = None,
    kept_by: str | None = None,
    named: Callable[[str], str] = lambda name: f'entry "{name}"',
) -> Decision:
    """``recognise(name, entry)``: whether an entry projector did not write has a shape it (or
    its predecessor) writes; ``reading``: how the file's client reads an entry back.
    ``adopted``: entries whose hand edit the user adopted (`projector adopt`), by name, with the
    hash of the entry projector wanted then: kept as they are while it wants the same.
    ``taken``: the originals of entries projector took over (the ledger's); ``keeps_originals``:
    whether an entry taken over now keeps its original (server entries; a hook group that runs
    projector's dispatcher is projector's whoever wrote it). ``same_server(name, before, after)``:
    whether the client reads the same server from both entries: an update of an entry still as
    the user had it (its original taken over) that only respells it is a ``restyle``.
    ``kept_by``: what keeps a hand edit where `projector adopt` cannot (None: it can, a server
    entry; a hook group is changed in the model), so a drift's note names only a way out that
    exists; ``named``: how a note names an entry (a trust entry says what it is)."""
    current = current or {}
    adopted = adopted or {}
    taken = taken or {}
    edits: dict[str, Any | None] = {}
    kept: dict[str, str] = {}
    still_adopted: dict[str, str] = {}
    originals: dict[str, Any] = {}
    notes: list[str] = []
    states: dict[str, str] = {}

    def take(name: str) -> None:
        """An entry that was there before projector's becomes its own, with its original kept:
        the user's, given back at `remove`. Not one of a shape only projector writes (its bridge,
        its ``?kbs=`` URL), found with no ledger to say so (a state folder deleted): keeping
        that as an original would make `remove` give projector's own entry back."""
        if keeps_originals and not reading.only_projectors(current[name]):
            originals[name] = {"value": current[name]}
            notes.append(took_over(name, where))

    for name, value in desired.items():
        present = current.get(name)
        unchanged = name in owned and _unchanged(reading, present, owned[name])
        if name in taken and name in owned:
            originals[name] = taken[name]
        if name not in current:
            edits[name], states[name] = value, "add"
        elif reading.normal(present) == reading.normal(value):
            states[name] = "in-sync"
            if name not in owned:
                take(name)
        elif unchanged and adopted.get(name) == entry_hash(reading.normal(value)) and not force:
            kept[name], still_adopted[name], states[name] = owned[name], adopted[name], "adopted"
            continue
        elif unchanged or (name in owned and force):
            restyle = (name in taken and same_server is not None and reading.normal(present) == reading.normal(taken[name]["value"])
                       and same_server(name, present, value))
            edits[name], states[name] = value, "restyle" if restyle else "update"
        elif name in owned:
            keeps = f"`projector adopt {client} {name}` keeps it for good" if kept_by is None else kept_by
            notes.append(f'{where}: {named(name)} was changed by hand since projector wrote it; kept ({keeps}, --force overwrites)')
            kept[name], states[name] = owned[name], "drift"
            continue
        elif recognise(name, present) or force:
            edits[name], states[name] = value, "update"
            take(name)
        else:
            notes.append(f'{where}: {named(name)} was not written by projector; left as it is (rename or remove it to let projector manage it)')
            states[name] = "foreign"
            continue
        kept[name] = entry_hash(reading.normal(value))
    for name, digest in owned.items():
        if name in desired or name not in current:
            continue
        if name in taken and (_unchanged(reading, current[name], digest) or force):
            edits.update(given_back(name, current[name], taken[name]))
            states[name] = "give-back"
        elif _unchanged(reading, current[name], digest) or force:
            edits[name], states[name] = None, "remove"
        else:
            notes.append(f'{where}: {named(name)} of a removed provider was changed by hand; kept (--force removes it)')
            kept[name], states[name] = digest, "drift"
            if name in taken:
                originals[name] = taken[name]
    return Decision(edits=edits, owned=kept, notes=tuple(notes), states=tuple(sorted(states.items())), adopted=still_adopted,
                    taken={name: original for name, original in originals.items() if name in kept})


def given_back(name: str, present: Any, original: Mapping[str, Any]) -> dict[str, Any]:
    """The edit that puts a taken-over entry back as it was: none while the file holds it still
    (its bytes were never touched), else its own text where it stands (or, gone, beside the
    entry it followed or preceded)."""
    if present == original["value"]:
        return {}
    text = original.get("text")
    if text is None:
        return {name: original["value"]}
    followed_by = original.get("followed_by")
    return {name: Verbatim(original["value"], text, original.get("after"), original.get("before"), original.get("alone"), original.get("member"),
                           original.get("set_off"), tuple(followed_by) if followed_by is not None else None, original.get("gap"))}


def took_over(name: str, where: str) -> str:
    """What a sync says, once, of a user's entry it takes over with its original kept."""
    return f"took over {name} in {where}; `projector remove` gives it back"


def recognisable(value: Any, provider: Provider, readings: tuple[Reading, ...]) -> bool:
    """An entry of a shape only projector or its predecessor writes (``Reading.only_projectors``)
    that is ``provider``'s: its bridge, or its URL narrowed to KBs (``?kbs=``). The plain URL is
    not one: people write it by hand (and teams commit it in a repository's files for those who
    do not run projector)."""
    bridge = ("command", "projector", *bridge_args(provider.name))
    for reading in readings:
        if not reading.only_projectors(value):
            continue
        url = reading.url_of(value)
        if reading.endpoint(value)[: len(bridge)] == bridge or (
                provider.url is not None and url is not None and without_query(url) == without_query(provider.url)):
            return True
    return False


def prune(
    where: str, current: Mapping[str, Any] | None, providers: Mapping[str, Provider], shadows: str, readings: tuple[Reading, ...]
) -> Decision:
    """Project entries that would shadow a provider's global entry: those only projector or its
    predecessor writes (``recognisable``) are removed, and kept in ``taken`` (their value; the
    engine adds their text) so `projector remove` can put them back; the user's own are left,
    with a warning."""
    edits: dict[str, Any | None] = {}
    notes: list[str] = []
    states: dict[str, str] = {}
    originals: dict[str, Any] = {}
    for name, value in (current or {}).items():
        if name not in providers:
            continue
        if recognisable(value, providers[name], readings):
            edits[name], states[name], originals[name] = None, "remove", {"value": value}
        else:
            notes.append(f'{where}: entry "{name}" shadows the global entry in {shadows}; left as it is')
            states[name] = "foreign"
    return Decision(edits=edits, owned={}, notes=tuple(notes), states=tuple(sorted(states.items())), taken=originals)
