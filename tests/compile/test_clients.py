"""Client descriptors: valid data, files where each client looks, entries each client accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from projector.compile.clients import expand, registry, selected
from projector.compile.plan import HttpServer, StdioServer

BRIDGE = StdioServer("/usr/local/bin/projector", ("mcp", "--provider", "docs"), ("DOCS_TOKEN",))
HTTP = HttpServer("https://kb.example.com/mcp?kbs=a,b", "DOCS_TOKEN")


def test_six_descriptors_load_and_validate():
    assert sorted(registry()) == ["claude-code", "codex", "copilot", "crush", "kiro", "opencode"]


@pytest.mark.parametrize(
    ("client", "environ", "expected"),
    [
        ("claude-code", {"HOME": "/h"}, "/h/.claude.json"),
        ("claude-code", {"HOME": "/h", "CLAUDE_CONFIG_DIR": "/c"}, "/c/.claude.json"),
        ("codex", {"HOME": "/h"}, "/h/.codex/config.toml"),
        ("codex", {"HOME": "/h", "CODEX_HOME": "/x"}, "/x/config.toml"),
        ("opencode", {"HOME": "/h"}, "/h/.config/opencode/opencode.json"),
        ("opencode", {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, "/x/opencode/opencode.json"),
        ("crush", {"HOME": "/h"}, "/h/.config/crush/crush.json"),
        ("crush", {"HOME": "/h", "CRUSH_GLOBAL_CONFIG": "/g"}, "/g/crush.json"),
        ("kiro", {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, "/h/.kiro/settings/mcp.json"),
        ("copilot", {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, "/h/.copilot/mcp-config.json"),
        ("copilot", {"HOME": "/h", "COPILOT_HOME": "/p"}, "/p/mcp-config.json"),
    ],
)
def test_global_file_follows_relocating_variables(client, environ, expected):
    assert str(registry()[client].global_file(environ)) == expected


def test_opencode_edits_the_file_that_exists(tmp_path):
    folder = tmp_path / ".config" / "opencode"
    folder.mkdir(parents=True)
    (folder / "opencode.jsonc").write_text("{}")
    assert registry()["opencode"].global_file({"HOME": str(tmp_path)}) == folder / "opencode.jsonc"


def test_expand_ignores_unset_or_empty_variables():
    assert expand("$NOPE/x", {"NOPE": ""}) is None
    assert expand("~", {"HOME": "/h"}) == Path("/h")


def test_clients_found_on_this_machine(tmp_path):
    (tmp_path / ".codex").mkdir()
    found = selected(None, {"HOME": str(tmp_path)}, which=lambda b: "/bin/copilot" if b == "copilot" else None)
    assert [c.id for c in found] == ["codex", "copilot"]
    assert [c.id for c in selected(("kiro", "codex"), {"HOME": str(tmp_path)})] == ["codex", "kiro"]


def test_entries_in_every_dialect(snapshot):
    rendered = {c.id: {"bridge": c.render(BRIDGE), "http": c.render(HTTP)} for c in registry().values()}
    assert rendered == snapshot


def test_secrets_are_references_only():
    for client in registry().values():
        text = json.dumps([client.render(BRIDGE), client.render(HTTP)])
        assert "DOCS_TOKEN" in text  # by name, in the client's own syntax


def test_crush_entries_pass_crushs_own_schema(reference):
    import jsonschema

    schema = json.loads((reference / "crush-schema.json").read_text())
    crush = registry()["crush"]
    document = {"mcp": {"docs": crush.render(BRIDGE), "web": crush.render(HTTP)}}
    jsonschema.Draft202012Validator(schema).validate(document)


def test_kiro_entries_have_the_documented_shape():
    # kiro.dev/docs/cli/mcp/configuration: local servers need command and args; remote ones a url.
    kiro = registry()["kiro"]
    local, remote = kiro.render(BRIDGE), kiro.render(HTTP)
    assert isinstance(local["command"], str) and isinstance(local["args"], list)
    assert set(local) <= {"command", "args", "env", "disabled", "autoApprove", "disabledTools", "timeout"}
    assert remote["url"].startswith("https://") and set(remote) <= {"type", "url", "headers", "oauth"}


def test_a_broken_descriptor_is_refused_with_its_place(tmp_path, monkeypatch):
    from projector.compile import clients

    bad = tmp_path / "bad.yaml"
    bad.write_text("id: bad\nname: Bad\nformat: xml\n")
    with pytest.raises(RuntimeError) as raised:
        clients.validated(bad)
    assert str(raised.value).startswith(f"{bad}: ") and "is a required property" in str(raised.value)
