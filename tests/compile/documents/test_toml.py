"""TOML (Codex) edits: one table per entry, set off by one blank line, everything else kept."""

from __future__ import annotations

import tomllib

import pytest

from projector.compile.documents import Verbatim, parse
from projector.compile.documents.toml import tomlkit_table, written_table
from projector.core.errors import DocumentError

KEY = ("mcp_servers",)
ENTRY = {"command": "/p", "args": ["mcp", "--provider", "d"], "env_vars": ["T"]}
BLOCK = '[mcp_servers.d]\ncommand = "/p"\nargs = ["mcp", "--provider", "d"]\nenv_vars = ["T"]\n'


def edit(text: str, edits: dict) -> str:
    return parse("toml", text, "config.toml").edited(KEY, edits)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param("", BLOCK, id="empty"),
        pytest.param('model = "o3"\n', 'model = "o3"\n\n' + BLOCK, id="no-servers"),
        pytest.param('model = "o3"', 'model = "o3"\n\n' + BLOCK.rstrip("\n"), id="no-final-newline"),
        pytest.param('[mcp_servers.x]\ncommand = "x"\n\n[tui]\nn = 1\n',
                     '[mcp_servers.x]\ncommand = "x"\n\n' + BLOCK + '\n[tui]\nn = 1\n', id="after-the-last-server"),
        pytest.param('[mcp_servers.x]\ncommand = "x"\n# about tui\n[tui]\n',
                     '[mcp_servers.x]\ncommand = "x"\n\n' + BLOCK + '# about tui\n[tui]\n', id="comment-stays-with-next-table"),
        pytest.param('a = 1\r\n', 'a = 1\r\n\r\n' + BLOCK.replace("\n", "\r\n"), id="crlf"),
    ],
)
def test_add(before, after):
    assert edit(before, {"d": ENTRY}) == after


@pytest.mark.parametrize(
    "original",
    [
        '[mcp_servers.x]\ncommand = "x"\n\n[tui]\nn = 1\n',
        'model = "o3"',
        "",
        '# only a comment\n',
        '[mcp_servers.x]\ncommand = "x"\n# about tui\n[tui]\n',
    ],
)
def test_add_then_remove_gives_back_every_byte(original):
    added = edit(original, {"d": ENTRY})
    assert edit(added, {"d": None}) == original


def test_replace_rewrites_the_table_where_it_stands():
    before = '[mcp_servers.d]\nurl = "https://old"\n\n[mcp_servers.z]\ncommand = "z"\n'
    assert edit(before, {"d": {"url": "https://new"}}) == '[mcp_servers.d]\nurl = "https://new"\n\n[mcp_servers.z]\ncommand = "z"\n'


def test_every_piece_of_a_user_spelled_entry_is_removed():
    before = (
        '[mcp_servers.d]\ncommand = "a"\n\n[mcp_servers.keep]\ncommand = "k"\n\n'
        '[mcp_servers.d.env]\nK = "v"\n\n[mcp_servers.d.tools.search]\napproval_mode = "approve"\n\n[tui]\nn = 1\n'
    )
    after = edit(before, {"d": None})
    assert after == '[mcp_servers.keep]\ncommand = "k"\n\n[tui]\nn = 1\n'


def test_an_entry_spelled_as_a_key_of_the_servers_table():
    before = '[mcp_servers]\nd = { command = "a" }\nkeep = { command = "k" }\n'
    assert edit(before, {"d": None}) == '[mcp_servers]\nkeep = { command = "k" }\n'
    assert edit(before, {"d": {"command": "b"}}) == '[mcp_servers]\nkeep = { command = "k" }\n\n[mcp_servers.d]\ncommand = "b"\n'


def test_quoted_and_dotted_names_are_found():
    before = '[mcp_servers."d"]\ncommand = "x"\n\n[other]\nmcp_servers = 1\n'
    assert parse("toml", before, "c").servers(KEY) == {"d": {"command": "x"}}
    assert edit(before, {"d": None}) == '[other]\nmcp_servers = 1\n'


def test_nested_values_stay_inline_in_one_table():
    assert edit("", {"d": {"command": "/p", "env": {"A": "b"}}}) == '[mcp_servers.d]\ncommand = "/p"\nenv = {A = "b"}\n'


def test_malformed_toml_names_line_and_column():
    with pytest.raises(DocumentError) as raised:
        parse("toml", 'a = 1\n[mcp_servers\n', "config.toml")
    assert str(raised.value).startswith("config.toml:2:13: not valid TOML:")


def test_servers_as_one_inline_table_is_refused_clearly():
    with pytest.raises(DocumentError, match=r"config.toml:1:1: mcp_servers is one inline table"):
        edit('mcp_servers = { x = { command = "x" } }\n', {"d": ENTRY})


def test_two_tables_removed_together_at_the_top():
    before = '[mcp_servers.a]\nurl = "x"\n\n[mcp_servers.b]\nurl = "y"\n\n[tui]\nn = 1\n'
    assert edit(before, {"a": None, "b": None}) == '[tui]\nn = 1\n'


def _every_character_kind() -> list[str]:
    import random

    chosen = random.Random(19)
    alphabet = [chr(c) for c in range(0x80)] + ["ü", "✓", "\u2028", "\ud7ff", "😀", "\u00a0", "\ufeff"]
    return ["", "plain", 'quote " and back \\ slash', "tab\tnew\nline\r\f\b", "\x00\x1b\x7f"] + [
        "".join(chosen.choice(alphabet) for _ in range(chosen.randrange(1, 12))) for _ in range(300)
    ]


def test_tables_are_spelled_as_tomlkit_spells_them():
    """What a sync writes into a TOML file does not depend on whether tomlkit wrote it."""
    texts = _every_character_kind()
    values = [
        {"command": "/usr/local/bin/projector", "args": ["mcp", "--provider", "docs"], "env_vars": ["DOCS_TOKEN"]},
        {"url": "https://kb.example.com/mcp?kbs=a,b", "bearer_token_env_var": "T", "enabled": True, "timeout": 300},
        {"env": {"A": "x", "B.c": "y"}, "empty": {}, "none": [], "nested": {"deep": {"er": [1, -2, False]}}},
        {"lists": [["a", "b"], [], [["c"]]], "big": 2**70, "off": False},
        {},
    ] + [{text: text, "list": [text, text], "table": {text or "k": text}} for text in texts]
    cases = [(key, name, value) for key, name in [(("mcp_servers",), "docs"), (("a.b", "c d"), "my.server"), ((), "top"), (("x",), "ü")]
             for value in values]
    cases += [(("mcp_servers",), text, value) for text in texts if text for value in values[:3]]
    written = 0
    for key, name, value in cases:
        mine = written_table(key, name, value)
        if mine is not None:
            assert mine == tomlkit_table(key, name, value), (key, name, value)
            written += 1
    assert written == len(cases) - 4, "only the value with an empty key, under each of the four names, is left to tomlkit"
    for unwritten in ({"x": 1.5}, {"t": [{"a": 1}]}, {"": 1}, {"x": None}):
        assert written_table(("s",), "n", unwritten) is None


def test_an_error_at_the_end_of_the_file_has_a_line_and_column():
    """tomllib says "(at end of document)" for an unclosed array: the place is the file's end."""
    with pytest.raises(DocumentError) as raised:
        parse("toml", 'a = 1\nx = [1, 2\n', "~/.codex/config.toml")
    assert str(raised.value) == "~/.codex/config.toml:2:10: not valid TOML: Unclosed array (at the end of the file)"


def test_a_value_the_spelling_does_not_know_is_written_by_tomlkit():
    """A float, or a list of tables, is none of written_table's: tomlkit writes that table, and
    the entry reads back as given."""
    import tomllib

    entry = {"command": "/p", "startup_timeout_sec": 1.5, "tools": [{"name": "a"}]}
    added = edit('model = "o3"\n', {"d": entry})
    assert added == 'model = "o3"\n\n' + tomlkit_table(KEY, "d", entry)
    assert tomllib.loads(added)["mcp_servers"]["d"] == entry


@pytest.mark.parametrize(
    ("original", "name"),
    [
        pytest.param('# mine\n[mcp_servers.fs]\ncommand = "npx"\n', "fs", id="alone, no blank line before"),
        pytest.param('# mine\n\n[mcp_servers.fs]\ncommand = "npx"\n', "fs", id="alone, a blank line before"),
        pytest.param('[mcp_servers.a]\ncommand = "a"\n[mcp_servers.fs]\ncommand = "npx"\n', "fs", id="after another, no blank line"),
        pytest.param('[mcp_servers.a]\ncommand = "a"\n\n[mcp_servers.fs]\ncommand = "npx"\n', "fs", id="after another, a blank line"),
    ],
)
def test_an_entry_taken_out_and_given_back_is_spaced_as_it_was(original, name):
    """An entry a sync took out (its original kept, with where it stood) and later gave back,
    when the file holds nothing else under the key, or the entry it followed: a table the user
    wrote with no blank line before it gets none."""
    from projector.compile.documents.base import neighbours
    from projector.compile.reconcile import given_back

    document = parse("toml", original, "config.toml")
    kept = {"value": document.servers(KEY)[name], "text": document.source_of(KEY, name), **neighbours(document, KEY, name)}
    taken_out = edit(original, {name: None})
    assert edit(taken_out, given_back(name, None, kept)) == original


@pytest.mark.parametrize(
    "original",
    [
        pytest.param('model = "o3"\n\n[mcp_servers.fs]\ncommand = "npx"\n\n[mcp_servers.fs.env]\nK = "v"\n\n[tui]\nx = 1\n', id="a sub-table"),
        pytest.param('[mcp_servers.fs]\ncommand = "npx" # mine\n# its env\n[mcp_servers.fs.env]\nK = "v"\n# about tui\n[tui]\n',
                     id="a comment between its tables"),
        pytest.param('[mcp_servers.fs]\ncommand = "npx"\n\n# its tools\n\n[mcp_servers.fs.tools.a]\nenabled = false\n\n'
                     '[mcp_servers.b]\ncommand = "b"\n', id="a comment set off by blank lines"),
    ],
)
def test_an_entry_replaced_then_given_back_as_its_text_is_every_byte(original):
    """`projector import` keeps an entry's text, the sync writes projector's entry in its place, and
    `projector remove` puts that text back: with its sub-tables and the comments among them."""
    from projector.compile.documents.base import Verbatim, neighbours

    document = parse("toml", original, "config.toml")
    kept = Verbatim(document.servers(KEY)["fs"], document.source_of(KEY, "fs"), **neighbours(document, KEY, "fs"))
    synced = parse("toml", edit(original, {"fs": ENTRY}), "config.toml")
    assert synced.servers(KEY)["fs"] == ENTRY
    assert synced.edited(KEY, {"fs": kept}) == original


@pytest.mark.parametrize(
    "original",
    [
        pytest.param('model = "o3"\n\n[mcp_servers.fs]\ncommand = "npx"\n\n[tui]\nx = 1\n', id="set off both sides"),
        pytest.param('model = "o3"\n[mcp_servers.fs]\ncommand = "npx"\n[tui]\nx = 1\n', id="set off neither side"),
        pytest.param('model = "o3"\n\n[mcp_servers.fs]\ncommand = "npx"\n\n# the interface\n[tui]\nx = 1\n', id="a comment over the next table"),
        pytest.param('model = "o3"\n\n\n[mcp_servers.fs]\ncommand = "npx"\n\n\n[tui]\nx = 1\n', id="two blank lines each side"),
        pytest.param('model = "o3"\n\n[mcp_servers.fs]\ncommand = "npx"\n# its env\n[mcp_servers.fs.env]\nK = "v"\n# after it\n\n[tui]\nx = 1\n',
                     id="comments inside and after it"),
    ],
)
def test_the_only_entry_taken_out_and_given_back_stands_where_it_stood(original):
    """The only entry under the key (another name's entry stood in for it, at the file's end):
    given back before the table that followed it, not at the end of the file."""
    from projector.compile.documents.base import Verbatim, neighbours

    document = parse("toml", original, "config.toml")
    kept = Verbatim(document.servers(KEY)["fs"], document.source_of(KEY, "fs"), **neighbours(document, KEY, "fs"))
    assert edit(edit(original, {"fs": None}), {"fs": kept}) == original


STATE = ("hooks", "state")
TRUST = '[hooks.state."/h.json:stop:0:0"]\ntrusted_hash = "sha256:a"\n# mine\nenabled=false  # off\n'


@pytest.mark.parametrize(
    ("text", "keys", "written"),
    [
        pytest.param(TRUST, {"trusted_hash": "sha256:b"}, TRUST.replace(":a", ":b"), id="in-place"),
        pytest.param(TRUST, {"trusted_hash": None}, TRUST.replace('trusted_hash = "sha256:a"\n', ""), id="taken-out"),
        pytest.param('[hooks.state."/h.json:stop:0:0"]\nenabled = false\n\n[tui]\n', {"trusted_hash": "sha256:b"},
                     '[hooks.state."/h.json:stop:0:0"]\nenabled = false\ntrusted_hash = "sha256:b"\n', id="added-after-theirs"),
        pytest.param('[hooks.state."/h.json:stop:0:0"]\r\nenabled = false', {"trusted_hash": "sha256:b"},
                     '[hooks.state."/h.json:stop:0:0"]\r\nenabled = false\r\ntrusted_hash = "sha256:b"', id="no-final-newline"),
    ],
)
def test_some_keys_of_a_table_are_written_and_every_other_byte_stays(text, keys, written):
    document = parse("toml", text, "config.toml")
    assert document.with_keys(STATE, "/h.json:stop:0:0", keys) == written
    value = tomllib.loads(written)["hooks"]["state"]["/h.json:stop:0:0"]
    edited = document.edited(STATE, {"/h.json:stop:0:0": Verbatim(value, written)})
    assert edited == text.replace(document.source_of(STATE, "/h.json:stop:0:0"), written)


@pytest.mark.parametrize("text", [
    pytest.param('[hooks.state."/h.json:stop:0:0"]\ntrusted_hash.x = 1\n', id="dotted"),
    pytest.param('[hooks.state."/h.json:stop:0:0"]\nenabled = false\n[hooks.state."/h.json:stop:0:0".more]\na = 1\n', id="sub-table"),
])
def test_a_table_not_of_plain_keys_is_written_whole(text):
    assert parse("toml", text, "config.toml").with_keys(STATE, "/h.json:stop:0:0", {"trusted_hash": "sha256:b"}) is None
