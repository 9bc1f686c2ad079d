"""A local (stdio) MCP server for tests, on the official MCP Python SDK: it reports where it runs.

Its one tool (named by ``--tool``, default ``report``) answers with its working folder, its
whole environment and its arguments, as JSON. When ``REPORT_SPAWN_LOG`` is set, every start
appends one line to that file, so a test can prove that a session started nothing.

    python report_server.py --tool alpha_report
"""

import json
import os
import sys

from mcp.server import MCPServer


def main() -> None:
    args = sys.argv[1:]
    tool = args[args.index("--tool") + 1] if "--tool" in args else "report"
    spawn_log = os.environ.get("REPORT_SPAWN_LOG")
    if spawn_log:
        with open(spawn_log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"pid": os.getpid(), "cwd": os.getcwd(), "tool": tool}) + "\n")
    server = MCPServer("report")

    @server.tool(name=tool)
    def report() -> str:
        """Where this server runs: its folder, environment and arguments."""
        return json.dumps({"cwd": os.getcwd(), "env": dict(os.environ), "argv": sys.argv[1:], "pid": os.getpid()})

    server.run()


if __name__ == "__main__":
    main()
