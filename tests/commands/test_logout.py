"""`projector logout`: the tokens `projector login` stored are revoked at the authorization
server's revocation endpoint (RFC 7009), the refresh token first, the client authenticated as at
a refresh; then forgotten here whatever the server answered. The server is a scripted loopback
one (tests/servers/scripted.py) that keeps what it was sent; the sign-in is the real one."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from servers.scripted import Answer, Received, Scripted

from projector.core import tokenstore

BROWSER = Path(__file__).resolve().parents[1] / "runtime" / "bridge" / "follow_redirects.py"
INITIALIZED = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25", "capabilities": {},
                                                     "serverInfo": {"name": "scripted", "version": "1"}}}


class AuthorizationServer(Scripted):
    """An MCP server that is its own authorization server: Protected Resource Metadata, metadata
    naming ``revocation`` (when given), registration of a confidential client (HTTP Basic at the
    token endpoint), an authorization that approves at once, and one token pair."""

    def __init__(self, revocation: Answer | None = Answer(200)) -> None:
        super().__init__()
        origin = self.origin
        self.routes.update({
            "POST /mcp": self.mcp,
            "GET /.well-known/oauth-protected-resource/mcp": Answer(200, {"resource": f"{origin}/mcp", "authorization_servers": [origin]}),
            "GET /.well-known/oauth-authorization-server": Answer(200, {
                "issuer": origin, "authorization_endpoint": f"{origin}/authorize", "token_endpoint": f"{origin}/token",
                "registration_endpoint": f"{origin}/register", "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"], "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                **({"revocation_endpoint": f"{origin}/revoke"} if revocation else {})}),
            "POST /register": lambda request: Answer(201, {"client_id": "client-7", "client_secret": "client-secret-7",
                                                           "token_endpoint_auth_method": "client_secret_basic",
                                                           "redirect_uris": request.document["redirect_uris"]}),
            "GET /authorize": lambda request: Answer(302, headers=(
                ("Location", f"{request.query['redirect_uri']}?code=code-7&state={request.query['state']}"),)),
            "POST /token": Answer(200, {"access_token": "canary-access-7", "token_type": "Bearer", "expires_in": 3600,
                                        "refresh_token": "canary-refresh-7"}),
        })
        if revocation:
            self.routes["POST /revoke"] = revocation

    def mcp(self, request: Received) -> Answer:
        if request.headers.get("Authorization") == "Bearer canary-access-7":
            return Answer(200, INITIALIZED)
        return Answer(401, {"error": "invalid_token"}, headers=(
            ("WWW-Authenticate", f'Bearer resource_metadata="{self.origin}/.well-known/oauth-protected-resource/mcp"'),))

    def revocations(self) -> list[Received]:
        return [r for r in self.received if r.path == "/revoke"]


@pytest.fixture
def authorization_server():
    started: list[AuthorizationServer] = []

    def start(revocation: Answer | None = Answer(200)) -> AuthorizationServer:
        started.append(AuthorizationServer(revocation))
        return started[-1]

    yield start
    for server in started:
        server.close()


def signed_in(sandbox, server: AuthorizationServer) -> Path:
    model = sandbox.model(f"version: 1\nproviders:\n  linear:\n    url: {server.origin}/mcp\n    oauth: true\n")
    sandbox.env["BROWSER"] = str(BROWSER)
    done = sandbox.run("login", "linear", config=model)
    assert done.returncode == 0, done.stderr
    return model


def state(sandbox) -> str:
    return sandbox.env["XDG_STATE_HOME"] + "/projector"


def test_logout_revokes_the_stored_refresh_token_then_the_access_token(sandbox, authorization_server):
    server = authorization_server()
    model = signed_in(sandbox, server)
    assert tokenstore.read(state(sandbox), "linear").revocation_endpoint == f"{server.origin}/revoke"  # kept at login
    done = sandbox.run("logout", "linear", config=model)
    assert (done.returncode, done.stdout, done.stderr) == (0, "signed out of linear (its tokens are revoked at the server)\n", "")
    basic = "Basic " + base64.b64encode(b"client-7:client-secret-7").decode()  # as the client registered for the token endpoint
    assert [(r.form, r.headers.get("Authorization")) for r in server.revocations()] == [
        ({"token": "canary-refresh-7", "token_type_hint": "refresh_token"}, basic),
        ({"token": "canary-access-7", "token_type_hint": "access_token"}, basic),
    ]
    assert tokenstore.read(state(sandbox), "linear") is None


def test_a_server_without_a_revocation_endpoint_is_said_and_sent_nothing(sandbox, authorization_server):
    server = authorization_server(revocation=None)
    model = signed_in(sandbox, server)
    sent = len(server.received)
    done = sandbox.run("logout", "linear", config=model)
    assert done.stdout == "signed out of linear (the server names no revocation endpoint: its tokens stay valid there until they expire)\n"
    assert len(server.received) == sent and tokenstore.read(state(sandbox), "linear") is None


@pytest.mark.parametrize(("answer", "said"), [
    (Answer(400, {"error": "unsupported_token_type", "error_description": "canary-access-7 is not mine"}),
     "the refresh token: HTTP 400: unsupported_token_type; the access token: HTTP 400: unsupported_token_type"),
    (Answer(200, delay=8), "the refresh token: no answer within 5 s"),  # asked once: a server that hangs is not asked again
])
def test_a_failed_revocation_is_said_and_the_tokens_are_forgotten_all_the_same(sandbox, authorization_server, answer, said):
    server = authorization_server(revocation=answer)
    model = signed_in(sandbox, server)
    done = sandbox.run("logout", "linear", config=model)
    assert (done.returncode, done.stdout) == (0, "signed out of linear\n")
    assert done.stderr == (f"warning: revoking the tokens of linear at {server.origin}/revoke failed ({said}): they stay valid there "
                           "until they expire; they are forgotten here all the same\n")
    assert "canary" not in done.stdout + done.stderr  # the server's description quoted a token: never repeated
    assert tokenstore.read(state(sandbox), "linear") is None


def test_a_token_file_projector_cannot_trust_is_forgotten_without_sending_its_secrets(sandbox, authorization_server):
    """Its revocation endpoint could be anyone's: the refresh token is not sent there."""
    server = authorization_server()
    model = signed_in(sandbox, server)
    (Path(state(sandbox)) / "oauth" / "linear.json").chmod(0o644)
    done = sandbox.run("logout", "linear", config=model)
    assert done.stdout == "signed out of linear\n" and "nothing was revoked at the server" in done.stderr
    assert server.revocations() == [] and tokenstore.read(state(sandbox), "linear") is None
