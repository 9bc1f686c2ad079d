"""JSON and JSONC files, edited by byte spans.

tree-sitter's HuJSON grammar (JSON with comments and trailing commas, what several clients
accept) gives the span of every member. A client that reads strict JSON (one moves a file with a
comment aside and starts empty), or comments but no trailing commas (one renames a file with a
trailing comma aside), gets its file checked with the standard library's parser too, which names
the line and column of the first error. New members follow the file's own style:
indentation unit, member indentation, separator spacing, trailing commas, line endings.
"""

from __future__ import annotations

import json
from functools import cache, cached_property
from typing import Any

from projector.compile.documents.base import (
    MAX_DEPTH,
    array_at,
    Edits,
    Splice,
    Verbatim,
    check_edit,
    placed,
    indentation_at,
    newline_of,
    only_space_between,
    servers_at,
    splice,
    too_deep,
)
from projector.core.errors import DocumentError, Problem
from projector.core.record import Record


@cache
def _parser() -> Any:
    import tree_sitter_hujson
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_hujson.language()))


class _Style(Record):
    """How the file is spelled, so what projector writes into it looks like the rest."""

    unit: str  # one level of indentation
    colon: str  # ": " or ":"
    comma: str  # between members written on one line: ", " or ","
    newline: str
    compact: bool  # the file is written on one line


class JsonDocument:
    def __init__(self, text: str, *, source: str, strict: str = ""):
        """``strict``: "json" (no comments, no trailing commas), "comments" (comments but no
        trailing commas), or "" (both allowed)."""
        self.text = text
        self.source = source
        self.strict = strict
        self._bytes = text.encode("utf-8")
        self.blank = not text.strip()
        plain = None if self.blank else _plain_json(text)
        if plain is not None:  # most files: the standard library reads it; the spans wait for an edit
            self.value: dict[str, Any] = plain
        else:
            self._root = None if self.blank else self._parse()
            self.value = {} if self._root is None else _value(self._root, source)

    @cached_property
    def _root(self) -> Any:
        """The top object's node (a file read by ``_plain_json``: parsed when first edited)."""
        return _parser().parse(self._bytes).root_node.named_children[0]

    @cached_property
    def _style(self) -> _Style:
        return self._detect_style()

    # ------------------------------------------------------------------ reading

    def _parse(self) -> Any:
        if self.strict == "json":
            try:
                json.loads(self.text)
            except json.JSONDecodeError as exc:
                what = "not valid JSON (this client reads strict JSON: no comments, no trailing commas)"
                raise DocumentError(Problem(self.source, exc.lineno, exc.colno, f"{what}: {exc.msg}")) from None
            except RecursionError:
                pass  # too deep for the standard parser: the tree below says where
        tree = _parser().parse(self._bytes)
        if tree.root_node.has_error:
            raise DocumentError(self._syntax_problem(tree.root_node))
        if self.strict == "comments":
            try:
                json.loads(_blank_jsonc(tree.root_node, self._bytes, commas=False).decode("utf-8"))
            except json.JSONDecodeError as exc:
                what = "not valid JSON with comments (this client reads comments, but no trailing commas)"
                raise DocumentError(Problem(self.source, exc.lineno, exc.colno, f"{what}: {exc.msg}")) from None
            except RecursionError:
                pass  # too deep for the standard parser: the tree below says where
        values = [c for c in tree.root_node.named_children if c.type != "comment"]
        if len(values) != 1 or values[0].type != "object":
            raise DocumentError(Problem(self.source, 1, 1, "expected a JSON object at the top of the file"))
        return values[0]

    def _syntax_problem(self, root: Any) -> Problem:
        """Where a JSONC file breaks: the standard parser, run over a copy whose comments and
        trailing commas are blanked (offsets kept), names the fault and its place exactly."""
        try:
            json.loads(_blank_jsonc(root, self._bytes).decode("utf-8"))
        except json.JSONDecodeError as exc:
            return Problem(self.source, exc.lineno, exc.colno, f"not valid JSON with comments: {exc.msg}")
        row, col = _first_error(root)
        return Problem(self.source, row + 1, col + 1, "not valid JSON with comments")

    def servers(self, key: tuple[str, ...]) -> dict[str, Any] | None:
        return servers_at(self.value, key, self.source, "an object")

    def key_is_empty(self, key: tuple[str, ...]) -> bool:
        return self.servers(key) == {}

    def source_of(self, key: tuple[str, ...], name: str) -> str | None:
        """The text of entry ``name``'s value under ``key`` as the file spells it (None: absent)."""
        pair = self._pair(key, name)
        return pair.child_by_field_name("value").text.decode("utf-8") if pair is not None else None

    def member(self, key: tuple[str, ...], name: str) -> str | None:
        """The text of entry ``name``'s whole member under ``key`` (None: absent)."""
        pair = self._pair(key, name)
        return pair.text.decode("utf-8") if pair is not None else None

    def _pair(self, key: tuple[str, ...], name: str) -> Any:
        """The syntax node of entry ``name``'s member under ``key`` (None: absent)."""
        obj = self._object_at(key) if not self.blank else None
        return _member(obj, name) if obj is not None else None

    def inside(self, key: tuple[str, ...]) -> str | None:
        """The text between the braces of the object at ``key`` (None: absent)."""
        obj = self._object_at(key) if not self.blank else None
        return self._bytes[obj.children[0].end_byte : obj.children[-1].start_byte].decode("utf-8") if obj is not None else None

    # ------------------------------------------------------------------ editing

    def edited(self, key: tuple[str, ...], edits: Edits) -> str:
        return self.edit(key, edits).text

    def edit(self, key: tuple[str, ...], edits: Edits) -> JsonDocument:
        """The document of the edited text (``edited``), as its check parsed it."""
        if not edits:
            return self  # its syntax tree unbuilt: a file read through the plain-JSON path stays read that way
        before = self.servers(key)
        self._refuse_twice_written(key, edits)
        document: JsonDocument = self
        for name in sorted(n for n, v in edits.items() if v is None and before is not None and n in before):
            document = document._reparsed(document._delete_member(document._object_at(key), name))
        sets = {n: v for n, v in edits.items() if v is not None}
        if sets:
            document = document._reparsed(document._set_members(key, sets))
        if document is not self:
            check_edit(self.source, self.value, document.value, key, edits)
        return document

    def _refuse_twice_written(self, key: tuple[str, ...], names: Edits) -> None:
        """An entry to edit that the file holds twice: which one is meant is not ours to guess
        (readers keep the last, so removing it would bring the other one back)."""
        obj = self._object_at(key)
        lines: dict[str, int] = {}
        for pair in (c for c in (obj.children if obj is not None else ()) if c.type == "pair"):
            name, row = json.loads(pair.child_by_field_name("key").text), pair.start_point.row + 1
            if name in names and name in lines:
                where = f"on line {row}" if lines[name] == row else f"(lines {lines[name]} and {row})"
                raise DocumentError(Problem(self.source, row, pair.start_point.column + 1, f'entry "{name}" is written twice '
                                            f"{where} and clients read only the last: remove one"))
            lines[name] = row

    # ------------------------------------------------------------------ arrays (hook lists)

    def array(self, key: tuple[str, ...]) -> list[Any] | None:
        """The array at ``key``; None when absent; DocumentError when something else is there."""
        return array_at(self.value, key, self.source)

    def with_element(self, key: tuple[str, ...], index: int | None, value: Any) -> JsonDocument:
        """The document with element ``index`` of the array at ``key`` replaced by ``value``, or
        with ``value`` added at its end (``index`` None; the array is made when absent)."""
        array = self._array_node(key)
        if array is None:
            return self._reparsed(self._set_members(key[:-1], {key[-1]: [value]}))
        if index is None:
            return self._reparsed(self._apply(self._insert(array, lambda indent, inline: [self._render(value, indent, inline)])))
        old = _items(array)[index]
        indent = indentation_at(self._bytes, old.start_byte).decode()
        inline = self._style.compact or old.start_point.row == array.start_point.row
        return self._reparsed(self._apply([Splice(old.start_byte, old.end_byte, self._render(value, indent, inline).encode())]))

    def without_element(self, key: tuple[str, ...], index: int) -> JsonDocument:
        array = self._array_node(key)
        return self._reparsed(self._delete_item(array, _items(array)[index]))

    def _array_node(self, key: tuple[str, ...]) -> Any:
        parent = self._object_at(key[:-1]) if self._root is not None else None
        pair = _member(parent, key[-1]) if parent is not None else None
        value = pair.child_by_field_name("value") if pair is not None else None
        return value if value is not None and value.type == "array" else None

    def without_key(self, key: tuple[str, ...]) -> str:
        parent = self._object_at(key[:-1])
        return self._reparsed(self._delete_member(parent, key[-1])).text if parent is not None else self.text

    def _reparsed(self, text: str) -> JsonDocument:
        return JsonDocument(text, source=self.source, strict=self.strict)

    def _object_at(self, key: tuple[str, ...]) -> Any:
        node = self._root
        for step in key:
            pair = _member(node, step) if node is not None else None
            value = pair.child_by_field_name("value") if pair is not None else None
            if value is None or value.type != "object":
                return None
            node = value
        return node

    def _delete_member(self, obj: Any, name: str) -> str:
        return self._delete_item(obj, _member(obj, name))

    def _delete_item(self, container: Any, pair: Any) -> str:
        """The text without one member of an object, or one element of an array, and its comma."""
        children = container.children
        index = next(i for i, c in enumerate(children) if c.id == pair.id)
        pairs = _items(container)
        comments = [c for c in children if c.type == "comment"]
        if len(pairs) == 1 and not comments:  # the container becomes empty: {} or []
            opening, closing = children[0], children[-1]
            own = (self._style.newline + indentation_at(self._bytes, opening.start_byte).decode()).encode()
            rest = self._bytes[children[-2].end_byte : closing.start_byte]  # after the member (and a trailing comma)
            if rest != own and not rest.strip():  # white space the file had before the member came: it stays
                return self._apply([Splice(opening.end_byte, children[-2].end_byte, b"")])
            return self._apply([Splice(opening.end_byte, closing.start_byte, b"")])
        after = children[index + 1]
        if after.type == ",":  # a separator (or a trailing comma) follows: take it along
            return self._apply([Splice(children[index - 1].end_byte, after.end_byte, b"")])
        splices = [Splice(children[index - 1].end_byte, pair.end_byte, b"")]
        comma = next((c for c in reversed(children[:index]) if c.type in (",", "pair")), None)
        if comma is not None and comma.type == ",":  # the member before becomes the last one
            splices.append(Splice(comma.start_byte, comma.end_byte, b""))
        return self._apply(splices)

    def _set_members(self, key: tuple[str, ...], values: dict[str, Any]) -> str:
        if self._root is None:
            return self._new_file(key, values)
        depth = 0  # how much of the key path exists already
        while depth < len(key) and self._object_at(key[: depth + 1]) is not None:
            depth += 1
        parent = self._object_at(key[:depth]) if depth else self._root
        if depth < len(key):  # create the missing keys, holding the new members
            nested: Any = dict(values)
            for step in reversed(key[depth + 1 :]):
                nested = {step: nested}
            return self._apply(self._insertion(parent, {key[depth]: nested}))
        splices: list[Splice] = []
        new: dict[str, Any] = {}
        present = {json.loads(c.child_by_field_name("key").text): c for c in parent.children if c.type == "pair"}
        alone = [v for v in values.values() if isinstance(v, Verbatim) and v.alone is not None]
        if len(values) == 1 and alone and len(parent.children) == 2:  # "{}": back to what it held, byte for byte
            return self._apply([Splice(parent.children[0].end_byte, parent.children[1].start_byte, alone[0].alone.encode("utf-8"))])
        for name, value in values.items():
            pair = _member(parent, name)
            where = placed(value, present) if pair is None else None
            if where is not None:  # back where it stood, its own text
                splices.append(self._beside(present[where[1]], where[0], name, value))
                continue
            if pair is None:
                new[name] = value
                continue
            old = pair.child_by_field_name("value")
            indent = indentation_at(self._bytes, pair.start_byte).decode()
            inline = self._style.compact or pair.start_point.row == parent.start_point.row
            splices.append(Splice(old.start_byte, old.end_byte, self._render(value, indent, inline).encode()))
        if new:
            splices += self._insertion(parent, new)
        return self._apply(splices)

    def _beside(self, neighbour: Any, side: str, name: str, value: Verbatim) -> Splice:
        """``"name": <its text>`` inserted after or before ``neighbour``, one member a line."""
        member = value.member or f"{json.dumps(name, ensure_ascii=False)}{self._style.colon}{value.text}"
        indent = indentation_at(self._bytes, neighbour.start_byte).decode()
        newline = self._style.newline if not self._style.compact else " "
        if side == "after":
            return Splice(neighbour.end_byte, neighbour.end_byte, f",{newline}{indent if newline != ' ' else ''}{member}".encode())
        return Splice(neighbour.start_byte, neighbour.start_byte, f"{member},{newline}{indent if newline != ' ' else ''}".encode())

    def _insertion(self, obj: Any, members: dict[str, Any]) -> list[Splice]:
        colon = self._style.colon
        return self._insert(obj, lambda indent, inline: [f"{json.dumps(n, ensure_ascii=False)}{colon}{self._render(v, indent, inline)}"
                                                         for n, v in members.items()])

    def _insert(self, obj: Any, render: Any) -> list[Splice]:
        """Splices that add the items ``render(indent, inline)`` gives at the end of an object or
        array, in the file's style."""
        style, children = self._style, obj.children
        opening, closing = children[0], children[-1]
        pairs = _items(obj)
        trailing = bool(pairs) and children[children.index(pairs[-1]) + 1].type == ","
        inline = style.compact or (bool(pairs) and pairs[-1].start_point.row == opening.start_point.row)
        outer = indentation_at(self._bytes, opening.start_byte).decode()
        indent = indentation_at(self._bytes, pairs[-1].start_byte).decode() if pairs and not inline else outer + style.unit
        rendered = render(indent, inline)
        if inline:
            separator = style.comma
            body = separator.join(rendered)
            if trailing:
                return [Splice(children[-2].end_byte, children[-2].end_byte, f" {body},".encode())]
            if pairs:
                return [Splice(pairs[-1].end_byte, pairs[-1].end_byte, f"{separator}{body}".encode())]
            if only_space_between(self._bytes, opening.end_byte, closing.start_byte):  # "{ }": its space stays after the members
                return [Splice(opening.end_byte, opening.end_byte, body.encode())]
            return [Splice(opening.end_byte, closing.start_byte, body.encode())]
        nl = style.newline
        body = ("," + nl + indent).join(rendered) + ("," if trailing else "")
        if len(children) == 2 and only_space_between(self._bytes, opening.end_byte, closing.start_byte):
            inside = self._bytes[opening.end_byte : closing.start_byte]
            if inside and inside != f"{nl}{outer}".encode():  # "{\n    \n  }": kept after the members, so a removal gives it back
                return [Splice(opening.end_byte, opening.end_byte, f"{nl}{indent}{body}".encode())]
            return [Splice(opening.end_byte, closing.start_byte, f"{nl}{indent}{body}{nl}{outer}".encode())]
        at = children[-2].end_byte  # after the last member, comma or comment
        comma = "" if trailing or not pairs else ","
        splices = []
        if pairs and comma and pairs[-1].end_byte != at:  # a comment sits after the last member
            splices.append(Splice(pairs[-1].end_byte, pairs[-1].end_byte, b","))
            comma = ""
        if not pairs and self._bytes.find(b"\n", at, closing.start_byte) < 0:  # "{ /* c */ }"
            splices.append(Splice(at, closing.start_byte, f"{nl}{indent}{body}{nl}{outer}".encode()))
        else:
            splices.append(Splice(at, at, f"{comma}{nl}{indent}{body}".encode()))
        return splices

    def _new_file(self, key: tuple[str, ...], values: dict[str, Any]) -> str:
        nested: Any = {name: value.value if isinstance(value, Verbatim) else value for name, value in values.items()}
        for step in reversed(key):
            nested = {step: nested}
        return json.dumps(nested, indent=2, ensure_ascii=False) + "\n"

    def _render(self, value: Any, indent: str, inline: bool) -> str:
        if isinstance(value, Verbatim):
            return value.text
        style = self._style
        if inline:
            return json.dumps(value, ensure_ascii=False, separators=(style.comma, style.colon))
        text = json.dumps(value, ensure_ascii=False, indent=style.unit, separators=(",", style.colon))
        return text.replace("\n", style.newline + indent)

    def _apply(self, splices: list[Splice]) -> str:
        return splice(self._bytes, splices).decode("utf-8")

    # ------------------------------------------------------------------ style

    def _detect_style(self) -> _Style:
        newline = newline_of(self.text)
        root = self._root
        pairs = [c for c in root.children if c.type == "pair"] if root is not None else []
        compact = bool(pairs) and root.start_point.row == root.end_point.row
        unit = "  "
        if pairs and not compact:
            found = indentation_at(self._bytes, pairs[0].start_byte).decode()
            unit = found or unit
        colon = ": "
        if pairs:
            key, value = pairs[0].child_by_field_name("key"), pairs[0].child_by_field_name("value")
            colon = ":" if self._bytes[key.end_byte : value.start_byte] == b":" else ": "
        comma = ", " if colon == ": " else ","  # a file is either spaced or minified
        return _Style(unit=unit, colon=colon, comma=comma, newline=newline, compact=compact)


def _items(container: Any) -> list[Any]:
    """An object's members, or an array's elements."""
    if container.type == "object":
        return [c for c in container.children if c.type == "pair"]
    return [c for c in container.named_children if c.type != "comment"]


def _plain_json(text: str) -> dict[str, Any] | None:
    """The value of a file that is a standard JSON object (what every JSON reader takes, so the
    grammar does too); None for anything else (comments, trailing commas, NaN, not an object),
    which the grammar reads and, where it must, refuses with its place."""

    def refuse(constant: str) -> None:
        raise ValueError(constant)

    try:
        value = json.loads(text, parse_constant=refuse)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or _deeper_than(value, text, MAX_DEPTH):
        return None
    return value


def _deeper_than(value: Any, text: str, limit: int) -> bool:
    """Whether objects and arrays nest deeper than ``limit`` (the grammar then names where)."""
    if text.count("{") + text.count("[") <= limit:
        return False
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node) if isinstance(child, (dict, list)))
    return False


def _member(obj: Any, name: str) -> Any:
    """The last member called ``name`` (the one JSON readers keep), or None."""
    found = None
    for child in obj.children:
        if child.type == "pair" and json.loads(child.child_by_field_name("key").text) == name:
            found = child
    return found


def _value(node: Any, source: str, depth: int = 1) -> Any:
    kind = node.type
    if kind in ("object", "array") and depth > MAX_DEPTH:
        raise too_deep(source, node.start_point)
    if kind == "object":
        return {
            json.loads(p.child_by_field_name("key").text): _value(p.child_by_field_name("value"), source, depth + 1)
            for p in node.children
            if p.type == "pair"
        }
    if kind == "array":
        return [_value(c, source, depth + 1) for c in node.named_children if c.type != "comment"]
    return json.loads(node.text)


def _blank_jsonc(root: Any, source: bytes, commas: bool = True) -> bytes:
    """``source`` with its comments (and trailing commas) blanked, every offset kept."""
    out = bytearray(source)
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        closing = node.next_sibling
        while closing is not None and closing.type == "comment":
            closing = closing.next_sibling
        if node.type == "comment" or (commas and node.type == "," and closing is not None and closing.type in ("}", "]")):
            for i in range(node.start_byte, node.end_byte):
                if out[i] not in (0x0A, 0x0D):
                    out[i] = 0x20
    return bytes(out)


def _first_error(node: Any) -> tuple[int, int]:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.is_missing:
            return current.start_point.row, current.start_point.column
        if current.type == "ERROR":
            # An ERROR that wraps only whole nodes (a member before a missing comma) means the
            # fault is what follows it.
            whole = all(not (c.has_error or c.is_missing) and c.type != "ERROR" for c in current.children)
            after = current.next_sibling
            point = after.start_point if whole and current.named_child_count and after is not None else current.start_point
            return point.row, point.column
        stack.extend(reversed([c for c in current.children if c.has_error or c.is_missing or c.type == "ERROR"]))
    return node.start_point.row, node.start_point.column
