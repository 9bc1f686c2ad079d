"""The sign-in (oauth.flow) as `projector login` runs it against a scripted loopback authorization
server (tests/servers/scripted.py): what it refuses, and what a person sees when it fails. The
whole sign-in runs against the MCP conformance suite's authorization servers
(tests/runtime/bridge/test_peers.py) and oidc-provider (test_oidc_provider.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from projector.core import tokenstore
from projector.oauth.flow import OFFERED, REQUIRED, device_grant

FOLLOW = Path(__file__).resolve().parents[1] / "runtime" / "bridge" / "follow_redirects.py"


def login_model(sandbox, url: str, browser: str | Path = FOLLOW) -> Path:
    sandbox.env["BROWSER"] = str(browser)
    return sandbox.model(f"version: 1\nproviders:\n  linear:\n    url: {url}\n    oauth: true\n")


def refused(sandbox, server) -> str:
    """The last line of a `projector login` against ``server`` that fails, having kept nothing."""
    done = sandbox.run("login", "linear", config=login_model(sandbox, f"{server.origin}/mcp"))
    assert done.returncode == 1, done.stdout
    assert tokenstore.read(sandbox.env["XDG_STATE_HOME"] + "/projector", "linear") is None
    return done.stderr.splitlines()[-1]


@pytest.mark.parametrize(("pkce", "said"), [
    (None, "does not offer PKCE (its metadata lists no code_challenge_methods_supported)"),
    (("plain",), "offers PKCE only as plain, not S256"),
])
def test_an_authorization_server_without_pkce_s256_is_refused(sandbox, authorization_server, pkce, said):
    server = authorization_server(pkce=pkce)
    done = sandbox.run("login", "linear", config=login_model(sandbox, f"{server.origin}/mcp"))
    assert (done.returncode, done.stderr) == (1, f"error: the authorization server {server.origin} {said}, which the MCP "
                                                 "authorization spec requires: projector does not sign in there; ask the "
                                                 "server's operator to turn on PKCE with S256\n")
    assert "GET /authorize" not in server.paths() and "POST /token" not in server.paths()  # no code was ever asked for
    assert tokenstore.read(sandbox.env["XDG_STATE_HOME"] + "/projector", "linear") is None


def test_a_server_that_cannot_be_reached_is_said_with_what_to_check(sandbox):
    from servers import refused_port

    with refused_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        done = sandbox.run("login", "linear", config=login_model(sandbox, url))
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: signing in to linear failed: cannot reach {url} (ConnectError: ")
    assert done.stderr.endswith("): check the provider's url in the model, and that the server is up\n")


@pytest.mark.parametrize(("route", "answer"), [
    ("POST /token", {"token": "canary-access-7", "token_type": "Bearer", "refresh_token": "canary-refresh-7"}),  # no access_token
    ("POST /register", {"redirect_uris": [], "client_secret": "canary-client-secret"}),  # no client_id
])
def test_an_answer_the_sdk_cannot_read_is_said_without_the_secrets_it_holds(sandbox, authorization_server, route, answer):
    """pydantic's validation error quotes the answer it could not read (``input_value={...}``),
    tokens and secrets included, and the SDK's error message quotes that: what login says (to the
    terminal, or to a bridge's sign-in log) names the field, never the value."""
    from servers.scripted import Answer

    server = authorization_server()
    server.routes[route] = Answer(201 if "register" in route else 200, answer)
    done = sandbox.run("login", "linear", config=login_model(sandbox, f"{server.origin}/mcp"))
    assert done.returncode == 1
    assert "canary" not in done.stdout + done.stderr, done.stderr
    said = {"POST /token": "OAuthTokenError: Invalid token response: access_token: Field required",
            "POST /register": "OAuthRegistrationError: Invalid registration response: client_id: Field required"}[route]
    assert done.stderr.splitlines()[-1] == f"error: signing in to linear failed: {said}"


def test_an_authorization_server_that_publishes_no_metadata_is_refused_where_the_resource_names_it(sandbox, authorization_server):
    """With Protected Resource Metadata naming the authorization server, that server must publish
    its metadata (RFC 8414 or OpenID), which says whether it does PKCE with S256: without it the
    SDK would fall back to /authorize and /token on its origin, and nothing would be checked. Only
    the 2025-03-26 fallback (no Protected Resource Metadata at all) signs in without metadata."""
    server = authorization_server()
    del server.routes["GET /.well-known/oauth-authorization-server"]
    assert refused(sandbox, server) == (
        f"error: the authorization server {server.origin} that {server.origin}/mcp names publishes no metadata (RFC 8414), "
        "so whether it does PKCE with S256, which the MCP authorization spec requires, cannot be checked: projector does not "
        "sign in there; ask the server's operator to publish it")
    assert "GET /authorize" not in server.paths() and "POST /token" not in server.paths()


def test_what_the_server_says_reaches_the_terminal_without_its_control_characters(sandbox, authorization_server):
    """A refusal's ``error_description`` is the server's text: escape sequences in it could clear
    the screen, or a new line could forge what projector says (and a bridge's sign-in log keeps it)."""
    from urllib.parse import quote

    from servers.scripted import Answer

    server = authorization_server()
    forged = "\x1b[2J\x1b[Hall good\nsigned in to linear until 2099-01-01 00:00\u202e"
    server.routes["GET /authorize"] = lambda request: Answer(302, headers=(
        ("Location", f"{request.query['redirect_uri']}?error=access_denied&error_description={quote(forged)}"
                     f"&state={request.query['state']}"),))
    assert refused(sandbox, server) == ("error: the server refused the sign-in: access_denied "
                                            "(\\x1b[2J\\x1b[Hall good\\nsigned in to linear until 2099-01-01 00:00\\u202e)")


def test_an_authorization_server_over_plain_http_to_another_host_is_refused_before_anything_is_sent(sandbox, authorization_server):
    """The model refuses a token over http:// to another host, but the authorization server is
    the one the server's metadata names: there the code, the client's secret and the tokens would
    cross the network in clear. (0.0.0.0 is not loopback by name, yet Linux connects it here.)"""
    from servers.scripted import Answer

    server = authorization_server()
    elsewhere = server.origin.replace("127.0.0.1", "0.0.0.0")
    metadata = server.routes["GET /.well-known/oauth-authorization-server"].body
    server.routes["GET /.well-known/oauth-protected-resource/mcp"] = Answer(200, {"resource": f"{server.origin}/mcp",
                                                                                  "authorization_servers": [elsewhere]})
    server.routes["GET /.well-known/oauth-authorization-server"] = Answer(200, {
        k: v.replace(server.origin, elsewhere) if isinstance(v, str) else v for k, v in metadata.items()})
    assert refused(sandbox, server) == (
        f"error: {elsewhere}/.well-known/oauth-authorization-server is plain http:// to 0.0.0.0, which is not this machine: "
        "the sign-in's codes, secrets and tokens would cross the network in clear (the MCP authorization spec requires "
        "HTTPS there), so projector does not sign in; say insecure: true of the provider if you accept that")
    assert [path for path in server.paths() if path.startswith("POST")] == ["POST /mcp"]


def test_an_authorization_page_over_plain_http_to_another_host_is_never_opened(sandbox, authorization_server):
    """Where the person types a password: the browser is not sent there."""
    from servers.scripted import Answer

    server = authorization_server()
    elsewhere = server.origin.replace("127.0.0.1", "0.0.0.0")
    metadata = server.routes["GET /.well-known/oauth-authorization-server"].body
    server.routes["GET /.well-known/oauth-authorization-server"] = Answer(200, dict(metadata, authorization_endpoint=f"{elsewhere}/authorize"))
    assert refused(sandbox, server).startswith(f"error: {elsewhere}/authorize is plain http:// to 0.0.0.0, which is not this machine")
    assert "GET /authorize" not in server.paths() and "POST /token" not in server.paths()


def test_the_device_grant_is_used_when_asked_or_where_no_browser_can_open_and_nothing_is_pasted():
    assert device_grant(asked=True, paste=False, nobrowser=False) == REQUIRED
    assert device_grant(asked=False, paste=False, nobrowser=True) == OFFERED
    assert device_grant(asked=False, paste=True, nobrowser=True) is None
    assert device_grant(asked=False, paste=False, nobrowser=False) is None


@pytest.mark.parametrize(("field", "which", "unfit"), [("access_token", "an access token", "canary-7\r\nX-Forged: 1"),
                                                       ("access_token", "an access token", "canary-7\u00e9"),
                                                       ("refresh_token", "a refresh token", "canary-7\x00")])
def test_a_token_no_request_can_carry_is_refused_at_sign_in_and_never_said(sandbox, authorization_server, field, which, unfit):
    """A line break in an access token would end its Authorization header and start another; the
    HTTP library refuses such a header, quoting it. The token is refused as the answer arrives,
    before it is sent anywhere, and the error names the provider and what to do."""
    from servers.scripted import Answer

    server = authorization_server()
    tokens = {"access_token": "canary-access-7", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "canary-refresh-7"}
    server.routes["POST /token"] = Answer(200, dict(tokens, **{field: unfit}))
    done = sandbox.run("login", "linear", config=login_model(sandbox, f"{server.origin}/mcp"))
    assert done.returncode == 1
    assert "canary" not in done.stdout + done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"error: the authorization server of linear answered with {which} holding a line break, a control or a non-ASCII "
        "character, which no request can carry (RFC 6749 allows printable ASCII only): projector does not keep it; sign in "
        "again (projector login linear), and if the server answers the same, tell its operator")
    assert tokenstore.read(sandbox.env["XDG_STATE_HOME"] + "/projector", "linear") is None
    assert [r.headers.get("Authorization") for r in server.received if r.path == "/mcp"] == [None]  # the token never went up
