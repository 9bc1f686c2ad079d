"""YAML (Goose) edits: one mapping pair per entry, in the file's own indentation and sequence
style, everything else kept byte for byte; a file its client cannot read is refused."""

from __future__ import annotations

import pytest

from projector.compile.documents import parse
from projector.core.errors import DocumentError

KEY = ("extensions",)
ENTRY = {"enabled": True, "type": "stdio", "name": "d", "description": "", "cmd": "/p", "args": ["mcp", "--provider", "d"], "timeout": 300}
BLOCK = "  d:\n    enabled: true\n    type: stdio\n    name: d\n    description: ''\n    cmd: /p\n    args:\n    - mcp\n    - --provider\n    - d\n    timeout: 300\n"


def edit(text: str, edits: dict) -> str:
    return parse("yaml", text, "config.yaml").edited(KEY, edits)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param("", "extensions:\n" + BLOCK, id="empty"),
        pytest.param("GOOSE_MODEL: x\n", "GOOSE_MODEL: x\nextensions:\n" + BLOCK, id="no-extensions"),
        pytest.param("GOOSE_MODEL: x", "GOOSE_MODEL: x\nextensions:\n" + BLOCK.rstrip("\n"), id="no-final-newline"),
        pytest.param("extensions: {}\nGOOSE_MODEL: x\n", "extensions:\n" + BLOCK + "GOOSE_MODEL: x\n", id="inline-empty"),
        pytest.param("# only a comment\n", "# only a comment\nextensions:\n" + BLOCK, id="comment-only"),
        pytest.param("extensions:\n  x:\n    cmd: x\n  # about x\nother: 1\n",
                     "extensions:\n  x:\n    cmd: x\n" + BLOCK + "  # about x\nother: 1\n", id="after-the-last-entry"),
        pytest.param("extensions:\n    x:\n        cmd: x\n        args:\n            - a\n",
                     "extensions:\n    x:\n        cmd: x\n        args:\n            - a\n"
                     + BLOCK.replace("    ", "        ").replace("  d:", "    d:").replace("        - ", "            - "),
                     id="four-spaces-indented-sequences"),
        pytest.param("a: 1\r\n", "a: 1\r\nextensions:\r\n" + BLOCK.replace("\n", "\r\n"), id="crlf"),
    ],
)
def test_add(before, after):
    assert edit(before, {"d": ENTRY}) == after


@pytest.mark.parametrize(
    "original",
    [
        "extensions: {}\nGOOSE_MODEL: x\n",
        "extensions:\n  x:\n    cmd: x\n  # about x\nother: 1\n",
        "extensions:\n  x:\n    cmd: x",
        "extensions:\n  x:\n    cmd: x\n    args:\n    - a\n# trailing\n",
    ],
)
def test_add_then_remove_gives_back_every_byte(original):
    added = edit(original, {"d": ENTRY})
    assert edit(added, {"d": None}) == original


@pytest.mark.parametrize("original", ["", "GOOSE_MODEL: x", "GOOSE_MODEL: x\n", "# only a comment\n"])
def test_a_key_projector_created_goes_with_its_last_entry(original):
    added = edit(original, {"d": ENTRY})
    assert parse("yaml", added, "f").without_key(KEY) == original


def test_replace_rewrites_the_pair_where_it_stands():
    before = "extensions:\n  d:\n    uri: https://old\n  z:\n    cmd: z\n"
    assert edit(before, {"d": {"uri": "https://new"}}) == "extensions:\n  d:\n    uri: https://new\n  z:\n    cmd: z\n"


def test_the_last_entry_removed_leaves_an_empty_mapping_not_a_null():
    text = edit("extensions:\n  d:\n    cmd: x\n# after\n", {"d": None})
    assert text == "extensions: {}\n# after\n"
    assert parse("yaml", text, "f").servers(KEY) == {}


def test_scalars_are_quoted_only_where_yaml_would_misread_them():
    entry = {"args": ["yes", "1", "a: b", "- x", "#c", "https://h/p?kbs=a,b", "${T}", "--flag", "x #y", "it's"], "on": None}
    text = edit("", {"d": entry})
    assert parse("yaml", text, "f").servers(KEY) == {"d": entry}
    assert "- https://h/p?kbs=a,b\n" in text and "- --flag\n" in text and "- ${T}\n" in text
    assert '- "yes"\n' in text and '"on": null' in text  # booleans to a YAML 1.1 reader


def test_line_breaks_and_controls_in_a_value_read_back_as_written():
    """Found by the property test (tests/compile/test_hostile.py): a folder named ":\r" made the
    plain-scalar check itself fail to parse, and U+2028 (a line break to a YAML 1.1 reader) was
    written bare, or raw inside quotes, and read back folded."""
    entry = {"args": ["/m/:\r/projector.yaml", "/b/\u2028/projector", "a\x85b", "tab\there", "\ufeffx"]}
    text = edit("", {"d": entry})
    assert parse("yaml", text, "f").servers(KEY) == {"d": entry}
    assert "\u2028" not in text and "\x85" not in text and "\r" not in text


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        pytest.param("extensions:\n  a:\n    cmd: x\n  a:\n    cmd: y\n", "config.yaml:4:3", 'duplicate key "a"', id="duplicate"),
        pytest.param("a: [1\n", "config.yaml:2:1", "not valid YAML", id="syntax"),
        pytest.param("- a\n- b\n", "config.yaml:1:1", "expected a mapping", id="a-list"),
    ],
)
def test_a_file_the_client_cannot_read_is_refused_with_its_place(text, where, message):
    with pytest.raises(DocumentError) as raised:
        parse("yaml", text, "config.yaml")
    assert str(raised.value).startswith(where) and message in str(raised.value)


def test_an_inline_mapping_with_entries_is_refused_not_rewritten():
    with pytest.raises(DocumentError) as raised:
        edit("extensions: {x: {cmd: x}}\n", {"d": ENTRY})
    assert "written inline" in str(raised.value)


def test_an_entry_given_back_into_a_mapping_indented_anew_since_is_written_in_its_indentation():
    """The client rewrote its file while projector's entry was there (two spaces where there were
    four): the entry's old lines would not be one entry there, so its values are written anew."""
    from projector.compile.documents.base import Verbatim

    kept = Verbatim({"cmd": "npx", "enabled": True}, "    fs:\n      cmd: npx # mine\n      enabled: true\n")
    now = "extensions:\n  fs:\n    cmd: /usr/bin/projector\n  other:\n    enabled: true\n"
    assert parse("yaml", now, "f").edited(KEY, {"fs": kept}) == "extensions:\n  fs:\n    cmd: npx\n    enabled: true\n  other:\n    enabled: true\n"
