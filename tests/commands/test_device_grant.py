"""The device authorization grant's polling (RFC 8628 §3.4-3.5): how often the token endpoint is
asked, and how each of its answers ends the wait. The whole sign-in runs against oidc-provider
(tests/runtime/bridge/test_oidc_provider.py); here the token endpoint's answers are scripted,
including the slow_down oidc-provider never sends, and the waits are recorded, not slept."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from projector.commands import device_grant
from projector.commands.login import OFFERED, REQUIRED, device_grant as chosen


class Answer:
    def __init__(self, status: int, body: dict) -> None:
        self.status_code = status
        self.body = body

    def json(self) -> dict:
        return self.body


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

    return asyncio.run(device_grant.poll(endpoint, CONTEXT, code, "http://127.0.0.1:2/mcp", sleep)), waits


def pending(error: str = "authorization_pending") -> Answer:
    return Answer(400, {"error": error})


def test_polls_at_the_interval_and_five_seconds_slower_after_each_slow_down():
    endpoint = TokenEndpoint(pending(), pending("slow_down"), pending(), pending("slow_down"), Answer(200, {"access_token": "a"}))
    tokens, waits = polled(endpoint, {"device_code": "d", "interval": 2, "expires_in": 600})
    assert tokens == {"access_token": "a"}
    assert waits == [2, 2, 7, 7, 12]
    assert endpoint.forms[0] == {"grant_type": device_grant.GRANT, "device_code": "d", "client_id": "projector-device",
                                 "resource": "http://127.0.0.1:2/mcp"}


def test_without_an_interval_it_polls_every_five_seconds():
    _, waits = polled(TokenEndpoint(pending(), Answer(200, {"access_token": "a"})), {"device_code": "d"})
    assert waits == [5, 5]


@pytest.mark.parametrize(("error", "said"), [("access_denied", "the sign-in was refused at the authorization server"),
                                             ("expired_token", "the code expired before it was confirmed; sign in again"),
                                             ("invalid_client", "refused the device sign-in (HTTP 400: invalid_client)")])
def test_a_refusal_ends_the_wait_with_what_happened(error, said):
    with pytest.raises(device_grant.DeviceSignInFailed, match=said.replace("(", r"\(").replace(")", r"\)")):
        polled(TokenEndpoint(pending(), pending(error)), {"device_code": "d", "interval": 1})


def test_the_device_grant_is_used_when_asked_or_where_no_browser_can_open_and_nothing_is_pasted():
    assert chosen(asked=True, paste=False, nobrowser=False) == REQUIRED
    assert chosen(asked=False, paste=False, nobrowser=True) == OFFERED
    assert chosen(asked=False, paste=True, nobrowser=True) is None
    assert chosen(asked=False, paste=False, nobrowser=False) is None
