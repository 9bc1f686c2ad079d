"""Servers kept as a list of named tables, seen as the name -> entry map every other client has.

A servers key ending in ``[FIELD]`` (core.keys) names a list whose items are tables named by
their field FIELD: a YAML ``mcpServers:`` sequence of ``- name: x`` items, a TOML array of
``[[mcp_servers]]`` tables.
Through this view an entry is the item itself (its name field included, as the client's
template writes it), found by that name. An edit replaces the item where it stands, appends one
at the end of the list (made when absent), or removes it; the format's document does each of
those on its own bytes (``array``, ``with_element``, ``without_element``), so every other byte
stays as it was. The result is parsed again and must equal the list with exactly the intended
change, or nothing is written. Every other key path goes to the document unchanged.
"""

from __future__ import annotations

from typing import Any

from projector.compile.documents.base import Edits, Verbatim, placed, plain
from projector.core.errors import DocumentError, Problem
from projector.core.keys import named_entries, split


class NamedLists:
    def __init__(self, document: Any):
        self.document = document
        self.text = document.text

    def __getattr__(self, name: str) -> Any:  # what else the document offers (hook arrays, ...)
        return getattr(self.document, name)

    def servers(self, key: tuple[str, ...]) -> dict[str, Any] | None:
        container, field = split(key)
        if field is None:
            return self.document.servers(key)
        return self._entries(self.document, container, field)

    def source_of(self, key: tuple[str, ...], name: str) -> str | None:
        """Entry ``name``'s text as the file spells it: for a list, its item (a TOML item with
        its sub-tables and the comments among them), what a Verbatim edit puts back."""
        return self._of_entry(key, name, "source_of", "element_source")

    def set_off(self, key: tuple[str, ...], name: str) -> bool | None:
        """Whether a blank line sets entry ``name`` off from what comes before it (TOML: a map's
        entry, or a ``[[key]]`` table); None where the format has no such notion."""
        return self._of_entry(key, name, "set_off", "element_set_off")

    def followed_by(self, key: tuple[str, ...], name: str) -> list[str] | None:
        """The header of the table after entry ``name`` (TOML), where it goes back when nothing
        of its key is left; None where the format has no such notion."""
        return self._of_entry(key, name, "followed_by", "element_followed_by")

    def gap_after(self, key: tuple[str, ...], name: str) -> str | None:
        """The lines between entry ``name`` and the table after it (TOML)."""
        return self._of_entry(key, name, "gap_after", "element_gap_after")

    def _of_entry(self, key: tuple[str, ...], name: str, of_map: str, of_item: str) -> Any:
        """What the document's ``of_map(key, name)`` says of a map's entry, or its
        ``of_item(container, index)`` of a list's item (None: the format has no such method)."""
        container, field = split(key)
        if field is None:
            own = getattr(self.document, of_map, None)
            return own(key, name) if own is not None else None
        index = self._index(self.document.array(container) or [], field, name)
        own = getattr(self.document, of_item, None)
        return own(container, index) if own is not None and index is not None else None

    def key_is_empty(self, key: tuple[str, ...]) -> bool:
        container, field = split(key)
        if field is None:
            return self.document.key_is_empty(key)
        return self.document.array(container) == []

    def without_key(self, key: tuple[str, ...]) -> str:
        return self.document.without_key(split(key)[0])

    def edited(self, key: tuple[str, ...], edits: Edits) -> str:
        return self.edit(key, edits).text

    def edit(self, key: tuple[str, ...], edits: Edits) -> NamedLists:
        """The edited document, as its check parsed it: what ``parse`` makes of ``edited``'s text."""
        container, field = split(key)
        if field is None:
            return NamedLists(self.document.edit(key, edits))
        if not edits:
            return self
        before = self.document.array(container) or []
        self._refuse_twice_named(container, field, before, edits)
        document = self.document
        expected = list(before)
        for name in sorted((n for n, v in edits.items() if v is None), key=lambda n: -self._index(expected, field, n, -1)):
            index = self._index(expected, field, name)
            if index is not None:
                document = document.without_element(container, index)
                del expected[index]
        for name, value in ((n, v) for n, v in edits.items() if v is not None):
            item = {field: name, **{k: v for k, v in plain(value).items() if k != field}}
            index = self._index(expected, field, name)
            spot = placed(value, named_entries(expected, field)) if index is None else None
            if spot is not None:  # an entry given back, beside the one it followed or preceded
                at = self._index(expected, field, spot[1])
                beside = document.element_beside(container, at, spot[0], value)
                if beside is not None:
                    document = beside
                    expected.insert(at + (spot[0] == "after"), item)
                    continue
            document = document.with_element(container, index, value if isinstance(value, Verbatim) else item)
            if index is None:
                expected.append(item)
            else:
                expected[index] = item
        self._check(document, container, expected)
        return NamedLists(document)

    # ------------------------------------------------------------------ helpers

    def _entries(self, document: Any, container: tuple[str, ...], field: str) -> dict[str, Any] | None:
        items = document.array(container)
        if items is None:
            return None
        return named_entries(items, field) or {}

    @staticmethod
    def _index(items: list[Any], field: str, name: str, missing: Any = None) -> Any:
        """Where the item named ``name`` is (the last of that name, the one clients keep)."""
        found = [i for i, item in enumerate(items) if isinstance(item, dict) and item.get(field) == name]
        return found[-1] if found else missing

    def _refuse_twice_named(self, container: tuple[str, ...], field: str, items: list[Any], edits: Edits) -> None:
        """An entry to edit that the list holds twice: which one is meant is not ours to guess."""
        names = [item.get(field) for item in items if isinstance(item, dict)]
        twice = sorted(n for n in edits if names.count(n) > 1)
        if twice:
            where = ".".join(container)
            raise DocumentError(Problem(self.document.source, None, None, f'entry "{twice[0]}" is in the {where} list twice and '
                                        f"clients read only one of them: remove one"))

    def _check(self, document: Any, container: tuple[str, ...], expected: list[Any]) -> None:
        """The edited file must hold the list with exactly the edits applied, and nothing else changed."""
        after = document.value
        before = dict(self.document.value)
        node, parents = before, [before]
        for step in container[:-1]:
            node[step] = dict(node.get(step) or {})
            node = node[step]
            parents.append(node)
        if expected or _lacks(after, container) is False:
            node[container[-1]] = expected
        else:  # the last item gone: a TOML array of tables leaves no key behind
            node.pop(container[-1], None)
        if after != before:
            raise DocumentError(Problem(self.document.source, None, None, "an edit would have changed more than the entries projector "
                                        "meant to change, so nothing was written (please report this file's shape)"))


def _lacks(value: Any, key: tuple[str, ...]) -> bool:
    for step in key:
        if not isinstance(value, dict) or step not in value:
            return True
        value = value[step]
    return False
