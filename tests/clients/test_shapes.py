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
DOCUMENTED = ("cursor", "windsurf", "antigravity", "claude-desktop", "lmstudio", "junie", "factory", "copilot-jetbrains", "rovodev", "iflow")
# Entry structs transcribed from the clients' source (client-structs.schema.json names each file).
STRUCTS = ("roo", "kimi", "continue", "vibe", "mcphub", "kilo")

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
    if client.create is None:  # a client that writes its file first: start from the one it writes
        client.global_file(environ).parent.mkdir(parents=True, exist_ok=True)
        client.global_file(environ).write_text(next((paths.FIXTURES / "existing").glob(f"{client_id}.*")).read_text())
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


def _entries(client_id: str, value: dict) -> list:
    entries = value[clients.registry()[client_id].servers_key[0]]
    return list(entries.values()) if isinstance(entries, dict) else list(entries)  # a list of named tables as it is


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize(("client_id", "schema_file"), [(c, "documented-shapes.schema.json") for c in DOCUMENTED]
                         + [(c, "client-structs.schema.json") for c in STRUCTS])
def test_what_projector_writes_has_the_clients_shape(client_id, schema_file, scenario, tmp_path):
    value, _ = _written(client_id, scenario, tmp_path)
    schema = json.loads((SCHEMAS / schema_file).read_text())
    validator = jsonschema.Draft202012Validator({"$ref": f"#/$defs/{client_id}", **schema})
    entries = _entries(client_id, value)
    assert entries, "an entry was written"
    for entry in entries:
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
    structs = json.loads((SCHEMAS / "client-structs.schema.json").read_text())
    judge = lambda client: jsonschema.Draft202012Validator({"$ref": f"#/$defs/{client}", **structs})  # noqa: E731
    assert not judge("roo").is_valid({"url": "https://h/mcp"}), "Roo Code refuses a url without its type"
    assert not judge("kimi").is_valid({"transport": "http", "url": "https://h", "bearerTokenEnvVar": ""}), "a named variable"
    assert not judge("continue").is_valid({"command": "x"}), "a Continue entry has its name"
    assert not judge("vibe").is_valid({"name": "a", "command": "x"}), "a Vibe entry names its transport"
    assert not judge("mcphub").is_valid({"command": "x", "url": "https://h"}), "mcphub.nvim: stdio and url do not mix"
    assert not judge("kilo").is_valid({"type": "local", "command": "x"}), "Kilo's command is one array"
    assert not judge("roo").is_valid({"command": "x", "headers": {}}), "no headers on a stdio entry"
    assert not jsonschema.Draft202012Validator({"$ref": "#/$defs/copilot-jetbrains", **documented}).is_valid(
        {"type": "http", "url": "https://h", "headers": {}}), "Copilot for JetBrains takes headers under requestInit"
