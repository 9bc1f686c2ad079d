"""An OAuth provider's token through the bridge: renewed before expiry and on a 401, once across
every bridge process (the sign-in lock), with a rotating refresh token never sent twice, and a
refused refresh that ends in a clear error instead of a wait.

The authorization server's token endpoint is a small stdlib server here (tests can count its
requests and reject a reused refresh token, as a rotating server does); the provider is the
routed KB server on the official SDK, which accepts only the token that endpoint issues."""

from __future__ import annotations

import json
import subprocess
import time
from urllib.parse import parse_qs

import pytest
from servers import TOKEN
from servers.loopback import Loopback, Quiet
from test_bridge import INIT, Layout, initializing
from test_bridge import initialize_answer as answer

from projector.core import tokenstore
from projector.core.record import replace


class TokenEndpoint:
    """RFC 6749's refresh grant with rotation: each refresh token works once; a reused one is
    refused (invalid_grant), as is every one after ``revoke()``. Issues ``TOKEN``."""

    def __init__(self) -> None:
        self.refreshes: list[dict[str, str]] = []
        self.valid = {"refresh-1"}
        self.issued = 1
        self.access = TOKEN  # the access token each refresh answers with
        endpoint = self

        class Handler(Quiet):
            def do_POST(self) -> None:  # noqa: N802
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode()).items()}
                endpoint.refreshes.append(form)
                time.sleep(0.2)  # a real server's latency: racing bridges pile up behind the lock meanwhile
                if form.get("grant_type") != "refresh_token" or form.get("refresh_token") not in endpoint.valid:
                    return self.answer(400, {"error": "invalid_grant", "error_description": "refresh token reused or revoked"})
                endpoint.valid.discard(form["refresh_token"])
                endpoint.issued += 1
                fresh = f"refresh-{endpoint.issued}"
                endpoint.valid.add(fresh)
                return self.answer(200, {"access_token": endpoint.access, "token_type": "Bearer", "expires_in": 3600,
                                         "refresh_token": fresh})

        self.loopback = Loopback(Handler, "/token")
        self.url = self.loopback.url

    def revoke(self) -> None:
        self.valid.clear()

    def close(self) -> None:
        self.loopback.close()


@pytest.fixture
def token_endpoint():
    endpoint = TokenEndpoint()
    yield endpoint
    endpoint.close()


def signed_in(tmp_path, kb_url: str, endpoint: TokenEndpoint, access: str, expires_at: float) -> tuple[Layout, dict, str]:
    layout = Layout(tmp_path, kb_url)
    layout.config.write_text(layout.config.read_text().replace("token_env: DOCS_TOKEN", "oauth: true"))
    env = {k: v for k, v in layout.env.items() if k != "DOCS_TOKEN"}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    state = str(tmp_path / "state" / "projector")
    tokenstore.write(state, "docs", tokenstore.Tokens(access_token=access, expires_at=expires_at, token_endpoint=endpoint.url,
                                                      client_id="projector-test", resource=kb_url,
                                                      secrets=tokenstore.Secrets(refresh_token="refresh-1")))
    return layout, env, state


def start(layout: Layout, env: dict) -> subprocess.Popen:
    return initializing(layout.command(), layout.root / "work/a", env)


def test_an_expired_token_is_refreshed_before_the_session_starts(kb_server, tmp_path, token_endpoint):
    server = kb_server()
    layout, env, state = signed_in(tmp_path, server.url, token_endpoint, "expired-access", time.time() - 10)
    reply, log = answer(start(layout, env))
    assert "result" in reply, reply
    assert {r["auth"] for r in server.requests()} == {f"Bearer {TOKEN}"}  # the expired one never went up
    assert token_endpoint.refreshes == [{"grant_type": "refresh_token", "refresh_token": "refresh-1", "resource": server.url,
                                         "client_id": "projector-test"}]
    kept = tokenstore.read(state, "docs")
    assert kept.access_token == TOKEN and kept.secrets.refresh_token == "refresh-2" and kept.expires_at > time.time() + 3000
    assert "renewed the sign-in to docs" in log and TOKEN not in log and "refresh-" not in log


# The bridge, with an audit hook that notes each opening of the token file (os.open raises the
# "open" audit event) in the file named by its first argument.
AUDITED = """import runpy, sys
noted = open(sys.argv.pop(1), "a", buffering=1)
sys.addaudithook(lambda event, args: event == "open" and str(args[0]).endswith("/oauth/docs.json") and noted.write("open\\n"))
sys.argv[0] = "projector"
runpy.run_module("projector", run_name="__main__", alter_sys=True)
"""


def test_a_session_start_reads_its_token_file_once(kb_server, tmp_path, token_endpoint):
    """A start asks twice whether there is a usable token (must the session wait for a sign-in;
    the provider's session opening): the second asks the file's stamp, not the file."""
    import sys

    server = kb_server()
    layout, env, _ = signed_in(tmp_path, server.url, token_endpoint, TOKEN, time.time() + 3000)
    noted = tmp_path / "opened"
    command = [sys.executable, "-c", AUDITED, str(noted), *layout.command()[3:]]
    done = subprocess.run(command, cwd=layout.root / "work/a", env=env, input=(json.dumps(INIT) + "\n").encode(),
                          capture_output=True, timeout=60)
    assert b'"serverInfo"' in done.stdout, done.stderr
    assert noted.read_text().splitlines() == ["open"]
    assert {r["auth"] for r in server.requests()} == {f"Bearer {TOKEN}"} and token_endpoint.refreshes == []


def test_a_401_renews_the_token_once_and_sends_the_request_again(kb_server, tmp_path, token_endpoint):
    server = kb_server()
    layout, env, _ = signed_in(tmp_path, server.url, token_endpoint, "revoked-access", time.time() + 3000)
    reply, _ = answer(start(layout, env))
    assert "result" in reply, reply
    first, *then = [r["auth"] for r in server.requests()]
    assert first == "Bearer revoked-access" and set(then) == {f"Bearer {TOKEN}"}
    assert len(token_endpoint.refreshes) == 1


def test_a_refused_refresh_says_to_sign_in_again_without_waiting(kb_server, tmp_path, token_endpoint):
    """The session still starts (answered here, no tools, the tools announced as changing), and
    says why and what to run; with no browser here (no display, no $BROWSER) nothing is started."""
    server = kb_server()
    layout, env, state = signed_in(tmp_path, server.url, token_endpoint, "expired-access", time.time() - 10)
    token_endpoint.revoke()
    began = time.monotonic()
    reply, log = answer(start(layout, env))
    assert time.monotonic() - began < 30
    message = reply["result"]["instructions"]
    assert "renewing the sign-in to docs failed (HTTP 400: invalid_grant): sign in again with `projector login docs`" in message
    assert reply["result"]["capabilities"]["tools"]["listChanged"] is True
    assert "refresh-1" not in message + log and "started a sign-in" not in log
    assert tokenstore.read(state, "docs").secrets.refresh_token == "refresh-1"  # the store is left as it was
    assert server.requests() == []


def test_a_refreshed_token_no_request_can_carry_is_not_kept_nor_sent_nor_said(kb_server, tmp_path, token_endpoint):
    """A refresh answered with an access token holding a line break: the store is left as it was,
    the token goes nowhere, and the session says which provider and what to do, never the token."""
    server = kb_server()
    layout, env, state = signed_in(tmp_path, server.url, token_endpoint, "expired-access", time.time() - 10)
    token_endpoint.access = "canary-7\r\nX-Forged: 1"
    reply, log = answer(start(layout, env))
    assert len(token_endpoint.refreshes) == 1
    said = ("the authorization server of docs answered with an access token holding a line break, a control or a non-ASCII "
            "character, which no request can carry (RFC 6749 allows printable ASCII only): projector does not keep it; sign in "
            "again (projector login docs)")
    assert said in log and said in reply["result"]["instructions"]  # answered here, waiting for a sign-in
    assert "canary" not in json.dumps(reply) + log
    kept = tokenstore.read(state, "docs")
    assert kept.access_token == "expired-access" and kept.secrets.refresh_token == "refresh-1"
    assert all("canary" not in r["auth"] for r in server.requests())


@pytest.mark.parametrize("insecure", [False, True])
def test_a_refresh_token_is_never_sent_in_clear_to_another_host_unless_the_model_says_insecure(kb_server, tmp_path, token_endpoint,
                                                                                               insecure):
    """A token file an older projector wrote may name a token endpoint over plain http:// to
    another host (0.0.0.0 is not loopback by name, yet Linux connects it here): the refresh token
    is not sent there unless the model accepts plain http:// for the provider, as a sign-in is not."""
    server = kb_server()
    layout, env, state = signed_in(tmp_path, server.url, token_endpoint, "expired-access", time.time() - 10)
    elsewhere = token_endpoint.url.replace("127.0.0.1", "0.0.0.0")
    tokenstore.write(state, "docs", replace(tokenstore.read(state, "docs"), token_endpoint=elsewhere))
    if insecure:
        layout.config.write_text(layout.config.read_text().replace("oauth: true", "oauth: true\n    insecure: true"))
    reply, log = answer(start(layout, env))
    if insecure:
        assert "result" in reply and [form["refresh_token"] for form in token_endpoint.refreshes] == ["refresh-1"]
        assert {r["auth"] for r in server.requests()} == {f"Bearer {TOKEN}"}
        return
    assert token_endpoint.refreshes == [] and server.requests() == []
    said = (f"the sign-in to docs renews at {elsewhere}, plain http:// to 0.0.0.0, which is not this machine: its refresh "
            "token would cross the network in clear, so it is not sent (say insecure: true of the provider if you accept "
            "that): sign in again with `projector login docs`")
    assert said in reply["result"]["instructions"] and said in log and "refresh-1" not in log


def test_twenty_bridges_on_an_expired_token_make_one_refresh(kb_server, tmp_path, token_endpoint):
    server = kb_server()
    layout, env, state = signed_in(tmp_path, server.url, token_endpoint, "expired-access", time.time() - 10)
    bridges = [start(layout, env) for _ in range(20)]
    replies = [answer(bridge)[0] for bridge in bridges]
    assert all("result" in reply for reply in replies), [r for r in replies if "result" not in r][:1]
    assert [form["refresh_token"] for form in token_endpoint.refreshes] == ["refresh-1"]  # one refresh; refresh-1 never sent twice
    assert tokenstore.read(state, "docs").secrets.refresh_token == "refresh-2"
    assert {r["auth"] for r in server.requests()} == {f"Bearer {TOKEN}"}



def test_a_token_refused_at_the_start_without_a_refresh_starts_the_session_waiting_for_a_sign_in(kb_server, tmp_path, token_endpoint):
    """The provider refuses the stored token (401) and the refresh is refused too: the client's
    initialize is answered here (no tools, announced as changing) instead of failing, and once a
    sign-in is written the provider's session opens and the client hears tools/list_changed."""
    from test_bridge import INITIALIZED, Raw

    server = kb_server()
    layout, env, state = signed_in(tmp_path, server.url, token_endpoint, "revoked-access", time.time() + 3000)
    token_endpoint.revoke()
    bridge = Raw(layout, "work/a", env=env)
    try:
        bridge.send(INIT, INITIALIZED)
        opened = bridge.receive()["result"]
        assert opened["capabilities"]["tools"]["listChanged"] is True
        assert "renewing the sign-in to docs failed (HTTP 400: invalid_grant)" in opened["instructions"]
        tokenstore.write(state, "docs", tokenstore.Tokens(access_token=TOKEN, expires_at=None))
        assert bridge.receive(timeout=10) == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        bridge.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert len(bridge.receive()["result"]["tools"]) == 3
        assert [r["auth"] for r in server.requests() if r["rpc"] == "initialize"] == ["Bearer revoked-access", f"Bearer {TOKEN}"]
    finally:
        bridge.close()


def test_a_sign_in_for_another_address_is_not_used_nor_refreshed_after_the_model_moves_the_provider(kb_server, tmp_path,
                                                                                                     token_endpoint):
    """The provider's url changed in the model after `projector login`: the stored sign-in was
    issued for the old address (its RFC 8707 resource), so the session is answered here as an
    unsigned one that names both addresses, and neither the old token nor a refresh for the old
    resource is spent on the new server."""
    server = kb_server()
    old = "http://127.0.0.1:9/old/mcp"
    layout, env, state = signed_in(tmp_path, server.url, token_endpoint, "old-access", time.time() + 3000)
    tokenstore.write(state, "docs", tokenstore.Tokens(access_token="old-access", expires_at=time.time() + 3000,
                                                      token_endpoint=token_endpoint.url, client_id="projector-test", resource=old,
                                                      secrets=tokenstore.Secrets(refresh_token="refresh-1")))
    from test_bridge import INITIALIZED, Raw

    bridge = Raw(layout, "work/a", env=env)
    try:
        bridge.send(INIT, INITIALIZED)
        opened = bridge.receive()["result"]
        assert opened["capabilities"]["tools"]["listChanged"] is True
        assert f"signed in to docs for {old}, the model now says {server.url}: run `projector login docs`" in opened["instructions"]
        assert token_endpoint.refreshes == [] and server.requests() == []
        assert tokenstore.read(state, "docs").secrets.refresh_token == "refresh-1"
        # a session the model had not moved yet renews the old sign-in: still not this address's
        tokenstore.write(state, "docs", tokenstore.Tokens(access_token="old-access-2", expires_at=None, resource=old))
        time.sleep(2)  # the sign-in's poll looks at the token file every 0.75 s
        tokenstore.write(state, "docs", tokenstore.Tokens(access_token=TOKEN, expires_at=None, resource=server.url))
        assert bridge.receive(timeout=10) == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        assert {r["auth"] for r in server.requests()} == {f"Bearer {TOKEN}"}
    finally:
        bridge.close()
    assert "old-access" not in b"".join(bridge.stderr).decode()


def test_a_sign_in_for_the_servers_protected_resource_serves_the_address_below_it(kb_server, tmp_path, token_endpoint):
    """The Protected Resource Metadata may name a parent of the URL (the SDK's
    check_resource_allowed): that sign-in is the provider's, sent as it is."""
    server = kb_server()
    layout, env, state = signed_in(tmp_path, server.url, token_endpoint, TOKEN, time.time() + 3000)
    parent = server.url.removesuffix("mcp")
    tokenstore.write(state, "docs", tokenstore.Tokens(access_token=TOKEN, expires_at=time.time() + 3000, resource=parent))
    reply, _ = answer(start(layout, env))
    assert reply["result"]["serverInfo"]["name"] != "projector"  # the provider's own answer
    assert {r["auth"] for r in server.requests()} == {f"Bearer {TOKEN}"}
