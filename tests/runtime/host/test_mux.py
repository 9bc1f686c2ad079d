"""The routing rules of a shared server, message by message (runtime/host/mux.py): what each
session and the server receive, with which ids. The end-to-end tests (test_shared.py) drive the
same rules through real processes; these pin the cases that are hard to time there."""

from __future__ import annotations

from projector.runtime.host.mux import SERVER, Mux


def request(id_, method, **params):
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def note(method, **params):
    return {"jsonrpc": "2.0", "method": method, "params": params}


def reply(id_, value=None):
    return {"jsonrpc": "2.0", "id": id_, "result": value if value is not None else {}}


AGREED = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}


def initialized(*sessions: int) -> Mux:
    """A mux whose server has answered the first initialize, with ``sessions`` attached and ready."""
    mux = Mux()
    for session in sessions:
        mux.attach(session)
    [(_, first)] = mux.from_session(sessions[0], request(0, "initialize", protocolVersion="2025-06-18"))
    mux.from_server(reply(first["id"], AGREED))
    for session in sessions[1:]:
        mux.from_session(session, request(0, "initialize", protocolVersion="2025-06-18"))
    return mux


def test_the_first_initialize_goes_to_the_server_later_ones_get_its_result_at_once():
    mux = Mux()
    for session in (1, 2, 3):
        mux.attach(session)
    [(to, first)] = mux.from_session(1, request(7, "initialize", protocolVersion="2025-06-18"))
    assert to == SERVER
    assert mux.from_session(2, request(7, "initialize", protocolVersion="2025-06-18")) == []  # waits for the first
    out = mux.from_server(reply(first["id"], AGREED))
    assert out == [
        (SERVER, {"jsonrpc": "2.0", "method": "notifications/initialized"}),  # the host's own, once
        (1, reply(7, AGREED)),
        (2, reply(7, AGREED)),
    ]
    assert mux.from_session(3, request("x", "initialize", protocolVersion="2025-11-25")) == [(3, reply("x", AGREED))]
    assert mux.from_session(3, note("notifications/initialized")) == []


def test_an_older_protocol_version_than_agreed_is_refused_and_a_refused_initialize_is_retried():
    mux = initialized(1)
    mux.attach(2)
    [(to, answer)] = mux.from_session(2, request(1, "initialize", protocolVersion="2025-03-26"))
    assert to == 2 and answer["error"]["code"] == -32602
    assert answer["error"]["data"] == {"supported": ["2025-06-18"], "requested": "2025-03-26"}

    fresh = Mux()
    fresh.attach(1)
    [(_, first)] = fresh.from_session(1, request(1, "initialize", protocolVersion="2025-06-18"))
    refused = {"jsonrpc": "2.0", "id": first["id"], "error": {"code": -32603, "message": "no"}}
    assert fresh.from_server(refused) == [(1, dict(refused, id=1))]
    assert fresh.from_session(1, request(2, "initialize", protocolVersion="2025-06-18"))[0][0] == SERVER


def test_colliding_ids_are_rewritten_and_each_reply_returns_to_its_session_with_its_own_id():
    mux = initialized(1, 2)
    [(_, one)] = mux.from_session(1, request(5, "tools/call", name="a"))
    [(_, two)] = mux.from_session(2, request(5, "tools/call", name="b"))
    assert one["id"] != two["id"]
    assert mux.from_server(reply(two["id"], {"b": 1})) == [(2, reply(5, {"b": 1}))]
    assert mux.from_server(reply(one["id"], {"a": 1})) == [(1, reply(5, {"a": 1}))]
    assert mux.from_server(reply(one["id"])) == []  # answered once only


def test_progress_reaches_only_the_session_that_owns_the_token_and_cancellation_is_rewritten():
    mux = initialized(1, 2)
    [(_, one)] = mux.from_session(1, request(3, "tools/call", name="a", _meta={"progressToken": 3}))
    [(_, two)] = mux.from_session(2, request(3, "tools/call", name="a", _meta={"progressToken": 3}))
    token_one, token_two = one["params"]["_meta"]["progressToken"], two["params"]["_meta"]["progressToken"]
    assert token_one != token_two
    assert mux.from_server(note("notifications/progress", progressToken=token_two, progress=1)) == [
        (2, note("notifications/progress", progressToken=3, progress=1))
    ]
    assert mux.from_session(1, note("notifications/cancelled", requestId=3)) == [
        (SERVER, note("notifications/cancelled", requestId=one["id"]))
    ]
    mux.from_server(reply(one["id"]))
    assert mux.from_server(note("notifications/progress", progressToken=token_one, progress=2)) == []  # its request is over
    assert mux.from_session(1, note("notifications/cancelled", requestId=99)) == []


def test_list_changed_reaches_every_initialised_session_and_updates_only_subscribers():
    mux = initialized(1, 2, 3)
    mux.attach(4)  # not initialised yet: hears nothing
    changed = note("notifications/tools/list_changed")
    assert mux.from_server(changed) == [(1, changed), (2, changed), (3, changed)]
    [(_, subscribe)] = mux.from_session(2, request(1, "resources/subscribe", uri="memo://a"))
    mux.from_server(reply(subscribe["id"]))
    [(_, subscribe)] = mux.from_session(3, request(1, "resources/subscribe", uri="memo://a"))
    mux.from_server(reply(subscribe["id"]))
    updated = note("notifications/resources/updated", uri="memo://a")
    assert mux.from_server(updated) == [(2, updated), (3, updated)]
    assert mux.from_session(2, request(2, "resources/unsubscribe", uri="memo://a")) == [(2, reply(2))]  # 3 still wants it
    [(to, unsubscribe)] = mux.from_session(3, request(2, "resources/unsubscribe", uri="memo://a"))
    assert to == SERVER and unsubscribe["method"] == "resources/unsubscribe"
    assert mux.from_server(updated) == []


def test_a_server_request_goes_to_the_one_session_with_a_request_in_flight_else_the_most_recent():
    mux = initialized(1, 2, 3)
    [(_, call)] = mux.from_session(2, request(1, "tools/call", name="a"))
    mux.from_session(3, request(9, "tools/list"))  # 3 is heard from last, and has a request in flight too
    mux.from_server(reply(mux_id_of(mux, 3)))
    [(to, sampling)] = mux.from_server(request("s1", "sampling/createMessage"))
    assert to == 2 and sampling["id"] != "s1"
    assert mux.from_session(2, reply(sampling["id"], {"x": 1})) == [(SERVER, reply("s1", {"x": 1}))]
    assert mux.from_session(1, reply(sampling["id"], {"x": 1})) == []  # not the session asked

    mux.from_server(reply(call["id"]))
    mux.from_session(1, note("notifications/message"))  # 1 is now the most recent; none has a request in flight
    [(to, _)] = mux.from_server(request("s2", "sampling/createMessage"))
    assert to == 1


def test_a_server_request_that_could_be_any_of_several_sessions_gets_an_error_not_a_guess():
    mux = initialized(1, 2)
    mux.from_session(1, request(1, "tools/call", name="a"))
    mux.from_session(2, request(1, "tools/call", name="b"))
    for method in ("sampling/createMessage", "elicitation/create"):
        [(to, answer)] = mux.from_server(request("s", method))
        assert to == SERVER and answer["id"] == "s" and answer["error"]["code"] == -32603
        assert "2 sessions of this shared server have requests in flight" in answer["error"]["message"]


def test_a_server_request_related_to_a_task_goes_to_the_session_whose_request_created_it():
    mux = initialized(1, 2)
    [(_, created)] = mux.from_session(1, request(1, "tools/call", name="a", task={"ttl": 60000}))
    mux.from_server(reply(created["id"], {"task": {"taskId": "t-1", "status": "working"}}))
    mux.from_session(2, request(1, "tools/call", name="b"))
    mux.from_session(1, request(2, "tasks/result", taskId="t-1"))  # both sessions have a request in flight
    related = {"_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t-1"}}}
    for method in ("sampling/createMessage", "elicitation/create"):
        [(to, _)] = mux.from_server({"jsonrpc": "2.0", "id": method, "method": method, "params": related})
        assert to == 1
    mux.detach(1)
    [(to, answer)] = mux.from_server({"jsonrpc": "2.0", "id": "late", "method": "elicitation/create", "params": related})
    assert to == SERVER and "not attached" in answer["error"]["message"]


def test_roots_and_ping_are_answered_for_the_sessions_which_share_the_workspace_root():
    mux = Mux("/home/me/work/my project")
    mux.attach(1)
    [(_, first)] = mux.from_session(1, request(0, "initialize", protocolVersion="2025-06-18", capabilities={"roots": {"listChanged": True}}))
    assert first["params"]["capabilities"]["roots"] == {}  # supported, and never changes
    mux.from_server(reply(first["id"], AGREED))
    mux.from_session(1, request(1, "tools/call", name="a"))
    assert mux.from_server(request("r", "roots/list")) == [
        (SERVER, reply("r", {"roots": [{"uri": "file:///home/me/work/my%20project", "name": "my project"}]}))]
    assert mux.from_server(request("p", "ping")) == [(SERVER, reply("p", {}))]
    assert mux.from_session(1, note("notifications/roots/list_changed")) == []


def mux_id_of(mux: Mux, session: int) -> int:
    (server_id,) = mux.sessions[session].asking
    return server_id


def test_a_session_that_leaves_has_its_requests_cancelled_its_questions_answered_its_subscriptions_dropped():
    mux = initialized(1, 2)
    [(_, call)] = mux.from_session(1, request(4, "tools/call", name="slow"))
    [(_, subscribe)] = mux.from_session(1, request(5, "resources/subscribe", uri="memo://a"))
    mux.from_server(reply(subscribe["id"]))
    [(_, question)] = mux.from_server(request("s1", "elicitation/create"))
    out = mux.detach(1)
    assert (SERVER, note("notifications/cancelled", requestId=call["id"], reason="the session that sent it has ended")) in out
    assert any(to == SERVER and m.get("id") == "s1" and m["error"]["code"] == -32603 for to, m in out)
    assert any(to == SERVER and m.get("method") == "resources/unsubscribe" for to, m in out)
    assert mux.from_server(reply(call["id"])) == []
    assert mux.from_session(1, reply(question["id"], {})) == []


def test_when_the_server_exits_every_request_in_flight_gets_an_error():
    mux = initialized(1, 2)
    mux.from_session(1, request(1, "tools/call", name="a"))
    mux.from_session(2, request("b", "tools/call", name="b"))
    mux.attach(3)
    out = mux.server_gone("gone")
    assert sorted((to, m["id"], m["error"]["message"]) for to, m in out) == [(1, 1, "gone"), (2, "b", "gone")]
    assert mux.detach(1) == []  # nothing left to cancel


def test_server_discover_is_answered_here_so_clients_initialize():
    mux = Mux()
    mux.attach(1)
    [(to, answer)] = mux.from_session(1, request(0, "server/discover"))
    assert to == 1 and answer["error"]["code"] == -32601


def test_each_session_is_filtered_by_its_own_tool_rule_and_a_hidden_call_never_reaches_the_server():
    from projector.core.tools import ToolRule

    mux = Mux()
    mux.attach(1, ToolRule(allow=("read_*",)))
    mux.attach(2, ToolRule(deny=("read_secret",)))
    mux.attach(3)
    [(_, first)] = mux.from_session(1, request(0, "initialize", protocolVersion="2025-06-18"))
    mux.from_server(reply(first["id"], AGREED))
    for session in (2, 3):
        mux.from_session(session, request(0, "initialize", protocolVersion="2025-06-18"))
    tools = {"tools": [{"name": n} for n in ("read_a", "read_secret", "write_b")], "nextCursor": "c2"}
    listed = {}
    for session in (1, 2, 3):
        [(_, asked)] = mux.from_session(session, request(9, "tools/list"))
        [(to, answer)] = mux.from_server(reply(asked["id"], tools))
        listed[to] = ([t["name"] for t in answer["result"]["tools"]], answer["result"]["nextCursor"])
    assert listed == {1: (["read_a", "read_secret"], "c2"), 2: (["read_a", "write_b"], "c2"),
                      3: (["read_a", "read_secret", "write_b"], "c2")}
    assert mux.from_session(1, request(10, "tools/call", name="write_b")) == [
        (1, {"jsonrpc": "2.0", "id": 10, "error": {"code": -32602, "message": "Unknown tool: write_b"}})]
    [(to, sent)] = mux.from_session(3, request(10, "tools/call", name="write_b"))
    assert to == SERVER and sent["params"]["name"] == "write_b"


def test_a_hidden_tool_sent_as_a_notification_never_reaches_the_server():
    """A tools/call without an id has no answer to give, but a server that runs it anyway must
    not see it: the rule holds for every message that names a hidden tool."""
    from projector.core.tools import ToolRule

    mux = Mux()
    mux.attach(1, ToolRule(allow=("read_*",)))
    [(_, first)] = mux.from_session(1, request(0, "initialize", protocolVersion="2025-06-18"))
    mux.from_server(reply(first["id"], AGREED))
    assert mux.from_session(1, note("tools/call", name="write_b")) == []
    assert mux.from_session(1, [note("tools/call", name="write_b")]) == []  # in a batch too
    [(to, sent)] = mux.from_session(1, note("tools/call", name="read_a"))  # an offered one goes on as it was
    assert to == SERVER and sent["params"]["name"] == "read_a"


def test_a_server_serves_the_version_it_agreed_or_a_newer_ask_never_an_older_one():
    fresh = Mux()
    assert fresh.serves("2024-11-05") and fresh.version() is None  # nobody asked yet: anything goes
    asking = Mux()
    asking.attach(1)
    asking.from_session(1, request(0, "initialize", protocolVersion="2025-06-18"))
    assert asking.serves("2025-06-18") and asking.serves("2025-11-25") and not asking.serves("2025-03-26")
    agreed = initialized(1)
    assert agreed.version() == "2025-06-18"
    assert agreed.serves("2025-11-25") and not agreed.serves("2025-03-26") and not agreed.serves("not a date")
