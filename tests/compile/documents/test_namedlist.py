"""Servers kept as a list of named tables (a servers key ending in "[name]"), in YAML and TOML:
an edit touches only the item it means, and add then remove gives back every byte."""

from __future__ import annotations

import pytest

from projector.compile.documents import parse
from projector.core.errors import DocumentError

YAML_KEY = ("mcpServers", "[name]")
TOML_KEY = ("mcp_servers", "[name]")
STDIO = {"name": "docs", "command": "/usr/bin/projector", "args": ["mcp", "--provider", "docs"]}
HTTP = {"name": "web", "type": "streamable-http", "url": "https://kb.example.com/mcp?kbs=a,b", "apiKey": "${{ secrets.WEB_TOKEN }}"}

YAML_FILES = {
    "indented items, comments": "name: Local\nversion: 1.0.0\nmcpServers:\n  - name: fs # mine\n    command: npx\n    args:\n      - -y\n"
                                "  # between items\n  - name: other\n    url: https://o/mcp\nafter: 1\n",
    "items at the key's column": "name: Local\nmcpServers:\n- name: fs\n  command: npx\nrules: []\n",
    "an empty flow list": "name: Local\nmcpServers: []\n",
    "no final newline": "name: Local\nmcpServers:\n  - name: fs\n    command: npx",
    "CRLF": "name: Local\r\nmcpServers:\r\n  - name: fs\r\n    command: npx\r\n",
}
TOML_FILES = {
    "tables and a sub-table": '# mine\nactive_model = "x"\n\n[[mcp_servers]]\nname = "fs" # mine\ntransport = "stdio"\ncommand = "npx"\n\n'
                              '[mcp_servers.env]\nK = "v"\n\n[[mcp_servers]]\nname = "other"\ntransport = "http"\nurl = "https://o"\n\n[tools]\nx = 1\n',
    "no servers yet": 'active_model = "x"\n',
    "no final newline": '[[mcp_servers]]\nname = "fs"\ntransport = "stdio"\ncommand = "npx"',
    "empty": "",
}


def _round_trip(fmt: str, key: tuple[str, ...], text: str, entries: dict) -> str:
    document = parse(fmt, text, "f")
    added = document.edited(key, entries)
    reread = parse(fmt, added, "f")
    assert [item["name"] for item in reread.array(key[:-1])][-len(entries):] == list(entries), "items of the list, at its end"
    assert {n: reread.servers(key)[n] for n in entries} == entries, "each entry reads back as written, its name included"
    assert {n: v for n, v in reread.servers(key).items() if n not in entries} == (document.servers(key) or {}), "the others as they were"
    back = reread.edited(key, dict.fromkeys(entries))
    if document.array(key[:-1]) is None:  # projector made the key: the sync takes it away with its last entry
        back = parse(fmt, back, "f").without_key(key)
    assert back == text
    return added


@pytest.mark.parametrize("name", sorted(YAML_FILES))
def test_a_yaml_list_takes_entries_and_gives_back_every_byte(name):
    added = _round_trip("yaml", YAML_KEY, YAML_FILES[name], {"docs": STDIO, "web": HTTP})
    assert added.startswith(YAML_FILES[name].split("mcpServers:")[0])


def test_a_yaml_item_is_written_in_the_files_own_indentation():
    added = parse("yaml", YAML_FILES["items at the key's column"], "f").edited(YAML_KEY, {"docs": STDIO})
    assert "- name: fs\n  command: npx\n- name: docs\n  command: /usr/bin/projector\n  args:\n  - mcp\n" in added


def test_a_yaml_item_is_replaced_where_it_stands():
    text = "mcpServers:\n  - name: docs\n    command: old # stale\n  - name: fs\n    command: npx\n"
    assert parse("yaml", text, "f").edited(YAML_KEY, {"docs": STDIO}) == (
        "mcpServers:\n  - name: docs\n    command: /usr/bin/projector\n    args:\n      - mcp\n      - --provider\n      - docs\n"
        "  - name: fs\n    command: npx\n")


def test_an_absent_yaml_list_is_made():
    """In a file with no sequence to copy, items sit at their key's column, as YAML writers put them."""
    assert parse("yaml", "name: Local\n", "f").edited(YAML_KEY, {"docs": STDIO}) == (
        "name: Local\nmcpServers:\n- name: docs\n  command: /usr/bin/projector\n  args:\n  - mcp\n  - --provider\n  - docs\n")


@pytest.mark.parametrize("name", sorted(TOML_FILES))
def test_a_toml_array_of_tables_takes_entries_and_gives_back_every_byte(name):
    toml_http = {"name": "web", "transport": "streamable-http", "url": "https://kb.example.com/mcp", "api_key_env": "WEB_TOKEN"}
    _round_trip("toml", TOML_KEY, TOML_FILES[name], {"docs": STDIO, "web": toml_http})


def test_a_toml_entry_is_one_table_after_the_last_one():
    added = parse("toml", TOML_FILES["tables and a sub-table"], "f").edited(TOML_KEY, {"docs": STDIO})
    assert added.endswith('url = "https://o"\n\n[[mcp_servers]]\nname = "docs"\ncommand = "/usr/bin/projector"\n'
                          'args = ["mcp", "--provider", "docs"]\n\n[tools]\nx = 1\n')


def test_a_toml_table_goes_with_its_sub_tables():
    text = TOML_FILES["tables and a sub-table"]
    assert parse("toml", text, "f").edited(TOML_KEY, {"fs": None}) == text.replace(
        '[[mcp_servers]]\nname = "fs" # mine\ntransport = "stdio"\ncommand = "npx"\n\n[mcp_servers.env]\nK = "v"\n\n', "")


# Mistral Vibe writes its default config.toml with tomli_w: an empty list is ``mcp_servers = []``
# among the top-level keys, before the tables. Vibe reads it with tomllib: items written inline are
# the same servers as [[mcp_servers]] tables.
VIBE_DEFAULT = 'active_model = "devstral-2"\nmcp_servers = []\nenable_connectors = true\n\n[[providers]]\nname = "mistral"\n'
INLINE_FILES = {
    "Vibe's default": VIBE_DEFAULT,
    "one line": 'mcp_servers = [{name = "fs", transport = "stdio", command = "npx"}]\n',
    "one per line, trailing comma": 'mcp_servers = [\n    {name = "fs", command = "npx"}, # mine\n    {name = "o", command = "x"},\n]\nx = 1\n',
    "one per line, no trailing comma": 'mcp_servers = [\n  {name = "fs", command = "npx"}\n]\n',
    "empty, with a comment": "mcp_servers = [ # none yet\n]\n",
    "CRLF": 'mcp_servers = [\r\n  {name = "fs"},\r\n]\r\n',
}


@pytest.mark.parametrize("name", sorted(INLINE_FILES))
def test_an_inline_toml_array_takes_entries_and_gives_back_every_byte(name):
    toml_http = {"name": "web", "transport": "streamable-http", "url": "https://kb.example.com/mcp", "api_key_env": "WEB_TOKEN"}
    _round_trip("toml", TOML_KEY, INLINE_FILES[name], {"docs": STDIO, "web": toml_http})


def test_vibes_default_empty_array_is_filled_where_it_stands():
    added = parse("toml", VIBE_DEFAULT, "f").edited(TOML_KEY, {"docs": STDIO})
    assert added == VIBE_DEFAULT.replace("mcp_servers = []", 'mcp_servers = [{name = "docs", command = "/usr/bin/projector", '
                                                              'args = ["mcp", "--provider", "docs"]}]')


def test_an_inline_item_is_replaced_where_it_stands_and_joins_the_arrays_layout():
    text = INLINE_FILES["one per line, trailing comma"]
    assert parse("toml", text, "f").edited(TOML_KEY, {"fs": STDIO | {"name": "fs"}, "docs": STDIO}) == (
        'mcp_servers = [\n    {name = "fs", command = "/usr/bin/projector", args = ["mcp", "--provider", "docs"]}, # mine\n'
        '    {name = "o", command = "x"},\n    {name = "docs", command = "/usr/bin/projector", args = ["mcp", "--provider", "docs"]},\n]\nx = 1\n')


def test_an_entry_listed_twice_is_not_guessed_at():
    text = "mcpServers:\n  - name: docs\n    command: a\n  - name: docs\n    command: b\n"
    with pytest.raises(DocumentError, match='entry "docs" is in the mcpServers list twice'):
        parse("yaml", text, "f").edited(YAML_KEY, {"docs": None})


def test_a_map_where_a_list_belongs_is_refused():
    with pytest.raises(DocumentError, match="is not a list"):
        parse("yaml", "mcpServers:\n  docs:\n    command: a\n", "f").servers(YAML_KEY)


# An entry as users write it, with its nested tables and comments inside: `projector import` keeps
# its text (source_of), a sync replaces it with projector's, and `projector remove` puts that text
# back (a Verbatim edit): the file as it was, byte for byte.
WRITTEN_BY_HAND = {
    "vibe, an env sub-table": ("toml", TOML_KEY, 'active_model = "x"\n\n[[mcp_servers]]\nname = "fs"\ntransport = "stdio"\ncommand = "npx"\n\n'
                               '[mcp_servers.env]\nLOG_LEVEL = "debug"\n\n[[mcp_servers]]\nname = "web"\nurl = "https://w/mcp"\n'),
    "vibe, tables not set off": ("toml", TOML_KEY, '[[mcp_servers]]\nname = "a"\ncommand = "a"\n[mcp_servers.env]\nK = "v"\n'
                                 '[[mcp_servers]]\nname = "b"\ncommand = "b"\n[[mcp_servers]]\nname = "c"\ncommand = "c"\n# the end\n'),
    "vibe, an auth sub-table, last": ("toml", TOML_KEY, '[[mcp_servers]]\nname = "linear"\ntransport = "streamable-http"\n'
                                      'url = "https://mcp.linear.app/mcp"\n\n[mcp_servers.auth]\ntype = "oauth"\nscopes = ["read", "write"]\n'),
    "vibe, comments inside": ("toml", TOML_KEY, '[[mcp_servers]]\n# the files\nname = "fs"  # mine\ncommand = "npx"\n# its env\n'
                              '[mcp_servers.env]\nLOG_LEVEL = "debug"\n# after it\n\n[tools]\nx = 1\n'),
    "vibe, inline": ("toml", TOML_KEY, 'mcp_servers = [\n  { name = "fs", command = "npx" }, # mine\n  {name="o",command="x"},\n]\n'),
    "continue, comments and flow lists": ("yaml", YAML_KEY, "name: Local\nmcpServers:\n  - name: fs # mine\n    # the files\n    command: npx\n"
                                          "    args: [-y, fs]\n    env:\n      LOG_LEVEL: debug\n  - name: other\n    command: uvx\n"),
}


@pytest.mark.parametrize("name", sorted(WRITTEN_BY_HAND))
def test_an_entry_replaced_then_given_back_as_its_text_is_every_byte(name):
    from projector.compile.documents.base import Verbatim, neighbours

    fmt, key, text = WRITTEN_BY_HAND[name]
    document = parse(fmt, text, "f")
    for entry, value in document.servers(key).items():
        original = Verbatim(value, document.source_of(key, entry), **neighbours(document, key, entry))
        synced = document.edit(key, {entry: STDIO | {"name": entry}})
        assert synced.servers(key)[entry] == STDIO | {"name": entry}
        assert synced.edited(key, {entry: original}) == text, entry


WRITTEN_BY_HAND["vibe, comments inside, no final newline"] = ("toml", TOML_KEY, '[[mcp_servers]]\nname = "a"\ncommand = "a"\n\n'
                                                                '[[mcp_servers]]\nname = "fs"\ncommand = "npx"\n# its env\n'
                                                                '[mcp_servers.env]\nLOG_LEVEL = "debug"')


@pytest.mark.parametrize("name", ["continue, comments and flow lists", "vibe, an env sub-table", "vibe, tables not set off",
                                  "vibe, comments inside, no final newline"])
def test_an_entry_taken_out_then_given_back_as_its_text_stands_where_it_stood(name):
    """An entry `import` found under another name than its provider's is taken out while the
    provider's entry stands in for it; `projector remove` puts its text back beside the entry it
    followed (or preceded): the list as it was, byte for byte."""
    from projector.compile.documents.base import Verbatim, neighbours

    fmt, key, text = WRITTEN_BY_HAND[name]
    document = parse(fmt, text, "f")
    for entry, value in document.servers(key).items():  # (an inline array's item goes back at its end)
        original = Verbatim(value, document.source_of(key, entry), **neighbours(document, key, entry))
        assert document.edit(key, {entry: None}).edited(key, {entry: original}) == text, entry


@pytest.mark.parametrize("fmt,key,text", [
    pytest.param("toml", TOML_KEY, 'active_model = "x"\n\n[[mcp_servers]]\nname = "fs"\ncommand = "npx"\n\n[mcp_servers.env]\nK = "v"\n\n'
                 '[tools]\nx = 1\n', id="a TOML table before another"),
    pytest.param("yaml", YAML_KEY, "name: Local\nmcpServers:\n  - name: fs # mine\n    command: npx\nrules: []\n", id="a YAML item, indented"),
    pytest.param("toml", TOML_KEY, '[[mcp_servers]]\n# the files\nname = "fs"\ncommand = "npx"\n# its env\n[mcp_servers.env]\n'
                 'K = "v"\n# after it\n\n[tools]\nx = 1\n', id="a TOML table with comments inside and after it, first"),
])
def test_the_only_item_taken_out_and_given_back_stands_where_it_stood(fmt, key, text):
    """The list's only item (another name's entry stood in for it): given back where the list
    stood, as its text, not at the end of the file nor rendered anew."""
    from projector.compile.documents.base import Verbatim, neighbours

    document = parse(fmt, text, "f")
    original = Verbatim(document.servers(key)["fs"], document.source_of(key, "fs"), **neighbours(document, key, "fs"))
    assert document.edit(key, {"fs": None}).edited(key, {"fs": original}) == text


def test_an_item_given_back_into_a_list_indented_anew_since_is_written_in_its_indentation():
    """The client rewrote its file while projector's entry was there (items now at the key's
    column): the item's old lines would not be one item there, so its values are written anew."""
    from projector.compile.documents.base import Verbatim

    kept = Verbatim({"name": "fs", "command": "npx"}, "  - name: fs # mine\n    command: npx\n")
    now = "mcpServers:\n- name: fs\n  command: /usr/bin/projector\n- name: other\n  command: uvx\n"
    assert parse("yaml", now, "f").edited(YAML_KEY, {"fs": kept}) == "mcpServers:\n- name: fs\n  command: npx\n- name: other\n  command: uvx\n"
