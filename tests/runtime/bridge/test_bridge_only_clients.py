"""A client whose file takes no remote entries (its descriptor says `remote: none`) gets the bridge
for every provider: the entry `projector sync` writes, started as the client starts it, proxies
an unbound provider to its URL with the provider's default set and token. A provider that signs
in with OAuth goes through the bridge too (one `projector login` serves it)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

from conftest import TOKEN
from mcp import Client, StdioServerParameters


def test_an_unbound_provider_reaches_its_url_with_its_default_set_through_the_bridge(kb_server, tmp_path):
    server = kb_server()
    home, bin_folder, scratch = tmp_path / "home", tmp_path / "bin", tmp_path / "scratch"
    for folder in (home, bin_folder, scratch):
        folder.mkdir()
    launcher = bin_folder / "projector"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} -m projector \"$@\"\n")
    launcher.chmod(0o755)
    config = home / ".config" / "projector" / "projector.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(
        "version: 1\nclients: [claude-desktop]\nproviders:\n"
        f"  docs:\n    url: {server.url}\n    token_env: DOCS_TOKEN\n    kbs: [handbook, api-a]\n    default: [handbook]\n"
        f"  signin:\n    url: {server.url}/oauth\n    oauth: true\n"
    )
    env = {"HOME": str(home), "PATH": f"{bin_folder}:/usr/bin:/bin", "DOCS_TOKEN": TOKEN}
    done = subprocess.run([sys.executable, "-m", "projector", "sync"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "signin" not in done.stderr

    entries = json.loads((home / ".config" / "Claude" / "claude_desktop_config.json").read_text())["mcpServers"]
    assert list(entries) == ["docs", "signin"]
    assert entries["signin"] == {"command": str(launcher), "args": ["mcp", "--provider", "signin"]}
    entry = entries["docs"]
    assert entry == {"command": str(launcher), "args": ["mcp", "--provider", "docs"]}

    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env, cwd=str(scratch))

    async def tools():
        async with Client(params) as client:
            return await client.list_tools()

    listed = asyncio.run(tools())
    assert any(t.name == "search" for t in listed.tools)
    assert {r["query"] for r in server.requests()} == {"kbs=handbook"}
    assert all(r["auth"] == f"Bearer {TOKEN}" for r in server.requests())
