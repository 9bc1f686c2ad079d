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
from collections.abc import Callable
from typing import Any

from projector.compile.documents.base import Edits, servers_at
from projector.compile.documents.jsonc import JsonDocument
from projector.core.errors import DocumentError, Problem


class HookGroups:
    def __init__(self, document: Any, ours: Callable[[Any], bool], kept_lists: frozenset[str] = frozenset()):
        """``kept_lists``: the events whose list was there before projector's group (the user's,
        even empty): it stays when projector's group leaves it."""
        if not isinstance(document, JsonDocument):
            raise DocumentError(Problem(getattr(document, "source", ""), None, None, "projector edits hook lists in JSON files only"))
        self.document = document
        self.text = document.text
        self.ours = ours
        self.kept_lists = kept_lists

    def _index(self, document: JsonDocument, key: tuple[str, ...], event: str) -> int | None:
        groups = document.array(key + (event,)) or []
        return next((i for i, group in enumerate(groups) if self.ours(group)), None)

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


def _at(value: dict[str, Any], key: tuple[str, ...]) -> dict[str, Any]:
    """The object at ``key`` in a plain value, made where absent."""
    for step in key:
        value = value.setdefault(step, {})
    return value
