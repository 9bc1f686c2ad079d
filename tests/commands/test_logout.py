"""`projector logout`: the tokens `projector login` stored are revoked at the authorization
server's revocation endpoint (RFC 7009), the refresh token first, the client authenticated as at
a refresh; then forgotten here whatever the server answered. The server is a scripted loopback
one (tests/servers/scripted.py) that keeps what it was sent; the sign-in is the real one."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from servers.scripted import Answer, AuthorizationServer, Received

from projector.core import tokenstore

BROWSER = Path(__file__).resolve().parents[1] / "runtime" / "bridge" / "follow_redirects.py"


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


@pytest.mark.parametrize("insecure", [False, True])
def test_tokens_are_never_revoked_in_clear_at_another_host_unless_the_model_says_insecure(sandbox, authorization_server, insecure):
    """A token file an older projector wrote may name a revocation endpoint over plain http://
    to another host (0.0.0.0 is not loopback by name, yet Linux connects it here): the tokens are
    not sent there unless the provider accepts plain http://; they are forgotten all the same."""
    from projector.core.record import replace

    server = authorization_server()
    model = signed_in(sandbox, server)
    elsewhere = f"{server.origin.replace('127.0.0.1', '0.0.0.0')}/revoke"
    tokenstore.write(state(sandbox), "linear", replace(tokenstore.read(state(sandbox), "linear"), revocation_endpoint=elsewhere))
    if insecure:
        model.write_text(model.read_text() + "    insecure: true\n")
    done = sandbox.run("logout", "linear", config=model)
    assert tokenstore.read(state(sandbox), "linear") is None
    if insecure:
        assert len(server.revocations()) == 2 and done.stdout == "signed out of linear (its tokens are revoked at the server)\n"
        return
    assert server.revocations() == [] and done.stdout == "signed out of linear\n"
    assert done.stderr == (f"warning: the revocation endpoint of linear, {elsewhere}, is plain http:// to 0.0.0.0, which is not "
                           "this machine: the tokens would cross the network in clear, so they were not revoked there (they "
                           "stay valid until they expire; say insecure: true of the provider if you accept that); they are "
                           "forgotten here all the same\n")


def test_a_sign_in_the_model_no_longer_has_can_still_be_signed_out_of(sandbox, authorization_server):
    """The provider was signed in to, then taken out of the model: its tokens are not left
    stuck in the store (and at the server) with no command to take them out."""
    server = authorization_server()
    model = signed_in(sandbox, server)
    model.write_text("version: 1\nproviders:\n  docs:\n    url: https://kb.example.com/mcp\n")
    done = sandbox.run("logout", "linear", config=model)
    assert (done.returncode, done.stdout) == (0, "signed out of linear (its tokens are revoked at the server)\n"), done.stderr
    assert len(server.revocations()) == 2 and tokenstore.read(state(sandbox), "linear") is None
    for name in ("linear", "../oauth/linear", "nobody"):  # nothing left, a name that is no provider's: the model's error
        refused = sandbox.run("logout", name, config=model)
        assert refused.returncode == 1 and refused.stderr.startswith(f'error: no provider named "{name}"'), refused.stderr
