"""Start-up without work (issue 14): what a bridge start imports, read with ``-X importtime``.
A warm start (the model cache valid) reads no YAML and no schema, sets up no TLS for http, and
starts no thread; a start after a model edit parses the YAML but still imports no jsonschema."""

from __future__ import annotations

import subprocess
import sys

import pytest
from test_bridge import INIT, Layout

HEAVY = {"ruamel.yaml", "jsonschema", "_ssl", "threading", "inspect", "dataclasses", "typing", "httpx", "typer", "jinja2", "tomlkit", "ctypes"}


def imported(layout: Layout, folder: str, env: dict) -> tuple[set[str], str]:
    done = subprocess.run([sys.executable, "-X", "importtime", *layout.command()[1:]], cwd=layout.root / folder, env=env,
                          input=(__import__("json").dumps(INIT) + "\n").encode(), capture_output=True, timeout=60)
    names = {line.split("|")[2].strip() for line in done.stderr.decode().splitlines() if line.startswith("import time:") and "|" in line}
    return names, done.stdout.decode()


@pytest.mark.parametrize("folder", ["work/a", "work/a/vendor"])
def test_a_warm_start_imports_what_the_session_needs(kb_server, tmp_path, folder):
    server = kb_server()
    layout = Layout(tmp_path, server.url)
    env = dict(layout.env, XDG_STATE_HOME=str(tmp_path / "state"))
    imported(layout, folder, env)  # fills the model cache
    names, reply = imported(layout, folder, env)
    assert '"result"' in reply
    assert not names & HEAVY, sorted(names & HEAVY)
    assert ("http.client" in names) == (folder == "work/a"), "the local (no KB) session needs no HTTP"


def test_a_start_after_a_model_edit_checks_it_without_jsonschema(kb_server, tmp_path):
    server = kb_server()
    layout = Layout(tmp_path, server.url)
    env = dict(layout.env, XDG_STATE_HOME=str(tmp_path / "state"))
    imported(layout, "work/a", env)
    layout.config.write_text(layout.config.read_text() + "# edited\n")
    names, reply = imported(layout, "work/a", env)
    assert '"result"' in reply
    assert "ruamel.yaml" in names and not names & (HEAVY - {"ruamel.yaml", "typing"}), sorted(names & HEAVY)  # ruamel imports typing


def oauth_layout(tmp_path, url: str) -> tuple[Layout, dict]:
    layout = Layout(tmp_path, url)
    layout.config.write_text(layout.config.read_text().replace("token_env: DOCS_TOKEN", "oauth: true"))
    env = dict(layout.env, XDG_STATE_HOME=str(tmp_path / "state"))
    del env["DOCS_TOKEN"]
    return layout, env


def test_an_oauth_provider_starts_with_the_stored_token_and_without_the_sdk(kb_server, tmp_path):
    """The token `projector login` stored is read from the state folder's file; neither the MCP
    SDK, pydantic nor an HTTP library beyond http.client is imported for it."""
    from servers import TOKEN

    from projector.core import tokenstore

    server = kb_server()
    layout, env = oauth_layout(tmp_path, server.url)
    tokenstore.write(str(tmp_path / "state" / "projector"), "docs", tokenstore.Tokens(access_token=TOKEN, expires_at=None))
    imported(layout, "work/a", env)
    names, reply = imported(layout, "work/a", env)
    assert '"result"' in reply and '"error"' not in reply
    assert not names & (HEAVY | {"mcp", "pydantic", "httpx2", "anyio"}), sorted(names & (HEAVY | {"mcp", "pydantic", "httpx2", "anyio"}))
    assert {r["auth"] for r in server.requests()} == {f"Bearer {TOKEN}"}


def test_an_oauth_provider_not_signed_in_says_to_run_projector_login(kb_server, tmp_path):
    server = kb_server()
    layout, env = oauth_layout(tmp_path, server.url)
    done = subprocess.run(layout.command(), cwd=layout.root / "work/a", env=env, capture_output=True, timeout=60,
                          input=(__import__("json").dumps(INIT) + "\n").encode())
    assert "not signed in to docs: run `projector login docs`" in done.stderr.decode()
    reply = __import__("json").loads(done.stdout.decode().splitlines()[0])  # initialize answered here: the client keeps the server
    assert "projector: not signed in to docs: run `projector login docs`" in reply["result"]["instructions"], reply
    assert server.requests() == [], "nothing reaches the provider without a sign-in"
