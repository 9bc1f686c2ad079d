"""A client's hook lists seen as entries: one per event, projector's group in that event's list.

Hooks live as ``{EVENT: [group, ...]}`` under a key, the user's groups and projector's side by
side. This view shows, per event, the first group that runs projector's dispatcher (what
``ours`` recognises), so the compiler reconciles hook groups as it does servers: an edit
replaces that group where it stands, adds one at the end of the event's list (made when
absent), or removes it (and the event's list with it when nothing else is left in it, unless the
list was there before projector's group). Every
other byte stays; the result is parsed again and must equal the intended value.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from projector.compile.documents.base import Edits, servers_at
from projector.compile.documents.jsonc import JsonDocument
from projector.core.errors import DocumentError, Problem


class HookGroups:
    def __init__(self, document: Any, ours: Callable[[Any], bool], kept_lists: frozenset[str] = frozenset(),
                 placed: Mapping[str, int] | None = None):
        """``kept_lists``: the events whose list was there before projector's group (the user's,
        even empty): it stays when projector's group leaves it. ``placed``: event -> the index
        of projector's group where none runs the dispatcher (``placed_by``)."""
        if not isinstance(document, JsonDocument):
            raise DocumentError(Problem(getattr(document, "source", ""), None, None, "projector edits hook lists in JSON files only"))
        self.document = document
        self.text = document.text
        self.ours = ours
        self.kept_lists = kept_lists
        self.placed = placed or {}

    def _index(self, document: JsonDocument, key: tuple[str, ...], event: str) -> int | None:
        """Where projector's group stands in ``event``'s list (each event is edited once, so a
        placed index holds in the document as the edits before it leave it)."""
        return index_of(document.array(key + (event,)) or [], self.ours, self.placed.get(event))

    def servers(self, key: tuple[str, ...]) -> dict[str, Any] | None:
        events = servers_at(self.document.value, key, self.document.source, "an object of event lists")
        if events is None:
            return None
        found = {}
        for event in events:
            index = self._index(self.document, key, event)
            if index is not None:
                found[event] = events[event][index]
        return found

    def edited(self, key: tuple[str, ...], edits: Edits) -> str:
        document = self.document
        expected = copy.deepcopy(document.value)
        for event, value in sorted(edits.items()):
            index = self._index(document, key, event)
            lists = _at(expected, key)
            if value is not None:
                document = document.with_element(key + (event,), index, value)
                groups = lists.setdefault(event, [])
                if index is None:
                    groups.append(value)
                else:
                    groups[index] = value
            elif index is not None:
                if len(document.array(key + (event,)) or ()) == 1 and event not in self.kept_lists:
                    document = JsonDocument(document.without_key(key + (event,)), source=document.source, strict=document.strict)
                    del lists[event]
                else:
                    document = document.without_element(key + (event,), index)
                    del lists[event][index]
        if document.value != expected:
            raise DocumentError(Problem(self.document.source, None, None, "an edit would have changed more than the hook groups projector "
                                        "meant to change, so nothing was written (please report this file's shape)"))
        return document.text

    def key_is_empty(self, key: tuple[str, ...]) -> bool:
        return self.document.key_is_empty(key)

    def without_key(self, key: tuple[str, ...]) -> str:
        return self.document.without_key(key)


def index_of(groups: Sequence[Any], ours: Callable[[Any], bool], placed: int | None = None) -> int | None:
    """Projector's group in an event's list: the first that runs its dispatcher, else ``placed``."""
    found = next((i for i, group in enumerate(groups) if ours(group)), None)
    return found if found is not None else placed


def placed_by(groups: Sequence[Any], lineup: Sequence[str | None], ours: Callable[[Any], bool], digest: Callable[[Any], str],
              partly: Callable[[Any], bool]) -> int | None:
    """Where projector's group stands in an event's list when none runs its dispatcher (a hand
    edit took it out, or put a handler of the user's beside it). ``lineup``: the list as
    projector left it (each group's ``digest``, None in projector's place). Of the groups that
    are none of those it had beside it, the one that still runs the dispatcher in a handler
    (``partly``), else the one standing in projector's place (as many of those groups before it
    as projector's had). None when that does not tell one group (projector's was taken out, the
    list changed past knowing): the group is not projector's, rather than a group of the user's
    taken for it."""
    if None not in lineup or any(ours(group) for group in groups):
        return None
    beside = Counter(digest for digest in lineup if digest is not None)
    place = lineup.index(None)
    unknown: list[tuple[int, bool]] = []  # (index, whether it stands in projector's place)
    known = 0
    for index, group in enumerate(groups):
        found = digest(group)
        if beside[found] > 0:
            beside[found] -= 1
            known += 1
        else:
            unknown.append((index, known == place))
    for choice in ([index for index, _ in unknown if partly(groups[index])], [index for index, there in unknown if there]):
        if len(choice) == 1:
            return choice[0]
    return None


def _at(value: dict[str, Any], key: tuple[str, ...]) -> dict[str, Any]:
    """The object at ``key`` in a plain value, made where absent."""
    for step in key:
        value = value.setdefault(step, {})
    return value
