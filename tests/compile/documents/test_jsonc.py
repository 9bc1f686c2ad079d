"""JSON/JSONC edits: only the entry's bytes change; new members follow the file's style."""

from __future__ import annotations

import pytest

from projector.compile.documents import parse
from projector.core.errors import DocumentError

KEY = ("mcpServers",)
ENTRY = {"type": "stdio", "command": "/p"}


def edit(text: str, edits: dict, fmt: str = "jsonc") -> str:
    return parse(fmt, text, "f.json").edited(KEY, edits)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param("", '{\n  "mcpServers": {\n    "d": {\n      "type": "stdio",\n      "command": "/p"\n    }\n  }\n}\n', id="blank-file"),
        pytest.param("{}\n", '{\n  "mcpServers": {\n    "d": {\n      "type": "stdio",\n      "command": "/p"\n    }\n  }\n}\n', id="empty-object"),
        pytest.param('{\n  "a": 1,\n  "mcpServers": {}\n}\n',
                     '{\n  "a": 1,\n  "mcpServers": {\n    "d": {\n      "type": "stdio",\n      "command": "/p"\n    }\n  }\n}\n', id="empty-servers"),
        pytest.param('{\n    "mcpServers": {\n        "x": {"command": "y"}\n    }\n}',
                     '{\n    "mcpServers": {\n        "x": {"command": "y"},\n        "d": {\n            "type": "stdio",\n            "command": "/p"\n        }\n    }\n}',
                     id="four-spaces-no-final-newline"),
        pytest.param('{\n\t"mcpServers": {\n\t\t"x": {}\n\t}\n}\n',
                     '{\n\t"mcpServers": {\n\t\t"x": {},\n\t\t"d": {\n\t\t\t"type": "stdio",\n\t\t\t"command": "/p"\n\t\t}\n\t}\n}\n', id="tabs"),
        pytest.param('{\r\n  "mcpServers": {\r\n    "x": {}\r\n  }\r\n}\r\n',
                     '{\r\n  "mcpServers": {\r\n    "x": {},\r\n    "d": {\r\n      "type": "stdio",\r\n      "command": "/p"\r\n    }\r\n  }\r\n}\r\n', id="crlf"),
        pytest.param('{"mcpServers":{"x":{}}}', '{"mcpServers":{"x":{},"d":{"type":"stdio","command":"/p"}}}', id="minified"),
        pytest.param('{\n  "mcpServers": {\n    "x": {}, // mine\n  },\n}\n',
                     '{\n  "mcpServers": {\n    "x": {}, // mine\n    "d": {\n      "type": "stdio",\n      "command": "/p"\n    },\n  },\n}\n',
                     id="trailing-commas-and-comment"),
        pytest.param('{\n  "mcpServers": {\n    "x": {} // mine\n  }\n}\n',
                     '{\n  "mcpServers": {\n    "x": {}, // mine\n    "d": {\n      "type": "stdio",\n      "command": "/p"\n    }\n  }\n}\n',
                     id="comment-after-last-member"),
        pytest.param('{\n  // servers\n  "mcpServers": { /* none yet */ }\n}\n',
                     '{\n  // servers\n  "mcpServers": { /* none yet */\n    "d": {\n      "type": "stdio",\n      "command": "/p"\n    }\n  }\n}\n',
                     id="comment-only-object"),
        pytest.param('{\n  "mcpServers": {"x": {}}\n}\n', '{\n  "mcpServers": {"x": {}, "d": {"type": "stdio", "command": "/p"}}\n}\n', id="inline-object"),
        pytest.param('{\n  "a":1,\n  "mcpServers":{}\n}\n', '{\n  "a":1,\n  "mcpServers":{\n    "d":{\n      "type":"stdio",\n      "command":"/p"\n    }\n  }\n}\n', id="no-space-after-colon"),
        pytest.param('{\n  "other": "ü"\n}\n', '{\n  "other": "ü",\n  "mcpServers": {\n    "d": {\n      "type": "stdio",\n      "command": "/p"\n    }\n  }\n}\n', id="missing-key-non-ascii"),
    ],
)
def test_add_follows_the_file_style(before, after):
    assert edit(before, {"d": ENTRY}) == after


@pytest.mark.parametrize(
    ("before", "name", "after"),
    [
        pytest.param('{\n  "mcpServers": {\n    "a": 1,\n    "d": 2,\n    "c": 3\n  }\n}\n', "d", '{\n  "mcpServers": {\n    "a": 1,\n    "c": 3\n  }\n}\n', id="middle"),
        pytest.param('{\n  "mcpServers": {\n    "a": 1,\n    "d": 2\n  }\n}\n', "d", '{\n  "mcpServers": {\n    "a": 1\n  }\n}\n', id="last"),
        pytest.param('{\n  "mcpServers": {\n    "d": 2\n  }\n}\n', "d", '{\n  "mcpServers": {}\n}\n', id="only"),
        pytest.param('{\n  "mcpServers": {\n    "a": 1, // about a\n    "d": 2\n  }\n}\n', "d", '{\n  "mcpServers": {\n    "a": 1 // about a\n  }\n}\n', id="keeps-comment"),
        pytest.param('{\n  "mcpServers": {\n    "a": 1,\n    "d": 2,\n  },\n}\n', "d", '{\n  "mcpServers": {\n    "a": 1,\n  },\n}\n', id="trailing-comma"),
        pytest.param('{\n  "mcpServers": {\n    // mine\n    "d": 2\n  }\n}\n', "d", '{\n  "mcpServers": {\n    // mine\n  }\n}\n', id="comment-stays"),
    ],
)
def test_remove_takes_only_the_member_and_its_comma(before, name, after):
    assert edit(before, {name: None}) == after


def test_replace_changes_only_the_value():
    before = '{\n  "mcpServers": {\n    "d": {"url": "old"}, // keep\n    "z": 1\n  }\n}\n'
    assert edit(before, {"d": {"url": "new"}}) == '{\n  "mcpServers": {\n    "d": {\n      "url": "new"\n    }, // keep\n    "z": 1\n  }\n}\n'


def test_adds_replaces_and_removes_in_one_edit():
    before = '{\n  "mcpServers": {\n    "a": 1,\n    "b": 2,\n    "c": 3\n  }\n}\n'
    after = edit(before, {"a": None, "b": None, "c": 4, "n": 5})
    assert after == '{\n  "mcpServers": {\n    "c": 4,\n    "n": 5\n  }\n}\n'


def test_nested_key_path_is_created():
    doc = parse("json", '{\n  "projects": {}\n}\n', "f")
    assert doc.edited(("projects", "/w", "mcpServers"), {"d": 1}) == '{\n  "projects": {\n    "/w": {\n      "mcpServers": {\n        "d": 1\n      }\n    }\n  }\n}\n'


def test_without_key_takes_the_key_away():
    doc = parse("json", '{\n  "a": 1,\n  "mcpServers": {}\n}\n', "f")
    assert doc.without_key(KEY) == '{\n  "a": 1\n}\n'


STRICT = "not valid JSON (this client reads strict JSON: no comments, no trailing commas)"


@pytest.mark.parametrize(
    ("fmt", "text", "message"),
    [
        ("json", '{\n  "a": 1,\n}\n', f"f.json:3:1: {STRICT}: Expecting property name enclosed in double quotes"),
        ("json", '{\n  // c\n  "a": 1\n}\n', f"f.json:2:3: {STRICT}: Expecting property name enclosed in double quotes"),
        ("jsonc", '{\n  "a": 1\n  "b": 2\n}\n', "f.json:3:3: not valid JSON with comments: Expecting ',' delimiter"),
        ("jsonc", '{\n  // c\n  "a": tru,\n}\n', "f.json:3:8: not valid JSON with comments: Expecting value"),
        ("jsonc", '{\n  "a": [1,, 2]\n}\n', "f.json:2:11: not valid JSON with comments: Expecting value"),
        ("jsonc", "[1, 2]\n", "f.json:1:1: expected a JSON object at the top of the file"),
    ],
)
def test_a_file_that_does_not_parse_names_line_and_column(fmt, text, message):
    with pytest.raises(DocumentError) as raised:
        parse(fmt, text, "f.json")
    assert str(raised.value) == message


def test_servers_reads_jsonc_values():
    doc = parse("jsonc", '{ /* c */ "mcpServers": {"a": {"args": [1, 2,],},}, }', "f")
    assert doc.servers(KEY) == {"a": {"args": [1, 2]}}
    assert doc.servers(("nope",)) is None


def test_a_plain_json_file_reads_as_the_grammar_reads_it(corpus):
    """The standard library reads a plain JSON file (the grammar waits for an edit): the same value
    for every corpus file it takes, and what it refuses (NaN) is still refused with its place."""
    from projector.compile.documents.jsonc import _parser, _plain_json, _value

    compared = 0
    for path in sorted(corpus.rglob("*.json*")):
        text = path.read_text(encoding="utf-8", errors="replace")
        plain = _plain_json(text)
        if plain is not None:
            root = _parser().parse(text.encode("utf-8")).root_node
            assert not root.has_error and _value(root.named_children[0], str(path)) == plain, path
            compared += 1
    assert compared >= 20
    with pytest.raises(DocumentError, match="1:2: not valid JSON with comments"):
        parse("json", '{"a": NaN}', "x")


def test_a_plain_json_file_nested_too_deep_is_still_named_where():
    from projector.compile.documents.base import MAX_DEPTH

    text = '{"a": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}"
    with pytest.raises(DocumentError, match=r"x:1:\d+:"):
        parse("json", text, "x")
    assert parse("json", '{"a": ' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}", "x").value["a"]


@pytest.mark.parametrize("text", ['{\n  "mcpServers": {\n    \n  }\n}', '{"mcpServers": { }}\n', '{\n  "mcpServers": {\n\n  }\n}\n'])
def test_white_space_inside_an_empty_servers_object_comes_back(text):
    """Cline left such a file (Forwall100/dotfiles): the object's own white space is kept after
    projector's entry, so removing the entry gives back every byte."""
    added = parse("json", text, "f").edited(KEY, {"a": {"command": "x"}, "b": {"url": "https://h"}})
    assert parse("json", added, "f").servers(KEY) == {"a": {"command": "x"}, "b": {"url": "https://h"}}
    assert parse("json", added, "f").edited(KEY, {"a": None, "b": None}) == text
