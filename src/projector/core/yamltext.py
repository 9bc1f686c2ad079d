"""YAML text as projector reads it (the model, project files): decoded and screened before any
parser builds data from it, and its syntax errors told in plain words.

- Bytes that are not UTF-8, and characters YAML forbids (a NUL), are named at their line and
  column, not at a byte offset.
- Nesting deeper than any model needs, and aliases that expand into more than the file holds
  (``kbs: [*a9, *a9]``, nine levels deep, is a billion KB names), are refused before they are
  built: a composer recurses once per level (100,000 levels crash the C one), and validation
  walks every alias's expansion.
- A syntax error points at the line that is wrong (often not where the parser stopped) and
  says what to do.
"""

from __future__ import annotations

from typing import Any

from projector.core.errors import ModelError, Problem

MAX_DEPTH = 32  # a model nests about 6 levels (bindings, folder, provider, settings, env, value)
ALIAS_NODES = 10_000  # values aliases may add, beyond this many times the file's own
ALIAS_RATIO = 10


def decoded(raw: bytes, shown: str) -> str:
    """``raw`` as UTF-8 text; ModelError at the line and column of the first byte that is not."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _place_of_byte(raw, exc.start)
        byte = raw[exc.start : exc.start + 1].hex()
        raise ModelError(Problem(shown, line, column, f"not UTF-8 text (byte 0x{byte}): save the file as UTF-8")) from None


def screen(text: str, shown: str) -> None:
    """``unreadable`` for a model or project file, raised as its error."""
    found = unreadable(text, shown, MAX_DEPTH, "a model needs about 6: flatten it")
    if found is not None:
        raise ModelError(found)


def unreadable(text: str, shown: str, max_depth: int, deep: str) -> Problem | None:
    """What no parser should be handed, with its place: forbidden characters, nesting deeper than
    ``max_depth`` (``deep``: what to do then), aliases that expand too far. One pass over the parser's events (the C parser
    keeps its own stack, so no depth can crash it), stopped at the first problem. A syntax error
    is left to the careful parser, which reports it (``syntax_problem``). Also for YAML files of
    clients: one nested 100,000 deep crashed the sync with SIGSEGV."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError
    from ruamel.yaml.reader import ReaderError

    sizes: dict[str, int] = {}  # anchor -> values it stands for
    open_nodes: list[list[Any]] = [[0, None]]  # per open collection: [values inside, anchor]
    literal = expanded = 0
    try:
        for event in YAML(typ="safe").parse(text):
            kind = type(event).__name__
            if kind in ("SequenceStartEvent", "MappingStartEvent"):
                if len(open_nodes) > max_depth:
                    return _at(shown, event.start_mark, f"nested more than {max_depth} levels deep; {deep}")
                open_nodes.append([0, event.anchor])
                literal += 1
                expanded += 1
            elif kind in ("SequenceEndEvent", "MappingEndEvent"):
                inside, anchor = open_nodes.pop()
                _counted(open_nodes, sizes, anchor, inside + 1)
            elif kind == "ScalarEvent":
                literal += 1
                expanded += 1
                _counted(open_nodes, sizes, event.anchor, 1)
            elif kind == "AliasEvent":
                size = sizes.get(event.anchor, 1)
                expanded += size
                open_nodes[-1][0] += size
                bound = max(ALIAS_NODES, ALIAS_RATIO * literal)
                if expanded - literal > bound:
                    return _at(shown, event.start_mark, f"*{event.anchor} and the aliases before it stand for more than "
                               f"{bound:,} values: write the values out, or use fewer aliases")
    except ReaderError as exc:  # its position is in bytes or characters, by parser: find the character
        code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        line, column = _place_of_character(text, max(text.find(chr(code)), 0))
        return Problem(shown, line, column, f"a control character (U+{code:04X}) YAML text may not hold: remove it")
    except YAMLError:
        return None  # a syntax error: the careful parser says where and why
    return None


def _counted(open_nodes: list[list[Any]], sizes: dict[str, int], anchor: str | None, size: int) -> None:
    open_nodes[-1][0] += size
    if anchor is not None:
        sizes[anchor] = size


def _at(shown: str, mark: Any, message: str) -> Problem:
    return Problem(shown, mark.line + 1, mark.column + 1, message)


def _place_of_byte(raw: bytes, offset: int) -> tuple[int, int]:
    start = raw.rfind(b"\n", 0, offset) + 1
    return raw.count(b"\n", 0, offset) + 1, len(raw[start:offset].decode("utf-8", errors="replace")) + 1


def _place_of_character(text: str, index: int) -> tuple[int, int]:
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


# --------------------------------------------------------------------------- syntax errors


def syntax_problem(exc: Any, text: str, shown: str) -> Problem:
    """A MarkedYAMLError as a person can act on it: the line that is wrong, and what to do."""
    problem, context = str(exc.problem or ""), str(exc.context or "")
    found, opened = exc.problem_mark, exc.context_mark
    lines = text.splitlines()
    if "could not find expected ':'" in problem and opened is not None:
        return _place(shown, opened, _not_a_pair(_line(lines, opened.line)))
    if context.startswith("while scanning a quoted scalar") and opened is not None:
        return _place(shown, opened, "a quote opened here is never closed: close it")
    if context.startswith(("while parsing a flow sequence", "while parsing a flow mapping")) and opened is not None:
        brackets = "[ … ]" if "sequence" in context else "{ … }"
        return _place(shown, opened, f"this {brackets} is not closed where it should be: check for a missing ',' or closing bracket")
    if found is None:
        return Problem(shown, None, None, f"not valid YAML: {problem or context}")
    if "<stream end>" in problem:
        return _place(shown, found, "the file ends inside something opened above it (a [, a { or a quote): close it")
    if problem.startswith("expected <block end>, but found"):
        return _place(shown, found, _misindented(lines, found.line))
    if "mapping values are not allowed here" in problem:
        return _place(shown, found, "a ':' YAML cannot take here: quote a value that holds ': ', and check the line above "
                                    "(a key ends with ':', its value follows after a space)")
    if "cannot start any token" in problem and "\\t" in problem:
        return _place(shown, found, "a tab: YAML indents with spaces only; replace it with spaces")
    if problem.startswith("found undefined alias"):
        return _place(shown, found, f"{problem[len('found undefined alias') :].strip()} names no anchor (&name) above it: "
                                    "define the anchor first, or write the value out")
    if "found another document" in problem:
        return _place(shown, found, "a second document starts here: the file is one document; remove the '---' and merge what follows")
    return _place(shown, found, problem or context)


def _place(shown: str, mark: Any, message: str) -> Problem:
    return Problem(shown, mark.line + 1, mark.column + 1, f"not valid YAML: {message}")


def _line(lines: list[str], index: int) -> str:
    return lines[index] if 0 <= index < len(lines) else ""


def _not_a_pair(line: str) -> str:
    text = line.split(" #", 1)[0].strip()
    if text in ("{}", "[]"):
        return (f"a leftover {text} (which means \"empty\") after the entries above it: delete this line")
    return "this line is not `key: value`: add the ':' after the key, or indent it under the key it belongs to"


def _misindented(lines: list[str], index: int) -> str:
    """The line at ``index`` is indented where nothing can start. The usual cause is the line
    above it that already gives its key a value on the same line (``providers: {}``)."""
    here = _line(lines, index)
    indent = len(here) - len(here.lstrip(" "))
    for number in range(index - 1, -1, -1):
        above = lines[number]
        content = above.split(" #", 1)[0].rstrip()
        if not content.strip() or content.lstrip().startswith("#"):
            continue
        key, colon, value = content.strip().partition(": ")
        if colon and value.strip() and len(above) - len(above.lstrip(" ")) < indent:
            return (f"this line is indented under line {number + 1}, which already gives {key} a value ({value.strip()}): "
                    "remove that value to put entries under it, or indent this line like its neighbours")
        break
    return "this line's indentation does not fit the lines above it: line it up with the keys of its level"
