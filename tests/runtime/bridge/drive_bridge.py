"""A client for the MCP conformance harness: it drives `projector mcp` over stdio.

The harness runs ``python drive_bridge.py [--listen] <scenario URL>``; this writes a model whose
provider is that URL (unbound: every KB, so the URL is used as it is; ``--listen``: the provider's
``listen`` setting on), starts the bridge with the official MCP client, initializes, lists the
tools and calls each of them, then ends the session. An elicitation is accepted with the
defaults its schema gives (what SEP-1034 asks of a client). A failure prints one line and exits 1.
"""

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult

ARGUMENTS = {"add_numbers": {"a": 1, "b": 2}}


async def accept_defaults(_context, params) -> ElicitResult:
    properties = (getattr(params, "requested_schema", None) or {}).get("properties", {})
    return ElicitResult(action="accept", content={name: spec["default"] for name, spec in properties.items() if "default" in spec})


async def main(url: str, listen: bool) -> None:
    with tempfile.TemporaryDirectory() as home:
        model = Path(home) / "projector.yaml"
        model.write_text(f"version: 1\nproviders:\n  scenario:\n    url: {url}\n    listen: {str(listen).lower()}\n    timeout: 20\n")
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "projector", "mcp", "--provider", "scenario", "--config", str(model)],
            env={"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            cwd=home,
        )
        async with Client(params, mode="legacy", elicitation_callback=accept_defaults) as client:
            tools = await client.list_tools()
            for tool in tools.tools:
                await client.call_tool(tool.name, ARGUMENTS.get(tool.name, {}))


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[-1], "--listen" in sys.argv[1:-1]))
    except BaseException as failure:  # noqa: BLE001 - one line for the harness's log
        while isinstance(failure, BaseExceptionGroup):  # anyio wraps what a task raised
            failure = failure.exceptions[0]
        if not isinstance(failure, MCPError):
            raise
        print(f"drive_bridge: {failure}", file=sys.stderr)
        sys.exit(1)
