"""The device authorization grant's polling (RFC 8628 §3.4-3.5): how often the token endpoint is
asked, and how each of its answers ends the wait. The whole sign-in runs against oidc-provider
(tests/runtime/bridge/test_oidc_provider.py); here the token endpoint's answers are scripted,
including the slow_down oidc-provider never sends, and the waits are recorded, not slept."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest

from projector.oauth import SignInFailed, device


class Answer:
    def __init__(self, status: int, body: dict) -> None:
        self.status_code = status
        self.body = body

    def json(self) -> dict:
        return self.body

    @property
    def content(self) -> bytes:
        return json.dumps(self.body).encode()


class TokenEndpoint:
    """Answers the polls in order; keeps what each poll sent."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.forms: list[dict] = []

    async def post(self, endpoint: str, data: dict, headers: dict) -> Answer:
        self.forms.append(data)
        return self.answers.pop(0)


CONTEXT = SimpleNamespace(client_info=SimpleNamespace(client_id="projector-device"), prepare_token_auth=lambda data, headers: (data, headers),
                          oauth_metadata=SimpleNamespace(token_endpoint="http://127.0.0.1:1/token"))


def polled(endpoint: TokenEndpoint, code: dict) -> tuple[dict, list[float]]:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    return asyncio.run(device.poll(endpoint, CONTEXT, code, "http://127.0.0.1:2/mcp", sleep)), waits


def pending(error: str = "authorization_pending") -> Answer:
    return Answer(400, {"error": error})


def test_polls_at_the_interval_and_five_seconds_slower_after_each_slow_down():
    endpoint = TokenEndpoint(pending(), pending("slow_down"), pending(), pending("slow_down"), Answer(200, {"access_token": "a"}))
    tokens, waits = polled(endpoint, {"device_code": "d", "interval": 2, "expires_in": 600})
    assert tokens == {"access_token": "a"}
    assert waits == [2, 2, 7, 7, 12]
    assert endpoint.forms[0] == {"grant_type": device.GRANT, "device_code": "d", "client_id": "projector-device",
                                 "resource": "http://127.0.0.1:2/mcp"}


def test_without_an_interval_it_polls_every_five_seconds():
    _, waits = polled(TokenEndpoint(pending(), Answer(200, {"access_token": "a"})), {"device_code": "d"})
    assert waits == [5, 5]


@pytest.mark.parametrize(("error", "said"), [("access_denied", "the sign-in was refused at the authorization server"),
                                             ("expired_token", "the code expired before it was confirmed; sign in again"),
                                             ("invalid_client", "refused the device sign-in (HTTP 400: invalid_client)")])
def test_a_refusal_ends_the_wait_with_what_happened(error, said):
    with pytest.raises(SignInFailed, match=said.replace("(", r"\(").replace(")", r"\)")):
        polled(TokenEndpoint(pending(), pending(error)), {"device_code": "d", "interval": 1})


class RefusingServer:
    """An MCP server on loopback that asks for OAuth (its Protected Resource Metadata names its
    own origin as the authorization server, which offers the device grant and issues a token at
    once) and then refuses every token it issued: what a sign-in for the wrong audience meets."""

    def __init__(self) -> None:
        from servers.loopback import Loopback, Quiet

        self.token_requests = 0
        self.refused: list[str] = []
        server = self

        class Handler(Quiet):
            def do_GET(self) -> None:  # noqa: N802
                origin = server.origin
                if self.path == "/.well-known/oauth-protected-resource/mcp":
                    return self.answer(200, {"resource": f"{origin}/mcp", "authorization_servers": [origin]})
                if self.path == "/.well-known/oauth-authorization-server":
                    return self.answer(200, {"issuer": origin, "authorization_endpoint": f"{origin}/authorize",
                                             "token_endpoint": f"{origin}/token", "device_authorization_endpoint": f"{origin}/device",
                                             "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"]})
                return self.answer(404, {})

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/device":
                    return self.answer(200, {"device_code": "d", "user_code": "ABCD", "verification_uri": f"{server.origin}/verify",
                                             "expires_in": 60, "interval": 1})
                if self.path == "/token":
                    server.token_requests += 1
                    return self.answer(200, {"access_token": "canary-refused", "token_type": "Bearer", "expires_in": 3600})
                server.refused.append(self.headers.get("Authorization", ""))
                assert body
                return self.answer(401, {"error": "invalid_token"}, {
                    "WWW-Authenticate": f'Bearer error="invalid_token", resource_metadata="{server.origin}/.well-known/oauth-protected-resource/mcp"'})

        self.loopback = Loopback(Handler, "/mcp")
        self.url = self.loopback.url
        self.origin = self.url.removesuffix("/mcp")

    def close(self) -> None:
        self.loopback.close()


def test_a_device_sign_in_whose_token_the_server_refuses_is_said_and_not_kept(sandbox):
    """After the device grant, login opens a session with the token as the browser's path does:
    a token the MCP server turns down ends the login with that said, and nothing is stored."""
    from projector.core import tokenstore

    server = RefusingServer()
    try:
        model = sandbox.model(f"version: 1\nproviders:\n  docs:\n    url: {server.url}\n    oauth:\n      client_id: pre-registered\n")
        done = sandbox.run("login", "docs", "--device", config=model)
    finally:
        server.close()
    assert server.token_requests == 1 and "Bearer canary-refused" in server.refused
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the server still refuses the token (HTTP 401) after signing in" in done.stderr
    assert tokenstore.read(sandbox.env["XDG_STATE_HOME"] + "/projector", "docs") is None
    assert "canary" not in done.stdout + done.stderr


ISSUER = "https://auth.example.com"


@pytest.mark.parametrize(("code", "said"), [
    ({"verification_uri": "https://auth.example.com/device\x1b[2J\x1b[H", "user_code": "ABCD"}, "gave no https:// address"),
    ({"verification_uri": "javascript:alert(1)", "user_code": "ABCD"}, "gave no https:// address"),
    ({"verification_uri": "http://auth.example.com/device", "user_code": "ABCD"}, "gave no https:// address"),
    ({"verification_uri": "https://auth.example.com/device", "user_code": "AB\nsigned in"}, "gave a code that is not a short printable one"),
])
def test_an_address_or_code_that_is_not_what_it_claims_is_never_shown(code, said):
    """The address and the code are the server's text, printed for a person to act on: an escape
    sequence would rewrite the terminal, a new line forge what projector says."""
    with pytest.raises(SignInFailed, match=said) as refused:
        device.instructions(code, ISSUER)
    assert "\x1b" not in str(refused.value) and "\n" not in str(refused.value)


def test_an_address_on_another_host_than_the_issuer_is_said_to_be_so():
    """Device-code phishing: a server shows a well-known sign-in page with a code of its own."""
    shown = device.instructions({"verification_uri": "https://microsoft.com/devicelogin", "user_code": "WDJB-MJHT",
                                       "expires_in": 900}, ISSUER)
    assert shown.endswith("(that address is on microsoft.com, not on auth.example.com, the authorization server the MCP "
                          "server named: go on only if you expected microsoft.com to sign you in)")
    assert "then enter the code WDJB-MJHT (it expires in 15 minutes)" in shown
    own = device.instructions({"verification_uri_complete": "https://auth.example.com/device?code=WDJB", "user_code": "WDJB"}, ISSUER)
    assert "that address is on" not in own and "confirm the code WDJB" in own


def test_a_server_cannot_hold_a_login_with_a_huge_interval_or_expiry():
    """A login holds the provider's sign-in lock while it polls: every bridge waits for it."""
    _, waits = polled(TokenEndpoint(pending(), Answer(200, {"access_token": "a"})), {"device_code": "d", "interval": 10**9})
    assert waits == [60, 60]
    shown = device.instructions({"verification_uri": f"{ISSUER}/device", "user_code": "A", "expires_in": 10**9}, ISSUER)
    assert "(it expires in 30 minutes)" in shown
