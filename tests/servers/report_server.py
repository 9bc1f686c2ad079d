"""A local (stdio) MCP server for tests, on the official MCP Python SDK: it reports where it runs.

Its one tool (named by ``--tool``, default ``report``) answers with its working folder, its
whole environment, its arguments and its pid, as JSON. When ``REPORT_SPAWN_LOG`` is set, every
start appends one line to that file, so a test can prove that a session started nothing (or how
many servers a workspace's sessions started).

``--extras`` adds what a server shared by several sessions must route correctly:
- ``echo(tag)``: the tag, the pid and the request id the server saw;
- ``slow(tag, seconds, steps)``: reports progress ``steps`` times over ``seconds``; a
  cancellation is recorded in ``REPORT_EVENTS`` (with the request id the server saw);
- ``changed()``: sends ``notifications/tools/list_changed``;
- ``touch(uri)``: sends ``notifications/resources/updated`` for ``uri``;
- ``roots(tag)``: asks the client for its roots (``roots/list``) and returns them;
- ``sample(tag, delay)`` and ``ask(tag, delay)``: after ``delay`` seconds, asks the client's
  model (``sampling/createMessage``) or its user (``elicitation/create``) and returns the answer;
- resources ``memo://{name}`` that can be subscribed to (each subscribe is recorded).
``--allocate MB`` holds that many megabytes from the start (the benchmark's heavy server).

    python report_server.py --tool alpha_report
"""

import json
import os
import sys

import anyio
import mcp_types as types
from mcp.server import MCPServer
from mcp.server.mcpserver import Context


def _event(**fields) -> None:
    events = os.environ.get("REPORT_EVENTS")
    if events:
        with open(events, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(fields) + "\n")


def _extras(server: MCPServer) -> None:
    @server.tool()
    def echo(tag: str, ctx: Context) -> str:
        """The tag, this server's pid and the request id it saw."""
        return json.dumps({"tag": tag, "pid": os.getpid(), "request_id": ctx.request_id})

    @server.tool()
    async def slow(tag: str, seconds: float, steps: int, ctx: Context) -> str:
        """Progress ``steps`` times over ``seconds``; records its cancellation."""
        _event(started=tag, request_id=ctx.request_id)
        try:
            for step in range(steps):
                await ctx.report_progress(step + 1, steps, tag)
                await anyio.sleep(seconds / max(steps, 1))
        except anyio.get_cancelled_exc_class():
            _event(cancelled=tag, request_id=ctx.request_id)
            raise
        return json.dumps({"tag": tag, "done": True})

    @server.tool()
    async def changed(ctx: Context) -> str:
        """Tell every client the tool list changed."""
        await ctx.session.send_tool_list_changed()
        return "sent"

    @server.tool()
    async def touch(uri: str, ctx: Context) -> str:
        """Tell the subscribers of ``uri`` it changed."""
        await ctx.session.send_resource_updated(uri)
        return "sent"

    @server.tool()
    async def roots(tag: str, ctx: Context) -> str:
        """The client's roots, asked of it while this call is in flight."""
        listed = await ctx.session.list_roots()
        return json.dumps({"tag": tag, "roots": [str(root.uri) for root in listed.roots]})

    @server.tool()
    async def sample(tag: str, delay: float, ctx: Context) -> str:
        """The client's model's answer to ``tag``, asked ``delay`` seconds into this call."""
        await anyio.sleep(delay)
        asked = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=tag))
        answer = await ctx.session.create_message([asked], max_tokens=16)
        return json.dumps({"tag": tag, "answer": answer.content.text})

    @server.tool()
    async def ask(tag: str, delay: float, ctx: Context) -> str:
        """The client's user's answer to ``tag``, asked ``delay`` seconds into this call."""
        await anyio.sleep(delay)
        schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        answer = await ctx.session.elicit(tag, schema)
        return json.dumps({"tag": tag, "answer": (answer.content or {}).get("answer")})

    @server.resource("memo://{name}")
    def memo(name: str) -> str:
        return f"memo {name}"

    async def subscribe(ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        _event(subscribed=str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        _event(unsubscribed=str(params.uri))
        return types.EmptyResult()

    server._lowlevel_server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    server._lowlevel_server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)


def main() -> None:
    args = sys.argv[1:]
    tool = args[args.index("--tool") + 1] if "--tool" in args else "report"
    held = bytearray(int(args[args.index("--allocate") + 1]) << 20) if "--allocate" in args else b""
    for index in range(0, len(held), 4096):  # touched: resident, not only reserved
        held[index] = 1
    spawn_log = os.environ.get("REPORT_SPAWN_LOG")
    if spawn_log:
        with open(spawn_log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"pid": os.getpid(), "cwd": os.getcwd(), "tool": tool}) + "\n")
    server = MCPServer("report")

    @server.tool(name=tool)
    def report() -> str:
        """Where this server runs: its folder, environment and arguments."""
        return json.dumps({"cwd": os.getcwd(), "env": dict(os.environ), "argv": sys.argv[1:], "pid": os.getpid()})

    if "--extras" in args:
        _extras(server)
    server.run()


if __name__ == "__main__":
    main()
