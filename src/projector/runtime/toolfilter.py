"""A folder's tool rule (core.tools) applied to an MCP session: by the bridge, and by a shared
server's host for each of its sessions.

- ``tools/list``: the tools the rule hides are taken out of each page; a page keeps its
  ``nextCursor`` even when nothing of it is left (the client asks for the next one).
- ``tools/call`` of a hidden tool: answered here with the MCP spec's error for an unknown tool
  (-32602, "Unknown tool: NAME"); the server never sees it, nor a call sent as a notification.
  An offered call goes on re-encoded, as it was judged: a name written twice in the client's
  bytes (``{"name": "hidden", "name": "offered"}``) would be read as the first by some parsers.
- ``notifications/tools/list_changed`` passes untouched: the client lists again, filtered again.

Only a session with a rule pays for any of this: the bridge picks its filtering path once, when
the session is made.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from projector.core.tools import AnyRule, ToolRule

INVALID_PARAMS = -32602  # the MCP spec's code for an unknown tool


DROPPED: dict[str, Any] = {}  # refused_call's verdict on a hidden call sent as a notification: nothing to answer, nothing sent on


def refused_call(message: dict[str, Any], offers: Callable[[object], bool]) -> dict[str, Any] | None:
    """The verdict on ``tools/call`` ``message`` under a rule (``offers``: its ``judge``): None
    when its tool is offered; else the MCP spec's unknown-tool error to answer it with, or
    ``DROPPED`` for a notification (no answer is due, but a server may run it all the same). The
    one hidden-call check: the bridge asks it per call, the host per session's call."""
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    if offers(name):
        return None
    return unknown_tool(message["id"], name) if "id" in message else DROPPED


def hidden_call(message: dict[str, Any], rule: ToolRule | AnyRule) -> dict[str, Any] | None:
    """``refused_call``'s verdict on ``message`` under ``rule`` when it is a ``tools/call`` (the
    error that answers a request, ``DROPPED`` for a notification); None when it may go on (any
    other message, or a tool the rule offers)."""
    if message.get("method") != "tools/call":
        return None
    from projector.core.tools import judge

    return refused_call(message, judge(rule))


def unknown_tool(id_: Any, name: Any) -> dict[str, Any]:
    """The MCP spec's answer to a call of a tool the server does not have."""
    shown = name if isinstance(name, str) else repr(name)
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": INVALID_PARAMS, "message": f"Unknown tool: {shown}"}}


HIDDEN = "projector/hidden"  # in a hidden tool's _meta, when the session shows them (`projector tools --all`)


def filtered_list(response: dict[str, Any], rule: ToolRule | AnyRule, show_hidden: bool = False) -> dict[str, Any]:
    """A ``tools/list`` response with only the tools ``rule`` offers (the rest of it, the
    page marker included, as it was); an error or an odd result passes as it is. ``show_hidden``:
    the hidden ones stay, marked ``_meta: {"projector/hidden": true}`` (their calls are still
    refused)."""
    result = response.get("result")
    tools = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(tools, list):
        return response
    from projector.core.tools import judge

    offers = judge(rule)
    if show_hidden:
        kept = [tool if offers(tool.get("name")) else dict(tool, _meta=dict(tool.get("_meta") or {}, **{HIDDEN: True}))
                for tool in tools if isinstance(tool, dict)]
    else:
        kept = [tool for tool in tools if isinstance(tool, dict) and offers(tool.get("name"))]
        if len(kept) == len(tools):
            return response  # nothing hidden: the provider's own bytes may go on as they are
    return dict(response, result=dict(result, tools=kept))
