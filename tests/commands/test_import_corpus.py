"""`projector import` over the real config files of the sixteen clients (../shared/corpus): every
entry lands in the model or in the report, no secret written in an entry reaches the model, and
after a sync `projector remove` gives back every file byte for byte."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import paths
import pytest
from typer.testing import CliRunner

from projector.cli import app
from projector.compile import clients, documents
from projector.compile.importing import REFERENCE, secret_argument
from projector.core.checking import looks_like_token

FOLDERS = {"claude": "claude-code", "codex": "codex", "opencode": "opencode", "crush": "crush", "kiro": "kiro", "copilot-cli": "copilot",
           "gemini": "gemini", "qwen": "qwen", "cursor": "cursor", "vscode": "vscode", "windsurf": "windsurf", "zed": "zed",
           "goose": "goose", "claude-desktop": "claude-desktop", "antigravity": "antigravity", "amp": "amp"}


def _secrets(value, url_keys: tuple[str, ...]) -> set[str]:
    """The literal values in an entry's headers, env and URL query that look like secrets."""
    found = set()
    for key in ("headers", "http_headers", "env", "environment", "envs"):
        block = value.get(key) if isinstance(value, dict) else None
        for name, text in (block or {}).items() if isinstance(block, dict) else ():
            text = str(text).removeprefix("Bearer ")
            if _looks_secret(str(name), text):
                found.add(text)
    if isinstance(value, dict):
        args = [str(a) for a in value.get("args") or [] if isinstance(value.get("args"), list)]
        found |= {arg for i, arg in enumerate(args) if secret_argument(args, i)}
        urls = [value[key] for key in url_keys if isinstance(value.get(key), str)]
        found |= {f"{name}={text}" for url in urls for name, text in parse_qsl(urlsplit(url).query) if _looks_secret(name, text)}
    return found


def _looks_secret(name: str, text: str) -> bool:
    return bool(text) and REFERENCE.match(text) is None and bool(looks_like_token(text) or re.search(r"TOKEN|SECRET|KEY|AUTH|PASSWORD", name, re.I))


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_import_then_sync_then_remove_over_every_corpus_file(corpus, folder, tmp_path):
    client = clients.registry()[FOLDERS[folder]]
    runner = CliRunner()
    for number, original in enumerate(sorted((corpus / folder).glob("*"))):
        home = tmp_path / str(number)
        (home / "bin").mkdir(parents=True)
        (home / "bin" / "projector").write_text("#!/bin/sh\n")
        (home / "bin" / "projector").chmod(0o755)
        env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_STATE_HOME": str(home / ".state"),
               "PATH": f"{home / 'bin'}:/usr/bin:/bin", "PROJECTOR_CONFIG": str(home / "projector.yaml")}
        target = client.global_file(env)
        target.parent.mkdir(parents=True, exist_ok=True)
        source = original.read_bytes()
        target.write_bytes(source)
        (home / "projector.yaml").write_text(f"version: 1\nclients: [{client.id}]\nproviders: {{}}\n")
        document = documents.parse(client.format, source.decode("utf-8"), str(original))
        entries = document.servers(client.servers_key) or {}

        imported = runner.invoke(app, ["import"], env=env, catch_exceptions=False)
        assert imported.exit_code == 0, (original, imported.output)
        model = (home / "projector.yaml").read_text()
        for name, value in entries.items():
            said = re.search(rf"^  {re.escape(name)}:$", model, re.M) or re.search(rf"(^|: ){re.escape(name)} in ", imported.output, re.M)
            assert said, f"{original.name}: entry {name} is neither in the model nor in the report"
            leaked = [s for s in _secrets(value, client.reading.url_keys) if s in model]
            assert not leaked, f"{original.name}: a secret of entry {name} is in the model"

        synced = runner.invoke(app, ["sync"], env=env, catch_exceptions=False)
        assert synced.exit_code == 0, (original, synced.output)
        removed = runner.invoke(app, ["remove"], env=env, catch_exceptions=False)
        assert removed.exit_code == 0, (original, removed.output)
        assert target.read_bytes() == source, f"{original.name}: remove gives back the file byte for byte"
        kept = home / ".state/projector/ledger.json"
        assert not kept.exists() or json.loads(kept.read_text())["files"] == {}
