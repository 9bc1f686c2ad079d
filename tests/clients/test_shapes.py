"""Clients that do not install offline, judged by their schema instead: VS Code's mcp.json schema,
Zed's and Goose's entry structs (transcribed from their source), and the documented shapes of the
closed-source ones (tests/fixtures/schemas/). Each scenario is synced into a fresh HOME, the file
is read back the way its client reads it, and every entry projector wrote must validate."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import paths
import pytest

from projector.compile import clients, documents, engine, ledger
from projector.compile.system import RealSystem
from projector.core import model

SCHEMAS = paths.FIXTURES / "schemas"
WHOLE_FILE = {"vscode": "vscode-mcp.schema.json", "zed": "zed-context-servers.schema.json", "goose": "goose-extensions.schema.json"}
DOCUMENTED = ("cursor", "windsurf", "antigravity", "claude-desktop")

SCENARIOS = {
    "bridge": "providers:\n  docs:\n    url: http://127.0.0.1:9/mcp\n    token_env: DOCS_TOKEN\nbindings:\n  /w/a:\n    docs: {kbs: [a]}\n",
    "http": "providers:\n  web:\n    url: http://127.0.0.1:9/mcp?team=x\n    token_env: WEB_TOKEN\n    default: [a, b]\n",
    "open": "providers:\n  open:\n    url: http://127.0.0.1:9/open\n",
    "local": "providers:\n  lint:\n    command: lint-mcp\n    env: {LINT_TOKEN: '${LINT_TOKEN}'}\n",
}


def _written(client_id: str, scenario: str, root: Path) -> tuple[dict, list[str]]:
    """The entries projector wrote for ``scenario``, read back from the client's file."""
    (root / "bin").mkdir(parents=True)
    launcher = root / "bin" / "projector"
    launcher.write_text("#!/bin/sh\n")
    launcher.chmod(0o755)
    environ = {"HOME": str(root / "home"), "PATH": str(root / "bin")}
    path = root / "projector.yaml"
    path.write_text("version: 1\n" + SCENARIOS[scenario])
    loaded = model.load(path, environ, tuple(clients.registry()))
    client = clients.registry()[client_id]
    outcome = engine.compute(loaded, [client], environ, ledger.Ledger(), RealSystem())
    assert outcome.problems == ()
    engine.write(outcome, ledger.Ledger())
    target = client.global_file(environ)
    document = documents.parse(client.format, target.read_text(), str(target))
    return document.servers(()), list(outcome.warnings)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("client_id", sorted(WHOLE_FILE))
def test_what_projector_writes_passes_the_clients_own_schema(client_id, scenario, tmp_path):
    value, _ = _written(client_id, scenario, tmp_path)
    schema = json.loads((SCHEMAS / WHOLE_FILE[client_id]).read_text())
    jsonschema.Draft202012Validator(schema).validate(value)
    assert value[clients.registry()[client_id].servers_key[0]], "an entry was written"


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("client_id", DOCUMENTED)
def test_what_projector_writes_has_the_documented_shape(client_id, scenario, tmp_path):
    value, _ = _written(client_id, scenario, tmp_path)
    schema = json.loads((SCHEMAS / "documented-shapes.schema.json").read_text())
    validator = jsonschema.Draft202012Validator({"$ref": f"#/$defs/{client_id}", **schema})
    entries = value[clients.registry()[client_id].servers_key[0]]
    assert entries, "an entry was written"
    for entry in entries.values():
        validator.validate(entry)


def test_the_schemas_refuse_what_the_clients_refuse():
    """The judges can fail: an entry each client would skip is refused by its schema."""
    vscode = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "vscode-mcp.schema.json").read_text()))
    assert not vscode.is_valid({"mcpServers": {}}) and not vscode.is_valid({"servers": {"a": {"command": "x", "url": "http://h"}}})
    goose = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "goose-extensions.schema.json").read_text()))
    assert not goose.is_valid({"extensions": {"a": {"enabled": True, "type": "stdio", "name": "a", "cmd": "x"}}}), "args is required"
    zed = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "zed-context-servers.schema.json").read_text()))
    assert not zed.is_valid({"context_servers": {"a": {"command": {"path": "x"}, "args": []}}}), "command is a path now"
    documented = json.loads((SCHEMAS / "documented-shapes.schema.json").read_text())
    desktop = jsonschema.Draft202012Validator({"$ref": "#/$defs/claude-desktop", **documented})
    assert not desktop.is_valid({"url": "https://h/mcp"}), "Claude Desktop skips a url entry"
