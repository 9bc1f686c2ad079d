"""A client for the MCP conformance harness: it drives `projector mcp` over stdio.

The harness runs ``python drive_bridge.py <scenario URL>``; this writes a model whose provider is
that URL (unbound: every KB, so the URL is used as it is), starts the bridge with the official
MCP client, initializes, lists the tools and calls each of them, then ends the session.
"""

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from mcp import Client, StdioServerParameters

ARGUMENTS = {"add_numbers": {"a": 1, "b": 2}}


async def main(url: str) -> None:
    with tempfile.TemporaryDirectory() as home:
        model = Path(home) / "projector.yaml"
        model.write_text(f"version: 1\nproviders:\n  scenario:\n    url: {url}\n")
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "projector", "mcp", "--provider", "scenario", "--config", str(model)],
            env={"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            cwd=home,
        )
        async with Client(params, mode="legacy") as client:
            tools = await client.list_tools()
            for tool in tools.tools:
                await client.call_tool(tool.name, ARGUMENTS.get(tool.name, {}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[-1]))
