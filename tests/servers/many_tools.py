"""A stdio MCP server with many tools that records every message it receives (plain JSON-RPC,
no SDK: it starts in milliseconds, and what it saw is the proof that a hidden call never came).

Tools: ``read_<n>``, ``write_<n>`` and ``admin_<n>`` for n in 0..count/3 (``--count``, default
60), each answering ``called <name>``; ``grow`` adds ``read_new`` and ``write_new`` and sends
``notifications/tools/list_changed``. ``--page N`` pages ``tools/list`` N tools at a time (the
cursor is the next index). Every message received is appended, as JSON, to ``$MANY_TOOLS_RECORD``.
A key written twice in one object counts with its first value (as parsers that stop at the first
match do), so a test can see that what the bridge let through is what the server reads.

    python many_tools.py --count 60 --page 25
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def tool_names(count: int) -> list[str]:
    third = max(count // 3, 1)
    return [f"{kind}_{n}" for kind in ("read", "write", "admin") for n in range(third)][:count]


def first_of_each_key(pairs: list[tuple[str, object]]) -> dict:
    found: dict = {}
    for key, value in pairs:
        found.setdefault(key, value)
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--page", type=int, default=0)
    options = parser.parse_args()
    names = tool_names(options.count)
    record = os.environ.get("MANY_TOOLS_RECORD")

    def send(message: dict) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line, object_pairs_hook=first_of_each_key)
        if record:
            with open(record, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(message) + "\n")
        method, id_ = message.get("method"), message.get("id")
        if id_ is None or method is None:
            continue
        params = message.get("params") or {}
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": id_, "result": {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": "many-tools", "version": "1"}}})
        elif method == "tools/list":
            start = int(params.get("cursor") or 0)
            end = start + options.page if options.page else len(names)
            tools = [{"name": n, "description": f"the {n} tool", "inputSchema": {"type": "object"}} for n in names[start:end]]
            result: dict = {"tools": tools}
            if end < len(names):
                result["nextCursor"] = str(end)
            send({"jsonrpc": "2.0", "id": id_, "result": result})
        elif method == "tools/call":
            name = params.get("name")
            if name == "grow":
                names += ["read_new", "write_new"]
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            elif name not in names:
                send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32602, "message": f"Unknown tool: {name}"}})
                continue
            send({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": f"called {name}"}]}})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": id_, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    main()
