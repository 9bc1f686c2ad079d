"""A request made with a stored sign-in (a refresh, a revocation): the client's credentials and
the token go to the endpoint the sign-in stored, and nowhere else."""

from __future__ import annotations

import pytest

from projector.core import tokenrequest
from projector.core.tokenstore import Secrets, Tokens
from servers.scripted import Answer, Scripted


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_token_endpoint_that_redirects_is_not_followed_with_the_client_secret(status):
    """urllib follows a POST's 301/302/303 as a GET to wherever the Location says, and takes the
    Authorization header (HTTP Basic: the client's secret) along, to another origin too."""
    elsewhere = Scripted({"GET /collect": Answer(200, {}), "POST /collect": Answer(200, {})})
    endpoint = Scripted({"POST /token": Answer(status, headers=(("Location", f"{elsewhere.origin}/collect"),))})
    try:
        tokens = Tokens(access_token="canary-access", expires_at=None, token_endpoint=f"{endpoint.origin}/token",
                        client_id="client-7", auth_method="client_secret_basic")
        form, headers = tokenrequest.client_authenticated(tokens, Secrets(client_secret="canary-secret"),
                                                          {"grant_type": "refresh_token", "refresh_token": "canary-refresh"})
        status_seen, _body, _why = tokenrequest.post(f"{endpoint.origin}/token", form, headers, timeout=5)
    finally:
        endpoint.close()
        elsewhere.close()
    assert elsewhere.received == []
    assert status_seen == status  # said as the refusal it is: the request is not made elsewhere
