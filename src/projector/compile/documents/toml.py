"""TOML files, edited by byte spans.

tree-sitter's TOML grammar gives the span of every table and key; the standard library's
tomllib reads the values and names the line and column of a syntax error; the tables we add are
spelled as tomlkit spells them (``written_table``, held to tomlkit's output by the tests; tomlkit
itself writes what that does not know). An entry we write is one ``[servers.name]`` table, set off from what comes before
by one blank line, so that removing it gives back exactly the bytes that were there.

An entry may also be spelled by the user as sub-tables (``[servers.name.env]``), as a key of a
``[servers]`` table, or as a dotted key; all of its pieces are found and removed together.
"""

from __future__ import annotations

import re
from functools import cache, cached_property
from typing import Any

from projector.compile.documents.base import (
    Edits,
    array_at,
    Splice,
    Verbatim,
    check_edit,
    placed,
    deepest,
    line_start,
    newline_of,
    servers_at,
    splice,
    too_deep,
)
from projector.core.errors import DocumentError, Problem
from projector.core.record import Record


@cache
def _parser() -> Any:
    from tree_sitter import Language, Parser

    return Parser(Language(_grammar("tree_sitter_toml")))


def _grammar(package: str) -> Any:
    """The language of a tree-sitter grammar package, from its compiled ``_binding`` alone:
    tree_sitter_toml's ``__init__`` imports importlib.resources (with tempfile, shutil, lzma and
    random) for highlight queries projector never reads, 4% of a sync."""
    from importlib.machinery import PathFinder

    found = PathFinder.find_spec(package)
    spec = PathFinder.find_spec(f"{package}._binding", found.submodule_search_locations) if found else None
    if spec is None or spec.loader is None:
        return __import__(package).language()
    binding = spec.loader.create_module(spec)
    spec.loader.exec_module(binding)
    return binding.language()


class _Piece(Record):
    """Bytes of the file that define (part of) one entry."""

    start: int  # start of its first line
    end: int  # end of its last own line, newline included
    is_table: bool


class TomlDocument:
    def __init__(self, text: str, *, source: str, strict: bool = True):
        import tomllib  # here: it imports typing, datetime and string, which a sync without a TOML client does without

        self.text = text
        self.source = source
        self._bytes = text.encode("utf-8")
        try:
            self.value: dict[str, Any] = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise DocumentError(_decode_problem(source, str(exc), text)) from None
        except RecursionError:  # tomllib recurses once per nested array or inline table
            raise too_deep(source, deepest(_parser().parse(self._bytes).root_node, ("array", "inline_table")) or (0, 0)) from None
        self._newline = newline_of(text)

    @cached_property
    def _tree(self) -> Any:
        """The spans of tables and keys: parsed when the file is first edited."""
        return _parser().parse(self._bytes)

    def servers(self, key: tuple[str, ...]) -> dict[str, Any] | None:
        return servers_at(self.value, key, self.source, "a table")

    def key_is_empty(self, key: tuple[str, ...]) -> bool:
        return self.servers(key) == {}

    def without_key(self, key: tuple[str, ...]) -> str:
        return self._reparsed(self._apply(self._removals(self._pieces(key)))).text

    def set_off(self, key: tuple[str, ...], name: str) -> bool | None:
        """Whether a blank line sets entry ``name``'s tables off from what comes before them (the
        line a removal takes with them); None when they do not stand together."""
        span = self._together(key, name)
        if span is None:
            return None
        nl = self._newline.encode()
        return self._bytes[: span[0]].endswith(nl + nl)

    def source_of(self, key: tuple[str, ...], name: str) -> str | None:
        """The text of entry ``name``'s tables under ``key`` as the file spells them, when they
        stand together (None: absent, or spread over the file)."""
        span = self._together(key, name)
        return self._bytes[span[0] : span[1]].decode("utf-8") if span is not None else None

    def followed_by(self, key: tuple[str, ...], name: str) -> list[str] | None:
        """The header of the first table after entry ``name``'s tables (None: none, or they do
        not stand together)."""
        span = self._together(key, name)
        table = self._table_after(span[1]) if span is not None else None
        return _key_path(table.children[1]) if table is not None else None

    def gap_after(self, key: tuple[str, ...], name: str) -> str | None:
        """The lines between entry ``name``'s tables and the first table after them."""
        span = self._together(key, name)
        return self._gap(span[1]) if span is not None else None

    def _table_after(self, offset: int) -> Any:
        """The first table (or ``[[table]]``) that starts at or after ``offset``; None: none."""
        return next((node for node in self._tree.root_node.children
                     if node.type in ("table", "table_array_element") and node.start_byte >= offset), None)

    def _gap(self, end: int) -> str | None:
        table = self._table_after(end)
        return self._bytes[end : line_start(self._bytes, table.start_byte)].decode("utf-8") if table is not None else None

    def _before_table(self, value: Verbatim) -> Splice | None:
        """``value``'s text put back before the table that followed it (``followed_by``), spaced
        as it was. None: no such table."""
        header = list(value.followed_by or ())
        node = next((n for n in self._tree.root_node.children
                     if n.type in ("table", "table_array_element") and _key_path(n.children[1]) == header), None)
        if node is None:
            return None
        table = line_start(self._bytes, node.start_byte)
        exact = self._across_gap(table, value)
        if exact is not None:
            return exact
        at = table  # what stood between them changed: before the comments over that table
        while at > 0 and self._bytes[line_start(self._bytes, at - 1) : at].lstrip().startswith(b"#"):
            at = line_start(self._bytes, at - 1)
        nl, text = self._newline.encode(), value.text.encode("utf-8")
        now_set_off = self._bytes[:at].endswith(nl + nl)
        if value.set_off:
            return Splice(at, at, text + nl if now_set_off else nl + text)
        return Splice(at - len(nl), at - len(nl), text) if now_set_off else Splice(at, at, text)

    def _across_gap(self, table: int, value: Verbatim) -> Splice | None:
        """``value``'s text put back before the table starting at ``table`` that followed it, when
        the lines that stood between them (``gap``) stand before that table still: its removal
        took the blank line before it, if any (at the top of the file: the one after it)."""
        if value.gap is None:
            return None
        nl, text, gap = self._newline.encode(), value.text.encode("utf-8"), value.gap.encode("utf-8")
        at = table - len(gap)
        if at >= 0 and self._bytes[at:table] == gap and (at == 0 or self._bytes[at - 1 : at] == b"\n"):
            return Splice(at, at, nl + text if value.set_off else text)
        if gap.startswith(nl) and self._bytes[:table] == gap[len(nl) :]:
            return Splice(0, 0, text + nl)
        return None

    def with_keys(self, key: tuple[str, ...], name: str, keys: dict[str, Any]) -> str | None:
        """Entry ``name``'s table under ``key`` as the file spells it (``source_of``), with each
        of ``keys`` written anew on its own line where it stands, added after the table's last
        key, or (None) taken out with its line, every other byte as it was: what an edit of some
        keys of a table that holds others (a client's) splices in as a Verbatim. None when the
        entry is not one table of its own (sub-tables, or one of ``keys`` spelled dotted)."""
        span = self._together(key, name)
        tables = [n for n in self._tree.root_node.children if n.type == "table" and _key_path(n.children[1]) == [*key, name]]
        if span is None or len(tables) != 1 or len(self._pieces(key + (name,))) != 1:
            return None
        pairs = {tuple(_key_path(c.children[0])): c for c in tables[0].children if c.type == "pair"}
        if any(len(path) > 1 and path[0] in keys for path in pairs):
            return None
        splices, added, nl = [], b"", self._newline.encode()
        for field, value in keys.items():
            pair = pairs.get((field,))
            try:
                line = b"" if value is None else f"{_key(field)} = {_value(value)}".encode("utf-8") + nl
            except _Unwritten:
                return None
            if pair is not None:
                splices.append(Splice(line_start(self._bytes, pair.start_byte) - span[0], self._line_end(pair.end_byte) - span[0], line))
            else:
                added += line
        table = self._bytes[span[0] : span[1]]
        own = self._own_end(tables[0]) - span[0]
        if added and not table[:own].endswith(b"\n"):  # its last line had no newline (the end of the file)
            added = nl + added[: -len(nl)]
        return splice(table, [*splices, Splice(own, own, added)] if added else splices).decode("utf-8")

    def _together(self, key: tuple[str, ...], name: str) -> tuple[int, int] | None:
        """Where entry ``name``'s tables under ``key`` stand, when they stand together as one block."""
        blocks = self._merged(self._pieces(key + (name,)), within_entry=True)
        if len(blocks) != 1 or not blocks[0][2]:
            return None
        return blocks[0][0], blocks[0][1]

    # ------------------------------------------------------------------ editing

    def edited(self, key: tuple[str, ...], edits: Edits) -> str:
        return self.edit(key, edits).text

    def edit(self, key: tuple[str, ...], edits: Edits) -> TomlDocument:
        """The document of the edited text (``edited``), as its check parsed it."""
        if not edits:
            return self
        self._refuse_inline(key)
        splices: list[Splice] = []
        doomed: list[_Piece] = []  # removed together, so neighbours share one blank-line rule
        new: dict[str, Any] = {}
        for name, value in edits.items():
            pieces = self._pieces(key + (name,))
            blocks = self._merged(pieces, within_entry=True)
            if value is None:
                doomed += self._whole(pieces)
            elif len(blocks) == 1 and all(p.is_table for p in pieces):  # rewrite its tables where they stand
                splices.append(Splice(blocks[0][0], blocks[0][1], self._table(key, name, value)))
            elif pieces:  # spelled as keys or in several places: take them out, add one table
                doomed += self._whole(pieces)
                new[name] = value
            elif isinstance(value, Verbatim) and not self.servers(key) and (before := self._before_table(value)) is not None:
                splices.append(before)  # the only one, back before the table that followed it
            elif (spot := placed(value, self.servers(key))) is not None:  # back where it stood, its own text
                side, neighbour = spot
                around = self._merged(self._pieces(key + (neighbour,)), within_entry=True)
                if side == "after":
                    splices.append(self._after_block(around[-1][1], value))
                else:
                    at = around[0][0]
                    splices.append(self._across_gap(at, value) or Splice(at, at, value.text.encode("utf-8") + self._newline.encode()))
            else:
                new[name] = value
        splices += self._removals(doomed)
        if new:
            splices.append(self._insertion(key, new))
        document = self._reparsed(self._apply(splices))
        check_edit(self.source, self.value, document.value, key, edits)
        return document

    def _reparsed(self, text: str) -> TomlDocument:
        return TomlDocument(text, source=self.source)

    def _apply(self, splices: list[Splice]) -> str:
        return splice(self._bytes, splices).decode("utf-8")

    def _table(self, key: tuple[str, ...], name: str, value: dict[str, Any] | Verbatim, array: bool = False) -> bytes:
        """``[key.name]`` (``array``: ``[[key.name]]``, one entry of a list of named tables) in the file's line ends."""
        if isinstance(value, Verbatim):
            return value.text.encode("utf-8")
        text = written_table(key, name, value, array=array)
        return (text if text is not None else tomlkit_table(key, name, value, array=array)).replace("\n", self._newline).encode("utf-8")
    def _insertion(self, key: tuple[str, ...], values: dict[str, Any]) -> Splice:
        """New tables go after the last table of ``key`` (or at the end), each after one blank
        line (an entry given back: only where one set it off before)."""
        tables = [p for p in self._pieces(key) if p.is_table]
        at = max((p.end for p in tables), default=len(self._bytes))
        nl = self._newline.encode()
        (first, value), *rest = values.items()
        block = self._table(key, first, value) + b"".join(_blank_before(v, nl) + self._table(key, n, v) for n, v in rest)
        return self._insertion_of(block, at, _blank_before(value, nl))

    def _removals(self, pieces: list[_Piece]) -> list[Splice]:
        source = self._bytes
        nl = self._newline.encode()
        splices = []
        for start, end, is_table in self._merged(pieces):
            if is_table and source[:start].endswith(nl + nl):
                start -= len(nl)  # the blank line that set the table off goes with it
            if end == len(source) and not source[start:end].endswith(b"\n") and source[:start].endswith(nl):
                start -= len(nl)  # the file had no final newline: keep it so
            if start == 0 and source[end:].startswith(nl):
                end += len(nl)  # at the top of the file: the blank line after it goes instead
            splices.append(Splice(start, end, b""))
        return splices

    def _whole(self, pieces: list[_Piece]) -> list[_Piece]:
        """One entry's pieces, with the comments among its tables: what goes when it goes."""
        return [_Piece(start, end, is_table) for start, end, is_table in self._merged(pieces, within_entry=True)]

    def _merged(self, pieces: list[_Piece], within_entry: bool = False) -> list[tuple[int, int, bool]]:
        """Pieces with nothing but blank lines between them, as one block; ``within_entry``
        (the pieces of one entry): comment lines too, which then belong to the entry."""
        blocks: list[tuple[int, int, bool]] = []
        for piece in sorted(pieces, key=lambda p: p.start):
            between = self._bytes[blocks[-1][1] : piece.start] if blocks else None
            if between is not None and (not between.strip() or (within_entry and _comment_lines(between))):
                start, _, is_table = blocks[-1]
                blocks[-1] = (start, max(piece.end, blocks[-1][1]), is_table or piece.is_table)
            else:
                blocks.append((piece.start, piece.end, piece.is_table))
        return blocks

    # ------------------------------------------------------------------ arrays of tables (namedlist.py)

    def array(self, key: tuple[str, ...]) -> list[Any] | None:
        """The array at ``key``; None when absent; DocumentError when something else is there."""
        return array_at(self.value, key, self.source)

    def with_element(self, key: tuple[str, ...], index: int | None, value: dict[str, Any]) -> TomlDocument:
        """The document with table ``index`` of the array of tables at ``key`` replaced by
        ``value``, or ``value`` added as a ``[[key]]`` table after the last one (``index`` None),
        set off by one blank line, so that removing it gives back exactly the bytes there were.
        An array written inline (``key = [...]``, as a client writes an empty list: ``key = []``)
        takes ``value`` as one more inline table in it instead."""
        inline = self._inline_array(key)
        if inline is not None:
            text = value.text.encode("utf-8") if isinstance(value, Verbatim) else _inline_text(value)
            return self._reparsed(self._apply([_InlineArray(inline, self._bytes, self._newline).put(index, text)]))
        table = self._table(key[:-1], key[-1], value, array=True)
        elements = self._elements(key)
        if index is None:
            before = self._before_table(value) if isinstance(value, Verbatim) and not elements else None
            if before is not None:  # the only one, back before the table that followed it
                return self._reparsed(self._apply([before]))
            if not elements:
                return self._reparsed(self._apply([self._insertion_of(table, len(self._bytes))]))
            blank = _blank_before(value, self._newline.encode())
            return self._reparsed(self._apply([self._insertion_of(table, elements[-1][-1].end, blank)]))
        blocks = self._merged(elements[index], within_entry=True)
        if len(blocks) == 1:  # its tables, and the comments among them, are its text: all of it replaced
            return self._reparsed(self._apply([Splice(blocks[0][0], blocks[0][1], table)]))
        first, *rest = elements[index]
        return self._reparsed(self._apply([Splice(first.start, first.end, table), *self._removals(rest)]))

    def element_beside(self, key: tuple[str, ...], index: int, side: str, value: Verbatim) -> TomlDocument | None:
        """``value``'s text put back just ``side`` ("after", "before") the ``[[key]]`` table
        ``index`` with its sub-tables, as a map's entry goes back beside its neighbour (None:
        an inline array, or that table spread over the file)."""
        if self._inline_array(key) is not None:
            return None
        blocks = self._merged(self._elements(key)[index], within_entry=True)
        if len(blocks) != 1:
            return None
        start, end, _ = blocks[0]
        if side == "after":
            return self._reparsed(self._apply([self._after_block(end, value)]))
        exact = self._across_gap(start, value)
        return self._reparsed(self._apply([exact or Splice(start, start, self._before(key, index, value))]))

    def _after_block(self, end: int, value: Verbatim) -> Splice:
        """``value``'s text put back after a block that ends at ``end``, set off as it was; the
        file's last line, where it has no newline, gets one first (and the text none)."""
        nl = self._newline.encode()
        text = _blank_before(value, nl) + value.text.encode("utf-8")
        if end == len(self._bytes) and self._bytes and not self._bytes.endswith(b"\n"):
            return Splice(end, end, nl + text.rstrip(b"\r\n"))
        return Splice(end, end, text)

    def _before(self, key: tuple[str, ...], index: int, value: Verbatim) -> bytes:
        """``value``'s text to go just before table ``index`` where the lines that followed it
        are not known (``gap``): its removal took the blank line before it, if any, and left the
        one after it, so a blank line before ``index`` now was after it. Not set off (or not
        known): after it as the list's own tables are."""
        nl, text = self._newline.encode(), value.text.encode("utf-8")
        elements = self._elements(key)
        now_set_off = self._bytes[: elements[index][0].start].endswith(nl + nl)
        if value.set_off:
            return text + nl if now_set_off else nl + text
        habit = any(self._bytes[: e[0].start].endswith(nl + nl) for e in elements[1:])
        return text + nl if habit else text

    def element_followed_by(self, key: tuple[str, ...], index: int) -> list[str] | None:
        """The header of the first table after the ``[[key]]`` table ``index`` and its sub-tables."""
        end = self._element_end(key, index)
        table = self._table_after(end) if end is not None else None
        return _key_path(table.children[1]) if table is not None else None

    def element_gap_after(self, key: tuple[str, ...], index: int) -> str | None:
        """The lines between the ``[[key]]`` table ``index`` (with its sub-tables) and the first table after it."""
        end = self._element_end(key, index)
        return self._gap(end) if end is not None else None

    def _element_end(self, key: tuple[str, ...], index: int) -> int | None:
        if self._inline_array(key) is not None:
            return None
        blocks = self._merged(self._elements(key)[index], within_entry=True)
        return blocks[0][1] if len(blocks) == 1 else None

    def element_set_off(self, key: tuple[str, ...], index: int) -> bool | None:
        """Whether a blank line sets the ``[[key]]`` table ``index`` off from what comes before
        it (None: an item of an inline array)."""
        if self._inline_array(key) is not None:
            return None
        nl = self._newline.encode()
        return self._bytes[: self._elements(key)[index][0].start].endswith(nl + nl)

    def element_source(self, key: tuple[str, ...], index: int) -> str | None:
        """The text of table ``index`` of the array at ``key``: an inline table, or a ``[[key]]``
        table with its sub-tables (``[key.env]``) and the comments among them, when they stand
        together (None: spread over the file)."""
        inline = self._inline_array(key)
        if inline is not None:
            item = _InlineArray(inline, self._bytes, self._newline).items[index]
            return self._bytes[item.start_byte : item.end_byte].decode("utf-8")
        blocks = self._merged(self._elements(key)[index], within_entry=True)
        return self._bytes[blocks[0][0] : blocks[0][1]].decode("utf-8") if len(blocks) == 1 else None

    def without_element(self, key: tuple[str, ...], index: int) -> TomlDocument:
        inline = self._inline_array(key)
        if inline is not None:
            return self._reparsed(self._apply([_InlineArray(inline, self._bytes, self._newline).taken_out(index)]))
        return self._reparsed(self._apply(self._removals(self._whole(self._elements(key)[index]))))

    def _elements(self, key: tuple[str, ...]) -> list[list[_Piece]]:
        """Each ``[[key]]`` table's pieces: its own, then the sub-tables (``[key.env]``) under it."""
        want, elements = list(key), []
        for node in self._tree.root_node.children:
            if node.type not in ("table", "table_array_element"):
                continue
            header = _key_path(node.children[1])
            piece = _Piece(line_start(self._bytes, node.start_byte), self._own_end(node), True)
            if node.type == "table_array_element" and header == want:
                elements.append([piece])
            elif elements and header[: len(want)] == want and len(header) > len(want):
                elements[-1].append(piece)
        return elements

    def _inline_array(self, key: tuple[str, ...]) -> Any:
        """The array node of ``key = [...]`` when the file writes the array at ``key`` inline."""
        for node in self._tree.root_node.children:
            if node.type == "pair":
                prefix, pairs = [], [node]
            elif node.type == "table":
                prefix, pairs = _key_path(node.children[1]), [c for c in node.children if c.type == "pair"]
            else:
                continue
            for pair in pairs:
                if prefix + _key_path(pair.children[0]) == list(key) and pair.children[-1].type == "array":
                    return pair.children[-1]
        return None

    def _insertion_of(self, block: bytes, at: int, blank: bytes | None = None) -> Splice:
        """``block`` (whole lines) at ``at``, after ``blank`` (one blank line unless told)."""
        nl = self._newline.encode()
        blank = nl if blank is None else blank
        if at == len(self._bytes) and self._bytes and not self._bytes.endswith(b"\n"):
            return Splice(at, at, nl + blank + block.rstrip(b"\r\n"))  # keep the file's habit of no final newline
        if at == len(self._bytes) and not self._bytes.strip():
            return Splice(at, at, block)  # nothing to set off from
        return Splice(at, at, blank + block)

    # ------------------------------------------------------------------ finding entries

    def _refuse_inline(self, key: tuple[str, ...]) -> None:
        for node in self._tree.root_node.children:
            if node.type == "pair" and _key_path(node.children[0]) == list(key) and node.children[-1].type == "inline_table":
                line = node.start_point.row + 1
                raise DocumentError(
                    Problem(self.source, line, 1, f"{'.'.join(key)} is one inline table; write it as [{'.'.join(key)}.<name>] tables so projector can edit it")
                )

    def _pieces(self, path: tuple[str, ...]) -> list[_Piece]:
        """Every table and key in the file that defines something at or under ``path``."""
        want = list(path)
        pieces = []
        for node in self._tree.root_node.children:
            if node.type in ("table", "table_array_element"):
                header = _key_path(node.children[1])
                if header[: len(want)] == want:
                    pieces.append(_Piece(line_start(self._bytes, node.start_byte), self._own_end(node), True))
                    continue
                prefix, pairs = header, [c for c in node.children if c.type == "pair"]
            elif node.type == "pair":
                prefix, pairs = [], [node]
            else:
                continue
            for pair in pairs:
                full = prefix + _key_path(pair.children[0])
                if full[: len(want)] == want and len(full) > len(prefix):
                    pieces.append(_Piece(line_start(self._bytes, pair.start_byte), self._line_end(pair.end_byte), False))
        return pieces

    def _own_end(self, table: Any) -> int:
        """End of a table's header and key lines; comments and blank lines after them stay."""
        last = max((c for c in table.children if c.type != "comment"), key=lambda c: c.end_byte)
        return self._line_end(last.end_byte)

    def _line_end(self, offset: int) -> int:
        newline = self._bytes.find(b"\n", offset)
        return len(self._bytes) if newline < 0 else newline + 1


class _InlineArray:
    """Edits of one inline array's items, each undone byte for byte by the other: an item added
    to ``[]`` is taken out as exactly its text, so the array the file had comes back. An item
    joins the array's own layout: after the last one on its line (``, item``), or on a line of
    its own where the items stand one per line."""

    def __init__(self, array: Any, source: bytes, newline: str):
        self.source = source
        self.nl = newline.encode()
        self.children = array.children
        self.items = [c for c in array.children if c.is_named and c.type != "comment"]

    def put(self, index: int | None, text: bytes) -> Splice:
        if index is not None:  # replaced where it stands
            item = self.items[index]
            return Splice(item.start_byte, item.end_byte, text)
        if not self.items:
            closing = self.children[-1].start_byte
            return Splice(closing, closing, text)
        last = self.items[-1]
        after = self._next(last)
        indent = self._indent(last)
        if after is not None and after.type == ",":
            if indent is not None and self._rest_of_line_is_blank(after.end_byte):  # one per line, with a trailing comma
                at = self.source.index(b"\n", after.end_byte) + 1
                return Splice(at, at, indent + text + b"," + self.nl)
            return Splice(after.end_byte, after.end_byte, b" " + text + b",")
        if indent is not None:
            return Splice(last.end_byte, last.end_byte, b"," + self.nl + indent + text)
        return Splice(last.end_byte, last.end_byte, b", " + text)

    def taken_out(self, index: int) -> Splice:
        item = self.items[index]
        after, before = self._next(item), self._previous(item)
        if after is not None and after.type == ",":
            if self._indent(item) is not None and self._rest_of_line_is_blank(after.end_byte):  # its own line goes
                return Splice(line_start(self.source, item.start_byte), self.source.index(b"\n", after.end_byte) + 1, b"")
            if before is not None and before.type == ",":  # ", item," -> ","
                return Splice(before.end_byte, after.end_byte, b"")
            following = self._next(after)
            return Splice(item.start_byte, following.start_byte if following is not None and following.type != "]" else after.end_byte, b"")
        if before is not None and before.type == ",":  # the last item: the comma before it goes with it
            return Splice(before.start_byte, item.end_byte, b"")
        return Splice(item.start_byte, item.end_byte, b"")

    def _next(self, node: Any) -> Any:
        at = self.children.index(node)
        return self.children[at + 1] if at + 1 < len(self.children) else None

    def _previous(self, node: Any) -> Any:
        at = self.children.index(node)
        return self.children[at - 1] if at > 0 else None

    def _indent(self, node: Any) -> bytes | None:
        """The white space before ``node`` on its line, when nothing else comes before it there."""
        start = line_start(self.source, node.start_byte)
        before = self.source[start : node.start_byte]
        return before if not before.strip() else None

    def _rest_of_line_is_blank(self, offset: int) -> bool:
        end = self.source.find(b"\n", offset)
        return end >= 0 and not self.source[offset:end].strip()


def _inline_text(value: dict[str, Any]) -> bytes:
    """An entry as one inline table, spelled as tomlkit spells it."""
    try:
        return _value(value).encode("utf-8")
    except _Unwritten:
        import tomlkit

        return tomlkit.dumps({"v": _inline(value)}).partition("=")[2].strip().encode("utf-8")


def _comment_lines(text: bytes) -> bool:
    """Whether ``text`` (whole lines between two tables) holds only comments and blank lines."""
    return all(not line.strip() or line.lstrip().startswith(b"#") for line in text.splitlines())


def _blank_before(value: Any, nl: bytes) -> bytes:
    """What sets a table off from the one before it: a blank line, but for an entry given back
    that had none there (its ``set_off``)."""
    return b"" if isinstance(value, Verbatim) and value.set_off is False else nl


def _key_path(node: Any) -> list[str]:
    if node.type == "dotted_key":
        return [part for child in node.children if child.type != "." for part in _key_path(child)]
    if node.type == "quoted_key":
        import tomllib

        return [tomllib.loads(f"k = {node.text.decode('utf-8')}")["k"]]
    return [node.text.decode("utf-8")]


def written_table(key: tuple[str, ...], name: str, value: dict[str, Any], array: bool = False) -> str | None:
    """``[key.name]`` (``[[key.name]]``: one table of an array) and its fields, spelled exactly
    as tomlkit spells them (strings, whole numbers, booleans, lists and nested tables as inline
    tables: what entries hold), without importing it; None for anything else, which tomlkit writes."""
    opening, closing = ("[[", "]]") if array else ("[", "]")
    try:
        lines = [f"{opening}{'.'.join(_key(step) for step in (*key, name))}{closing}\n"]
        lines += [f"{_key(field)} = {_value(item)}\n" for field, item in value.items()]
    except _Unwritten:
        return None
    return "".join(lines)


class _Unwritten(Exception):
    """A key or value tomlkit spells in a way written_table does not."""


_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}
_CONTROL = re.compile(r'[\x00-\x1f\x7f"\\]')  # what a basic string escapes


def _key(key: str) -> str:
    if not isinstance(key, str) or not key:
        raise _Unwritten
    return key if _BARE.issuperset(key) else _string(key)


def _string(text: str) -> str:
    return '"' + _CONTROL.sub(lambda c: _ESCAPES.get(c.group()) or f"\\u{ord(c.group()):04x}", text) + '"'


def _value(value: Any) -> str:
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list) and not any(isinstance(v, dict) for v in value):  # tomlkit makes tables of a list of them
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise _Unwritten


def tomlkit_table(key: tuple[str, ...], name: str, value: dict[str, Any], array: bool = False) -> str:
    import tomlkit

    table: Any = tomlkit.table()
    for field, item in value.items():
        table[field] = _inline(item)
    if array:
        table = tomlkit.aot()
        table.append({field: _inline(item) for field, item in value.items()})
    document = tomlkit.document()
    parent: Any = document
    for step in key:  # [a.b.name] with no [a] or [a.b] header of its own
        child = tomlkit.table(is_super_table=True)
        parent.append(step, child)
        parent = child
    parent.append(name, table)
    return tomlkit.dumps(document)


def _inline(value: Any) -> Any:
    """Nested tables inside an entry as inline tables: one entry stays one table block."""
    import tomlkit

    if isinstance(value, dict):
        table = tomlkit.inline_table()
        table.update({k: _inline(v) for k, v in value.items()})
        return table
    return value


def _decode_problem(source: str, message: str, document: str = "") -> Problem:
    """tomllib's message with its place as line:col; "(at end of document)" is the place just
    after the file's last character (the line a person looks at, not the empty one after it)."""
    found = re.search(r"\(at line (\d+), column (\d+)\)", message)
    text = re.sub(r"\s*\(at line \d+, column \d+\)", "", message)
    if found:
        return Problem(source, int(found.group(1)), int(found.group(2)), f"not valid TOML: {text}")
    if "(at end of document)" in text:
        body = document.rstrip("\r\n")
        line = body.count("\n") + 1
        column = len(body.rpartition("\n")[2]) + 1
        return Problem(source, line, column, "not valid TOML: " + text.replace("(at end of document)", "(at the end of the file)"))
    return Problem(source, None, None, f"not valid TOML: {text}")
