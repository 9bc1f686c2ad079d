"""A session that starts with no sign-in (runtime.bridge.signing): answered by the bridge with no
tools, a tool call that says what to run, and the provider's tools once a sign-in writes a token,
announced with tools/list_changed. The conformance suite's authorization server plays the whole
sign-in the bridge starts itself (test_peers.py); here the person signs in by hand, with no
browser the bridge could open (no display, no $BROWSER)."""

from __future__ import annotations

import os
import time

from servers import TOKEN
from servers.loopback import Loopback, Quiet
from test_bridge import INIT, INITIALIZED, Layout, Raw

from projector.core import tokenstore


def unsigned(tmp_path, url: str, oauth: str = "true") -> tuple[Layout, dict, str]:
    layout = Layout(tmp_path, url)
    layout.config.write_text(layout.config.read_text().replace("token_env: DOCS_TOKEN", f"oauth: {oauth}"))
    env = {k: v for k, v in layout.env.items() if k != "DOCS_TOKEN"}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    return layout, env, str(tmp_path / "state" / "projector")


def test_a_session_without_a_sign_in_says_what_to_run_then_gets_the_tools_when_one_is_written(kb_server, tmp_path):
    server = kb_server()
    layout, env, state = unsigned(tmp_path, server.url)
    bridge = Raw(layout, "work/a", env=env)
    try:
        bridge.send(INIT, INITIALIZED)
        opened = bridge.receive()["result"]
        assert opened["capabilities"]["tools"] == {"listChanged": True}
        assert "not signed in to docs: run `projector login docs`" in opened["instructions"]
        bridge.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "x"}}})
        assert bridge.receive() == {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}
        called = bridge.receive()["result"]  # a client that never lists again still learns what to do
        assert called["isError"] is True and "run `projector login docs`" in called["content"][0]["text"]
        assert server.requests() == []
        assert not os.path.exists(os.path.join(state, "oauth", "docs.sign-in.log")), "no browser here: nothing was started"

        tokenstore.write(state, "docs", tokenstore.Tokens(access_token=TOKEN, expires_at=None))  # `projector login docs`, by hand
        assert bridge.receive(timeout=10) == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        bridge.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        assert sorted(t["name"] for t in bridge.receive()["result"]["tools"]) == ["big", "first_root", "search"]
        assert {r["auth"] for r in server.requests()} == {f"Bearer {TOKEN}"}
        assert server.requests()[0]["rpc"] == "initialize"  # the provider's session opened with the client's own
    finally:
        bridge.close()


class Guarded:
    """A provider on loopback that takes the tokens in ``accepted`` (401 for any other) and
    records each request's method and token; with ``scope_refusal``, every operation is refused
    for want of ``docs:write`` (403 insufficient_scope), whatever the token: the retry limit's case."""

    def __init__(self, accepted: set[str] | None = None, scope_refusal: bool = False, scope: str = "docs:write") -> None:
        self.calls: list[tuple[str, str]] = []  # (JSON-RPC method, Authorization)
        self.versions: list[str] = []  # the protocol version each initialize asks for
        self.accepted = accepted  # None: any token
        guard = self

        class Handler(Quiet):
            def do_POST(self) -> None:  # noqa: N802
                message = self.json_body()
                auth = self.headers.get("Authorization", "")
                guard.calls.append((message.get("method"), auth))
                if guard.accepted is not None and auth.removeprefix("Bearer ") not in guard.accepted:
                    self.answer(401, {"error": "invalid_token"}, {"WWW-Authenticate": 'Bearer error="invalid_token"'})
                elif message.get("method") == "initialize":
                    guard.versions.append(message["params"].get("protocolVersion"))
                    self.answer(200, {"jsonrpc": "2.0", "id": message["id"], "result": {
                        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "guard", "version": "1"}}},
                        {"Mcp-Session-Id": "s1"})
                elif "id" not in message:
                    self.answer(202, None)
                elif scope_refusal:
                    self.answer(403, {"error": "insufficient_scope"},
                                {"WWW-Authenticate": f'Bearer error="insufficient_scope", scope="{scope}"'})
                else:
                    self.answer(200, {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [
                        {"name": "search", "inputSchema": {"type": "object"}}]}})

        self.loopback = Loopback(Handler, "/mcp")
        self.url = self.loopback.url

    def close(self) -> None:
        self.loopback.close()


def test_a_sign_in_revoked_mid_session_is_waited_for_and_the_provider_session_opened_again(tmp_path):
    """The provider stops taking the token during a session and there is no refresh token: that
    request says to sign in again, later ones are answered here (no tools, a tool call says what to
    run) instead of failing, and once a sign-in is written the provider's session is opened again
    with the client's initialize and the version it was promised, and the client hears
    tools/list_changed."""
    guard = Guarded(accepted={"first"})
    try:
        layout, env, state = unsigned(tmp_path, guard.url)
        tokenstore.write(state, "docs", tokenstore.Tokens(access_token="first", expires_at=None))
        bridge = Raw(layout, "work/a", env=env)
        bridge.send(INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert bridge.receive()["result"]["capabilities"] == {"tools": {}}
        assert bridge.receive()["result"]["tools"][0]["name"] == "search"
        guard.accepted = {"second"}  # the first is revoked
        bridge.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert "sign in again with `projector login docs`" in bridge.receive()["error"]["message"]
        bridge.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search", "arguments": {}}})
        called = bridge.receive()["result"]
        assert called["isError"] is True and "run `projector login docs`" in called["content"][0]["text"]
        tokenstore.write(state, "docs", tokenstore.Tokens(access_token="second", expires_at=None))
        assert bridge.receive(timeout=10) == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        bridge.send({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
        assert bridge.receive()["result"]["tools"][0]["name"] == "search"
        assert [auth for method, auth in guard.calls if method == "initialize"] == ["Bearer first", "Bearer second"]
        assert guard.versions == ["2025-06-18", "2025-06-18"]
        assert bridge.close() == 0
    finally:
        guard.close()


def test_a_step_up_signs_in_for_more_scope_once_and_a_second_refusal_ends_the_request(tmp_path):
    """A 403 insufficient_scope: the bridge waits for a sign-in with the stored and the
    challenged scopes (here one under way in another projector, which holds the lock: none is
    started), sends the request again with its token, and the second 403 is the end: an error,
    never a third try."""
    guard = Guarded(scope_refusal=True)
    try:
        layout, env, state = unsigned(tmp_path, guard.url)
        tokenstore.write(state, "docs", tokenstore.Tokens(access_token="read-token", expires_at=None, scope="docs:read"))
        bridge = Raw(layout, "work/a", env=env)
        with tokenstore.locked(state, "docs", 5):  # another projector's sign-in, under way
            bridge.send(INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert "result" in bridge.receive()
            deadline = time.monotonic() + 10
            while ("tools/list", "Bearer read-token") not in guard.calls and time.monotonic() < deadline:
                time.sleep(0.05)
            tokenstore.write(state, "docs", tokenstore.Tokens(access_token="write-token", expires_at=None,
                                                              scope="docs:read docs:write"))
        refused = bridge.receive(timeout=10)
        assert refused["id"] == 1
        assert "refused tools/list again for want of scope (docs:write) after a sign-in that asked for it" in refused["error"]["message"]
        assert [auth for method, auth in guard.calls if method == "tools/list"] == ["Bearer read-token", "Bearer write-token"]
        log = b"".join(bridge.stderr).decode()
        assert "asks for more scope for tools/list (docs:write): signing in again for docs:read docs:write" in log
        assert "read-token" not in log and "write-token" not in log
        bridge.close()
    finally:
        guard.close()


def test_a_step_up_that_waited_for_another_projectors_sign_in_without_its_scope_then_asks_for_its_own(tmp_path):
    """A sign-in under way in another projector when a request is refused for want of scope is
    waited for (its token may have the scope); when it ends without it, the step-up asks for
    its own at once (here no browser can open, so the request ends saying the login to run),
    instead of waiting out its five minutes for a token that is not coming."""
    guard = Guarded(scope_refusal=True)
    try:
        layout, env, state = unsigned(tmp_path, guard.url)
        tokenstore.write(state, "docs", tokenstore.Tokens(access_token="read-token", expires_at=None, scope="docs:read"))
        bridge = Raw(layout, "work/a", env=env)
        with tokenstore.locked(state, "docs", 5):  # `projector login docs` in another projector, asking for no more scope
            bridge.send(INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert "result" in bridge.receive()
            deadline = time.monotonic() + 10
            while ("tools/list", "Bearer read-token") not in guard.calls and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1)  # the step-up waits for it meanwhile
            tokenstore.write(state, "docs", tokenstore.Tokens(access_token="other-token", expires_at=None, scope="docs:read"))
        refused = bridge.receive(timeout=10)
        assert refused["id"] == 1
        assert refused["error"]["message"] == (
            "projector: tools/list needs more scope (docs:read docs:write) and no browser can open where the bridge runs (no "
            "display, no $BROWSER): run `projector login docs --scope 'docs:read docs:write'`, then call it again")
        assert [auth for method, auth in guard.calls if method == "tools/list"] == ["Bearer read-token"]  # not sent again in vain
        bridge.close()
    finally:
        guard.close()


def test_an_unsigned_session_in_an_unbound_folder_asks_for_the_roots_once_signed_in(kb_server, tmp_path):
    """A client that declares roots in a folder no binding covers: the sign-in comes first, then
    the roots decide the set, then the provider's session opens and the client hears that the
    tools changed."""
    server = kb_server()
    layout, env, state = unsigned(tmp_path, server.url)
    bridge = Raw(layout, "scratch", env=env)
    try:
        bridge.send(dict(INIT, params=dict(INIT["params"], capabilities={"roots": {}})), INITIALIZED)
        assert bridge.receive()["result"]["capabilities"]["tools"] == {"listChanged": True}
        tokenstore.write(state, "docs", tokenstore.Tokens(access_token=TOKEN, expires_at=None))
        roots_request = bridge.receive(timeout=10)
        assert roots_request["method"] == "roots/list"
        bridge.send({"jsonrpc": "2.0", "id": roots_request["id"], "result": {"roots": [{"uri": f"file://{tmp_path}/work/b"}]}})
        assert bridge.receive() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        bridge.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert len(bridge.receive()["result"]["tools"]) == 3
        assert {r["query"] for r in server.requests()} == {"kbs=api-b"}
    finally:
        bridge.close()


def refused_step_up(tmp_path, scope: str = "docs:write", oauth: str = "true") -> tuple[str, float, list[str]]:
    """A tools/list the provider refuses for want of ``scope``, where no browser can open: the
    error's message, how long it took, and the methods the provider was sent."""
    guard = Guarded(scope_refusal=True, scope=scope)
    try:
        layout, env, state = unsigned(tmp_path, guard.url, oauth)
        tokenstore.write(state, "docs", tokenstore.Tokens(access_token="read-token", expires_at=None, scope="docs:read"))
        bridge = Raw(layout, "work/a", env=env)
        bridge.send(INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert "result" in bridge.receive()
        began = time.monotonic()
        message = bridge.receive()["error"]["message"]
        took = time.monotonic() - began
        bridge.close()
    finally:
        guard.close()
    return message, took, [method for method, _ in guard.calls]


def test_a_step_up_where_no_browser_can_open_ends_the_request_at_once_with_the_login_to_run(tmp_path):
    message, took, methods = refused_step_up(tmp_path)
    assert took < 5
    assert "no browser can open where the bridge runs" in message
    assert "run `projector login docs --scope 'docs:read docs:write'`, then call it again" in message
    assert methods.count("tools/list") == 1


def test_the_login_a_step_up_says_to_run_is_safe_to_paste_into_a_shell_whatever_scopes_the_server_names(tmp_path):
    """The scopes come from the provider's 403 (``$`` and ``(`` are allowed in an OAuth scope):
    in the double quotes the message used, a shell would run ``$(...)`` when the person pastes
    the command it says to run."""
    import re
    import subprocess

    message, _, _ = refused_step_up(tmp_path, "docs:write $(touch pwned) `touch pwned`")
    command = re.search(r"run `(projector login .*)`, then call it again", message).group(1)
    pasted = subprocess.run(["sh", "-c", command.replace("projector", "printf '%s\\n'", 1)], cwd=tmp_path,
                            capture_output=True, text=True)
    assert not (tmp_path / "pwned").exists()
    assert pasted.stdout.splitlines() == ["login", "docs", "--scope", "docs:read docs:write $(touch pwned) `touch pwned`"]


def test_a_session_that_starts_while_another_projector_signs_in_is_answered_at_once(kb_server, tmp_path):
    """A sign-in waiting in the browser holds the provider's lock for minutes: a session that
    starts meanwhile with an expired token does not wait on that lock (its client would give up
    on initialize); it is answered here, waits for that sign-in, and gets the tools once it is
    written, even when it was written while the session still waited for the lock."""
    server = kb_server()
    layout, env, state = unsigned(tmp_path, server.url)
    tokenstore.write(state, "docs", tokenstore.Tokens(access_token="expired", expires_at=time.time() - 60,
                                                      token_endpoint="http://127.0.0.1:9/token", client_id="projector-test",
                                                      secrets=tokenstore.Secrets(refresh_token="refresh-1")))
    with tokenstore.locked(state, "docs", 5):  # `projector login docs`, waiting for the browser
        bridge = Raw(layout, "work/a", env=env)
        try:
            began = time.monotonic()
            bridge.send(INIT, INITIALIZED)
            time.sleep(1)  # the bridge waits for the lock meanwhile
            tokenstore.write(state, "docs", tokenstore.Tokens(access_token=TOKEN, expires_at=None))
            opened = bridge.receive(timeout=30)["result"]
            assert time.monotonic() - began < 15
            assert opened["capabilities"]["tools"] == {"listChanged": True}
            assert "a sign-in to docs is under way in another projector" in opened["instructions"]
        except BaseException:
            bridge.close()
            raise
    try:
        assert bridge.receive(timeout=10) == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        assert {r["auth"] for r in server.requests()} == {f"Bearer {TOKEN}"}
    finally:
        bridge.close()


def test_a_token_refused_when_the_roots_open_the_session_waits_for_a_sign_in_instead_of_failing_for_good(tmp_path):
    """An unbound folder, a client that declares roots, and a stored token the provider no
    longer takes (no refresh token): the provider's session, opened once the roots are known,
    is refused; the session then waits for a sign-in (a tool call says what to run) rather than
    answering every request 'not available' until the client restarts, and once one is written
    it opens and the client hears tools/list_changed (its initialize promised it)."""
    guard = Guarded(accepted={"second"})
    try:
        layout, env, state = unsigned(tmp_path, guard.url)
        tokenstore.write(state, "docs", tokenstore.Tokens(access_token="first", expires_at=None))
        bridge = Raw(layout, "scratch", env=env)
        bridge.send(dict(INIT, params=dict(INIT["params"], capabilities={"roots": {}})), INITIALIZED)
        assert bridge.receive()["result"]["capabilities"]["tools"] == {"listChanged": True}
        roots_request = bridge.receive()
        assert roots_request["method"] == "roots/list"
        bridge.send({"jsonrpc": "2.0", "id": roots_request["id"], "result": {"roots": [{"uri": f"file://{tmp_path}/work/b"}]}},
                    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": {}}})
        called = bridge.receive()["result"]
        assert called["isError"] is True and "run `projector login docs`" in called["content"][0]["text"]
        tokenstore.write(state, "docs", tokenstore.Tokens(access_token="second", expires_at=None))
        assert bridge.receive(timeout=10) == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}  # the roots kept
        bridge.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert bridge.receive()["result"]["tools"][0]["name"] == "search"
        assert [auth for method, auth in guard.calls if method == "initialize"] == ["Bearer first", "Bearer second"]
        assert bridge.close() == 0
    finally:
        guard.close()


def test_a_step_up_never_asks_for_a_scope_the_models_scopes_leave_out(tmp_path):
    """The model fixes the provider's scopes: a server asking for more does not widen them (no
    sign-in, no browser), and the error says where to grant it."""
    message, took, methods = refused_step_up(tmp_path, "docs:write docs:read", oauth="{scopes: [docs:read]}")
    assert took < 5 and methods.count("tools/list") == 1
    assert message == ("projector: provider docs refused tools/list for want of scope docs:write, which the model's scopes "
                       "leave out: add it to the oauth `scopes` of docs in the model if you mean to grant it, then call it again")


class ScopedServer:
    """An MCP server that is its own authorization server (tests/servers/scripted.py), whose
    tokens carry the scopes their authorization asked for: a call of tool T needs ``docs:T``
    (403 insufficient_scope naming it, without). Each authorization approves at once."""

    def __init__(self) -> None:
        from servers.scripted import Answer, AuthorizationServer

        self.server = AuthorizationServer()
        self.url = f"{self.server.origin}/mcp"
        self.granted = {"read-token": "docs:read"}  # token -> its scopes
        self.asked: list[str] = []  # the scope of each authorization, in order
        self.calls: list[tuple[str, str]] = []  # (tool, token) of each tools/call

        def authorize(request):
            self.asked.append(request.query.get("scope", ""))
            return Answer(302, headers=(("Location", f"{request.query['redirect_uri']}?code=code-{len(self.asked)}"
                                                     f"&state={request.query['state']}"),))

        def token(request):
            issued = f"token-{len(self.granted)}"
            self.granted[issued] = self.asked[-1]
            return Answer(200, {"access_token": issued, "token_type": "Bearer", "expires_in": 3600, "scope": self.asked[-1]})

        def mcp(request):
            token = request.headers.get("Authorization", "").removeprefix("Bearer ")
            if token not in self.granted:
                return Answer(401, {"error": "invalid_token"}, headers=(
                    ("WWW-Authenticate", f'Bearer resource_metadata="{self.server.origin}/.well-known/oauth-protected-resource/mcp"'),))
            message = request.document
            if "id" not in message:
                return Answer(202)
            if message["method"] == "initialize":
                return Answer(200, {"jsonrpc": "2.0", "id": message["id"], "result": {
                    "protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "scoped", "version": "1"}}})
            tool = message["params"]["name"]
            self.calls.append((tool, token))
            if f"docs:{tool}" not in self.granted[token].split():
                return Answer(403, {"error": "insufficient_scope"}, headers=(
                    ("WWW-Authenticate", f'Bearer error="insufficient_scope", scope="docs:{tool}"'),), delay=0.3)
            return Answer(200, {"jsonrpc": "2.0", "id": message["id"], "result": {"content": [{"type": "text", "text": tool}]}})

        self.server.routes.update({"GET /authorize": authorize, "POST /token": token, "POST /mcp": mcp})

    def close(self) -> None:
        self.server.close()


def test_two_step_ups_for_different_scopes_each_get_a_sign_in_that_asks_for_theirs(tmp_path):
    """Two calls refused at once for want of two different scopes: the first one's sign-in runs,
    the second waits for it, and since it did not ask for the second's scope, the second then
    asks for its own; both calls are answered. (Without: the second was sent again with a token
    that could not have its scope and ended 'refused again after a sign-in that asked for it'.)"""
    from pathlib import Path

    server = ScopedServer()
    try:
        layout, env, state = unsigned(tmp_path, server.url)
        env["BROWSER"] = str(Path(__file__).resolve().parent / "follow_redirects.py")
        tokenstore.write(state, "docs", tokenstore.Tokens(access_token="read-token", expires_at=None, scope="docs:read"))
        bridge = Raw(layout, "work/a", env=env)
        call = {"jsonrpc": "2.0", "method": "tools/call"}
        bridge.send(INIT, INITIALIZED, dict(call, id=1, params={"name": "a", "arguments": {}}),
                    dict(call, id=2, params={"name": "b", "arguments": {}}))
        assert "result" in bridge.receive()
        answers = {answer["id"]: answer for answer in (bridge.receive(timeout=90), bridge.receive(timeout=90))}
        for id_, tool in ((1, "a"), (2, "b")):
            assert answers[id_].get("result", {}).get("content") == [{"type": "text", "text": tool}], answers[id_]
        assert sorted(server.asked) == ["docs:read docs:a", "docs:read docs:b"]  # one sign-in each, each for its scope
        bridge.close()
    finally:
        server.close()
