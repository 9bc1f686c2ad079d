"""YAML files, edited by byte spans.

tree-sitter's YAML grammar gives the span of every mapping pair; ruamel.yaml's safe loader
(its C parser) reads the values and names the line and column of an error. An entry is a pair
of a block mapping: set, it replaces the lines of that pair; added, it goes after the last pair
of the mapping, in the file's own indentation and sequence style; removed, its lines go (the
comments after it stay). Nothing is regenerated: a round-trip dumper rewrote 3 of the 7 real
files of the corpus even with nothing changed (README, "How files are edited").

A file with a duplicate key is refused, as the client that reads it refuses it: that client
(serde_yaml) treats it as unreadable, and may then put a default file in its place.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

from projector.compile.documents.base import (
    MAX_DEPTH,
    TOO_DEEP,
    Edits,
    Splice,
    Verbatim,
    array_at,
    check_edit,
    line_start,
    newline_of,
    placed,
    plain,
    servers_at,
    splice,
)
from projector.core.errors import DocumentError, Problem



@cache
def _parser() -> Any:
    import tree_sitter_yaml
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_yaml.language()))


@cache
def _loader() -> Any:
    from ruamel.yaml import YAML

    return YAML(typ="safe")  # duplicate keys are an error, as they are for the clients


class YamlDocument:
    def __init__(self, text: str, *, source: str, strict: bool = True):
        self.text = text
        self.source = source
        self._bytes = text.encode("utf-8")
        self.value: dict[str, Any] = self._load()
        tree = _parser().parse(self._bytes)
        documents = [c for c in tree.root_node.children if c.type == "document"]
        if tree.root_node.has_error or len(documents) > 1:
            what = "several YAML documents in one file" if len(documents) > 1 else "YAML that projector cannot edit by its spans"
            raise DocumentError(Problem(source, None, None, f"{what}; left untouched"))
        self._root = _mapping_of(documents[0]) if documents else None
        if self._root is None and documents and any(c.type != "comment" for c in documents[0].named_children):
            raise DocumentError(Problem(source, 1, 1, "the top of the file is not a block mapping (key: value lines); left untouched"))
        self._newline = newline_of(text)
        self._unit, self._sequence_indent = self._style()

    def _load(self) -> dict[str, Any]:
        from ruamel.yaml.constructor import DuplicateKeyError
        from ruamel.yaml.error import MarkedYAMLError

        from projector.core.yamltext import unreadable

        refused = unreadable(self.text, self.source, MAX_DEPTH, TOO_DEEP)
        if refused is not None:  # before the loader, whose composer recursed into a SIGSEGV
            raise DocumentError(refused)
        try:
            value = _loader().load(self.text)
        except DuplicateKeyError as exc:
            mark = exc.problem_mark
            found = re.search(r'found duplicate key "([^"]*)"', str(exc))
            key = f' "{found.group(1)}"' if found else ""
            what = f"duplicate key{key}: the client refuses such a file (and may replace it with a default); remove one by hand"
            raise DocumentError(Problem(self.source, mark.line + 1, mark.column + 1, what)) from None
        except MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
            raise DocumentError(Problem(self.source, *where, f"not valid YAML: {exc.problem or exc.context}")) from None
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise DocumentError(Problem(self.source, 1, 1, "expected a mapping (key: value lines) at the top of the file"))
        return value

    def servers(self, key: tuple[str, ...]) -> dict[str, Any] | None:
        return servers_at(self.value, key, self.source, "a mapping")

    def key_is_empty(self, key: tuple[str, ...]) -> bool:
        return self.servers(key) == {}

    def source_of(self, key: tuple[str, ...], name: str) -> str | None:
        """The lines of entry ``name`` under ``key`` as the file spells them (None: absent)."""
        mapping = self._mapping_at(key) if self._root is not None else None
        pair = _pair(mapping, name) if mapping is not None else None
        if pair is None:
            return None
        return self._bytes[line_start(self._bytes, pair.start_byte) : self._line_end(_content_end(pair))].decode("utf-8")

    def without_key(self, key: tuple[str, ...]) -> str:
        parent = self._mapping_at(key[:-1])
        pair = _pair(parent, key[-1]) if parent is not None else None
        if pair is None:
            return self.text
        return self._reparsed(self._apply([self._removal(pair)])).text

    # ------------------------------------------------------------------ editing

    def edited(self, key: tuple[str, ...], edits: Edits) -> str:
        return self.edit(key, edits).text

    def edit(self, key: tuple[str, ...], edits: Edits) -> YamlDocument:
        """The document of the edited text (``edited``), as its check parsed it."""
        if not edits:
            return self
        mapping = self._mapping_at(key)
        if mapping is None:  # the key is absent, or an empty {} written on its own line
            document = self._reparsed(self._apply(self._creation(key, {n: v for n, v in edits.items() if v is not None})))
        else:
            document = self._reparsed(self._apply(self._changes(key, mapping, edits)))
        check_edit(self.source, self.value, document.value, key, edits)
        return document

    def _changes(self, key: tuple[str, ...], mapping: Any, edits: Edits) -> list[Splice]:
        pairs = _pairs(mapping)
        indent = pairs[0].start_point.column if pairs else 0
        splices, new = [], {}
        for name, value in edits.items():
            pair = _pair(mapping, name)
            where = placed(value, {_key(p): p for p in pairs}) if pair is None else None
            if where is not None:  # back where it stood, its own lines
                neighbour = _pair(mapping, where[1])
                at = self._line_end(_content_end(neighbour)) if where[0] == "after" else line_start(self._bytes, neighbour.start_byte)
                splices.append(Splice(at, at, value.text.encode("utf-8")))
            elif pair is None:
                if value is not None:
                    new[name] = value
            elif value is None:
                splices.append(self._removal(pair))
            else:
                start, end = line_start(self._bytes, pair.start_byte), self._line_end(_content_end(pair))
                fits = isinstance(value, Verbatim) and _first_column(value.text) == pair.start_point.column  # its old lines are one entry here
                block = value.text.encode("utf-8") if fits else self._block({name: plain(value)}, indent)
                splices.append(Splice(start, end, block if self._bytes[end - 1 : end] == b"\n" else block.rstrip(b"\r\n")))
        removed = sum(1 for n, v in edits.items() if v is None and _pair(mapping, n) is not None)
        if new:
            splices.append(self._after(_content_end(pairs[-1]), self._block(new, indent)))
        elif removed == len(pairs):  # nothing left: an empty mapping, not a null
            colon = next(c for c in _pair(self._mapping_at(key[:-1]), key[-1]).children if c.type == ":")
            splices.append(Splice(colon.end_byte, colon.end_byte, b" {}"))
        return splices

    def _creation(self, key: tuple[str, ...], values: dict[str, Any] | list[Any]) -> list[Splice]:
        """The servers key is absent (or holds an inline ``{}``, or ``[]`` for a list): write it,
        holding ``values``."""
        depth = 0
        while depth < len(key) and self._mapping_at(key[: depth + 1]) is not None:
            depth += 1
        parent = self._mapping_at(key[:depth]) if depth else self._root
        pair = _pair(parent, key[depth]) if parent is not None else None
        nested: Any = values if isinstance(values, list) else dict(values)
        for step in reversed(key[depth + 1 :]):
            nested = {step: nested}
        if pair is not None:  # key: {} (an empty inline mapping) or key: []: the entries replace it
            value = pair.child_by_field_name("value")
            if value is None or value.text.strip() != (b"[]" if isinstance(nested, list) else b"{}"):
                raise DocumentError(Problem(self.source, pair.start_point.row + 1, pair.start_point.column + 1,
                                            f'"{key[depth]}" is written inline; write it as a block (one entry a line) so projector can edit it'))
            colon = next(c for c in pair.children if c.type == ":")
            if isinstance(nested, list):
                dash = pair.start_point.column + self._sequence_indent
                block = b"".join(self._item_block(item, dash) for item in nested)
            else:
                block = self._block(nested, pair.start_point.column + self._unit)
            return [Splice(colon.end_byte, value.end_byte, self._newline.encode() + block.rstrip(b"\r\n"))]
        block = self._block({key[depth]: nested}, _pairs(parent)[0].start_point.column if parent is not None else 0)
        if parent is None:  # an empty file, or comments only
            return [self._after(len(self._bytes), block)]
        return [self._after(_content_end(_pairs(parent)[-1]), block)]

    def _after(self, offset: int, block: bytes) -> Splice:
        """``block`` (whole lines) after the line that holds ``offset``."""
        at = self._line_end(offset) if offset else 0
        if at == len(self._bytes) and self._bytes and not self._bytes.endswith(b"\n"):
            # No final newline: end that line, and keep the file's habit of not ending with one.
            return Splice(at, at, self._newline.encode() + block.rstrip(b"\r\n"))
        return Splice(at, at, block)

    def _removal(self, pair: Any) -> Splice:
        start, end = line_start(self._bytes, pair.start_byte), self._line_end(_content_end(pair))
        nl = self._newline.encode()
        if end == len(self._bytes) and not self._bytes.endswith(b"\n") and self._bytes[:start].endswith(nl):
            start -= len(nl)  # the file had no final newline: keep it so
        return Splice(start, end, b"")

    def _reparsed(self, text: str) -> YamlDocument:
        return YamlDocument(text, source=self.source)

    def _apply(self, splices: list[Splice]) -> str:
        return splice(self._bytes, splices).decode("utf-8")

    def _line_end(self, offset: int) -> int:
        newline = self._bytes.find(b"\n", offset)
        return len(self._bytes) if newline < 0 else newline + 1

    def _mapping_at(self, key: tuple[str, ...]) -> Any:
        node = self._root
        for step in key:
            pair = _pair(node, step) if node is not None else None
            value = pair.child_by_field_name("value") if pair is not None else None
            node = _mapping_of(value) if value is not None else None
        return node

    # ------------------------------------------------------------------ lists of named tables (namedlist.py)

    def array(self, key: tuple[str, ...]) -> list[Any] | None:
        """The list at ``key``; None when absent (or empty: ``key:`` alone); DocumentError when
        something else is there."""
        return array_at(self.value, key, self.source, null_is_absent=True)

    def with_element(self, key: tuple[str, ...], index: int | None, value: Any) -> YamlDocument:
        """The document with item ``index`` of the list at ``key`` replaced by ``value``, or
        ``value`` added after its last item (``index`` None; the list is made when absent)."""
        pair, sequence = self._sequence_at(key)
        empty = pair.child_by_field_name("value") if pair is not None and sequence is None else None
        if isinstance(value, Verbatim) and empty is not None and empty.text.strip() == b"[]" and _first_column(value.text) >= pair.start_point.column:
            colon = next(c for c in pair.children if c.type == ":")  # its list emptied: back to the item it held, its own lines
            return self._reparsed(self._apply([Splice(colon.end_byte, empty.end_byte, self._newline.encode() + value.text.rstrip("\r\n").encode("utf-8"))]))
        if sequence is None:
            return self._reparsed(self._apply(self._creation(key, [plain(value)])))
        items = _items(sequence)
        dash = items[0].start_point.column
        fits = isinstance(value, Verbatim) and _first_column(value.text) == dash  # its old lines make one item here
        block = value.text.encode("utf-8") if fits else self._item_block(plain(value), dash)
        if index is None:
            return self._reparsed(self._apply([self._after(_content_end(items[-1]), block)]))
        item = items[index]
        start, end = line_start(self._bytes, item.start_byte), self._line_end(_content_end(item))
        return self._reparsed(self._apply([Splice(start, end, block if self._bytes[end - 1 : end] == b"\n" else block.rstrip(b"\r\n"))]))

    def element_beside(self, key: tuple[str, ...], index: int, side: str, value: Verbatim) -> YamlDocument | None:
        """``value``'s lines put back just ``side`` ("after", "before") item ``index`` of the
        block list at ``key`` (None: where they would not fit: another indentation, no final
        newline)."""
        sequence = self._sequence_at(key)[1]
        items = _items(sequence) if sequence is not None else []
        if not items or _first_column(value.text) != items[0].start_point.column or not value.text.endswith("\n"):
            return None
        item = items[index]
        at = self._line_end(_content_end(item)) if side == "after" else line_start(self._bytes, item.start_byte)
        if at == len(self._bytes) and not self._bytes.endswith(b"\n"):
            return None
        return self._reparsed(self._apply([Splice(at, at, value.text.encode("utf-8"))]))

    def element_source(self, key: tuple[str, ...], index: int) -> str | None:
        """The lines of item ``index`` of the block list at ``key``, as the file spells them."""
        sequence = self._sequence_at(key)[1]
        if sequence is None:
            return None
        item = _items(sequence)[index]
        return self._bytes[line_start(self._bytes, item.start_byte) : self._line_end(_content_end(item))].decode("utf-8")

    def without_element(self, key: tuple[str, ...], index: int) -> YamlDocument:
        pair, sequence = self._sequence_at(key)
        items = _items(sequence)
        if len(items) == 1:  # nothing left: an empty list, not a null
            colon = next(c for c in pair.children if c.type == ":")
            return self._reparsed(self._apply([Splice(colon.end_byte, _content_end(items[0]), b" []")]))
        return self._reparsed(self._apply([self._removal(items[index])]))

    def _sequence_at(self, key: tuple[str, ...]) -> tuple[Any, Any]:
        """The pair of ``key`` and the block sequence it holds (None: absent, or not a block)."""
        parent = self._mapping_at(key[:-1])
        pair = _pair(parent, key[-1]) if parent is not None else None
        value = pair.child_by_field_name("value") if pair is not None else None
        inner = next((c for c in value.named_children if c.type != "comment"), None) if value is not None else None
        return pair, inner if value is not None and value.type == "block_node" and inner is not None and inner.type == "block_sequence" else None

    def _item_block(self, value: dict[str, Any], dash: int) -> bytes:
        nl = self._newline
        return "".join(line + nl for line in self._item_lines(value, dash)).encode("utf-8")

    def _item_lines(self, value: Any, dash: int) -> list[str]:
        """A sequence item whose dash is at column ``dash``: a mapping's keys line up after "- "."""
        if not isinstance(value, dict) or not value:
            return [" " * dash + "- " + _scalar(value)]
        lines = [line for k, v in value.items() for line in self._lines(k, v, dash + 2)]
        return [" " * dash + "- " + lines[0][dash + 2 :]] + lines[1:]

    # ------------------------------------------------------------------ rendering

    def _style(self) -> tuple[int, int]:
        """The file's indentation unit, and how far a block sequence sits in from its key (0: at
        the key's own column, ``args:`` then ``- x``, as serde_yaml and PyYAML write it)."""
        unit, sequence = 2, 0
        stack = [self._root] if self._root is not None else []
        found_unit = found_sequence = False
        while stack and not (found_unit and found_sequence):
            node = stack.pop()
            for pair in _pairs(node):
                value = pair.child_by_field_name("value")
                inner = value.named_children[0] if value is not None and value.named_children else None
                if inner is None or value.type != "block_node":
                    continue
                offset = inner.start_point.column - pair.start_point.column
                if inner.type == "block_mapping" and not found_unit and offset > 0:
                    unit, found_unit = offset, True
                elif inner.type == "block_sequence" and not found_sequence:
                    sequence, found_sequence = offset, True
                if inner.type == "block_mapping":
                    stack.append(inner)
        return unit, sequence

    def _block(self, values: dict[str, Any], indent: int) -> bytes:
        lines: list[str] = []
        for name, value in values.items():
            lines += value.text.rstrip("\r\n").split(self._newline) if isinstance(value, Verbatim) else self._lines(name, value, indent)
        nl = self._newline
        return "".join(line + nl for line in lines).encode("utf-8")

    def _lines(self, name: str, value: Any, indent: int) -> list[str]:
        if isinstance(value, Verbatim):  # under a key made anew: its old lines' indentation may not fit
            value = value.value
        head = " " * indent + _scalar(name) + ":"
        if isinstance(value, dict) and value:
            return [head] + [line for k, v in value.items() for line in self._lines(k, v, indent + self._unit)]
        if isinstance(value, list) and value:
            return [head] + [line for item in value for line in self._item_lines(item, indent + self._sequence_indent)]
        return [f"{head} {_scalar(value)}"]


def _scalar(value: Any) -> str:
    """A value on one line: plain where YAML reads it back as the same string, else JSON (which
    YAML reads as a double-quoted scalar, or a flow collection)."""
    if isinstance(value, str):
        if value == "":
            return "''"
        if _plain(value):
            return value
    return json.dumps(value, ensure_ascii=False).translate(_BREAKS)


# Line breaks to a YAML 1.1 reader (serde_yaml, libyaml), even inside double quotes, where they
# would be folded into a space: escaped.
_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


_YAML11_WORDS = {"y", "n", "yes", "no", "on", "off"}  # booleans to YAML 1.1 readers, strings to 1.2 ones


def _plain(text: str) -> bool:
    """Whether ``text`` reads back as itself written bare in a block, to any YAML reader (a URL
    does; "yes", "1", "a: b" or "- x" do not; nor does text YAML cannot read bare, such as a
    carriage return after a colon)."""
    from ruamel.yaml.error import YAMLError

    if not (
        text == text.strip()
        and text.isprintable()  # a tab, a carriage return, a line separator: quoted
        and text.lower() not in _YAML11_WORDS
        and "\n" not in text
        and ": " not in text
        and " #" not in text
        and not text.endswith(":")
        and text[0] not in "?:,[]{}#&*!|>'\"%@`"
    ):
        return False
    try:
        return _loader().load(text) == text
    except YAMLError:
        return False


def _mapping_of(node: Any) -> Any:
    """The block mapping a (document or value) node holds, or None."""
    while node is not None and node.type in ("document", "block_node"):
        node = next((c for c in node.named_children if c.type != "comment"), None)
    return node if node is not None and node.type == "block_mapping" else None


def _first_column(lines: str) -> int:
    """Where the first of an entry's or item's lines starts (its key, or its dash)."""
    return len(lines) - len(lines.lstrip(" "))


def _items(sequence: Any) -> list[Any]:
    return [c for c in sequence.children if c.type == "block_sequence_item"]


def _pairs(mapping: Any) -> list[Any]:
    return [c for c in mapping.children if c.type == "block_mapping_pair"]


def _pair(mapping: Any, name: str) -> Any:
    return next((p for p in reversed(_pairs(mapping)) if _key(p) == name), None)


def _key(pair: Any) -> Any:
    node = pair.child_by_field_name("key")
    if node is None:
        return None
    text = node.text.decode("utf-8")
    return text.strip() if node.named_children and node.named_children[0].type == "plain_scalar" else _loader().load(text)


def _content_end(node: Any) -> int:
    """Where a node's own content ends: comments after it (inside its span) are not its own."""
    children = [c for c in node.children if c.type != "comment"]
    return _content_end(children[-1]) if children else node.end_byte
