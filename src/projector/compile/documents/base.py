"""What every document format shares: splices on bytes, and a check of their result."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import Any

from projector.core.record import Record

Edits = Mapping[str, Any | None]
"""Entry name → the new value (or a Verbatim one), or None to remove the entry."""


class Verbatim(Record):
    """An entry written back exactly as a file once held it: its value, and its text there (what
    a document's ``source_of`` gave), spliced in as it stands instead of rendered anew."""

    value: Any
    text: str
    after: str | None = None  # the entry it followed in the file, where it goes back when that is there
    before: str | None = None  # else the entry it preceded
    alone: str | None = None  # the text between the braces of its object, when it was all there was
    member: str | None = None  # JSON: its whole member (``"name":  value``), spelled as it was
    set_off: bool | None = None  # TOML: whether a blank line set its tables off from what came before (None: unknown, one is added)
    followed_by: tuple[str, ...] | None = None  # TOML: the header of the table after it, where it goes back when no entry of its key is left
    gap: str | None = None  # TOML: the lines between it and that table (blank lines, comments), which it goes back before


def neighbours(document: Any, key: tuple[str, ...], name: str) -> dict[str, Any]:
    """Where entry ``name`` stands under ``key``: the names of the entries around it (a
    Verbatim's ``after`` and ``before``), when it is the only one, what its braces hold, and
    whether a blank line set it off, and the table after it."""
    names = list(document.servers(key) or {})
    at = names.index(name)
    inside = getattr(document, "inside", None)  # JSON: an object emptied keeps none of its white space
    member = getattr(document, "member", None)  # JSON: the name and colon are spelled outside the value
    set_off = getattr(document, "set_off", None)  # TOML: a table given back is set off only where it was
    followed_by = getattr(document, "followed_by", None)  # TOML: the table it goes back before, alone
    gap = getattr(document, "gap_after", None)  # TOML: and what stood between them
    return {"after": names[at - 1] if at > 0 else None, "before": names[at + 1] if at + 1 < len(names) else None,
            "alone": inside(key) if inside is not None and len(names) == 1 else None,
            "member": member(key, name) if member is not None else None,
            "set_off": set_off(key, name) if set_off is not None else None,
            "followed_by": followed_by(key, name) if followed_by is not None else None,
            "gap": gap(key, name) if gap is not None else None}


def placed(value: Any, present: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """Where a Verbatim entry goes back among ``present``: ("after", name) or ("before", name),
    None when neither neighbour is there (or it is not a Verbatim)."""
    if not isinstance(value, Verbatim):
        return None
    if value.after is not None and value.after in (present or {}):
        return ("after", value.after)
    if value.before is not None and value.before in (present or {}):
        return ("before", value.before)
    return None


def plain(value: Any) -> Any:
    """An edit's value as the file will read it."""
    return value.value if isinstance(value, Verbatim) else value


class Splice(Record):
    """Bytes replacing ``source[start:end]``: how every document edits its text in place."""

    start: int  # byte offsets into the UTF-8 text
    end: int
    text: bytes


def splice(source: bytes, splices: list[Splice]) -> bytes:
    """Apply splices (any order). Deletions that overlap (two tables removed together both
    claiming the blank line between them) become one; any other overlap is a bug."""
    ordered: list[Splice] = []
    for s in sorted(splices, key=lambda s: (s.start, s.end)):
        last = ordered[-1] if ordered else None
        if last is not None and s.start < last.end and not s.text and not last.text:
            ordered[-1] = Splice(last.start, max(last.end, s.end), b"")
        else:
            ordered.append(s)
    for before, after in pairwise(ordered):
        if before.end > after.start:
            raise AssertionError(f"overlapping edits at bytes {before.start}-{before.end} and {after.start}")
    out, position = [], 0
    for s in ordered:
        out += [source[position : s.start], s.text]
        position = s.end
    out.append(source[position:])
    return b"".join(out)


def newline_of(text: str) -> str:
    """The file's own line ending: CRLF when its first line ends so."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def line_start(source: bytes, offset: int) -> int:
    return source.rfind(b"\n", 0, offset) + 1


def indentation_at(source: bytes, offset: int) -> bytes:
    """The white space that opens the line holding ``offset``."""
    start = line_start(source, offset)
    end = start
    while end < len(source) and source[end : end + 1] in (b" ", b"\t"):
        end += 1
    return source[start:end]


def only_space_between(source: bytes, start: int, end: int) -> bool:
    return not source[start:end].strip()


def servers_at(value: Any, key: tuple[str, ...], source: str, kind: str) -> dict[str, Any] | None:
    """The entries under ``key`` in a parsed document; None when ``key`` is absent."""
    from projector.core.errors import DocumentError, Problem

    node = value
    for step in key:
        if not isinstance(node, dict) or step not in node:
            return None
        node = node[step]
    if not isinstance(node, dict):
        raise DocumentError(Problem(source, None, None, f'"{".".join(key)}" is not {kind}; fix it by hand'))
    return node


def array_at(value: Any, key: tuple[str, ...], source: str, null_is_absent: bool = False) -> list[Any] | None:
    """The list at ``key`` in a parsed document; None when ``key`` is absent (or, where the
    format writes ``key:`` alone for nothing, null); DocumentError when something else is there."""
    from projector.core.errors import DocumentError, Problem

    node = value
    for step in key:
        if not isinstance(node, dict) or step not in node:
            return None
        node = node[step]
    if node is None and null_is_absent:
        return None
    if not isinstance(node, list):
        raise DocumentError(Problem(source, None, None, f'"{".".join(key)}" is not a list; fix it by hand'))
    return node


def expected_servers(before: Mapping[str, Any] | None, edits: Edits) -> dict[str, Any]:
    result = dict(before or {})
    for name, value in edits.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = plain(value)
    return result


MAX_DEPTH = 200  # client files nest about 8 levels; the parsers and checks recurse once per level
TOO_DEEP = "projector does not edit a file like this (left untouched)"


def too_deep(source: str, point: Any) -> Exception:
    """A file nested deeper than MAX_DEPTH, at the (row, column) where it goes past it."""
    from projector.core.errors import DocumentError, Problem

    row, column = point
    return DocumentError(Problem(source, row + 1, column + 1, f"nested more than {MAX_DEPTH} levels deep; {TOO_DEEP}"))


def deepest(root: Any, containers: tuple[str, ...]) -> Any:
    """Where a tree-sitter tree first nests ``containers`` deeper than MAX_DEPTH (None: nowhere).
    A walk of its own, for when a parser gave up on the file's depth."""
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if node.type in containers:
            depth += 1
            if depth > MAX_DEPTH:
                return node.start_point
        stack.extend((child, depth) for child in reversed(node.children))
    return None


def check_edit(
    source: str, before: Mapping[str, Any], after: Mapping[str, Any], key: tuple[str, ...], edits: Edits
) -> None:
    """The edited document must equal the original with exactly the edits applied."""
    expected = dict(before)
    node: dict[str, Any] = expected
    parents = [expected]
    for step in key[:-1]:
        node[step] = dict(node.get(step) or {})
        node = node[step]
        parents.append(node)
    servers = expected_servers(node.get(key[-1]), edits)
    if servers or key[-1] in node:  # removing from an absent key creates nothing
        node[key[-1]] = servers
    for depth in range(len(key), 0, -1):  # TOML has no empty [a] once [a.x] (nor [a.b] once [a.b.x]) is gone
        parent = parents[depth - 1]
        if parent.get(key[depth - 1]) == {} and _lacks(after, key[:depth]):
            parent.pop(key[depth - 1])
    if _normal(after) != _normal(expected):
        from projector.core.errors import DocumentError, Problem

        raise DocumentError(Problem(source, None, None, "an edit would have changed more than the entries projector "
                                    "meant to change, so nothing was written (please report this file's shape)"))


def _lacks(value: Mapping[str, Any], key: tuple[str, ...]) -> bool:
    for step in key:
        if not isinstance(value, Mapping) or step not in value:
            return True
        value = value[step]
    return False


def _normal(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value
