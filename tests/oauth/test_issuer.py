"""The 2025-03-26 fallback's issuer at `projector login`: an issuer with a path on the MCP
server's own origin is accepted there (the conformance suite's
auth/2025-03-26-oauth-metadata-backcompat, tests/runtime/bridge/test_peers.py, signs in through
it); an issuer on another origin is refused before anything is sent there, and with Protected
Resource Metadata the SDK's exact check stands."""

from __future__ import annotations

import pytest
from servers.scripted import Answer, Scripted

from projector.oauth.issuer import ForeignIssuer, fallback_issuer

CHALLENGE = Answer(401, {"error": "invalid_token"}, headers=(("WWW-Authenticate", 'Bearer error="invalid_token"'),))


def metadata(issuer: str, endpoints: str) -> Answer:
    return Answer(200, {"issuer": issuer, "authorization_endpoint": f"{endpoints}/authorize", "token_endpoint": f"{endpoints}/token",
                        "registration_endpoint": f"{endpoints}/register", "response_types_supported": ["code"],
                        "code_challenge_methods_supported": ["S256"]})


@pytest.fixture
def servers():
    started: list[Scripted] = []

    def start(routes=None) -> Scripted:
        started.append(Scripted(routes))
        return started[-1]

    yield start
    for server in started:
        server.close()


def login(sandbox, url: str):
    sandbox.env["BROWSER"] = "/bin/false"  # nothing must get as far as a browser
    model = sandbox.model(f"version: 1\nproviders:\n  legacy:\n    url: {url}\n    oauth: true\n")
    return sandbox.run("login", "legacy", config=model)


def test_an_issuer_on_another_origin_is_refused_before_anything_is_sent_there(sandbox, servers):
    elsewhere = servers()
    mcp = servers({"POST /mcp": CHALLENGE})
    mcp.routes["GET /.well-known/oauth-authorization-server"] = metadata(elsewhere.origin, elsewhere.origin)
    done = login(sandbox, f"{mcp.origin}/mcp")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"error: the authorization server metadata at {mcp.origin}/.well-known/oauth-authorization-server names the issuer "
        f"{elsewhere.origin}, not on the MCP server's own origin ({mcp.origin}): without Protected Resource Metadata the "
        "server is its own authorization server, so projector does not sign in there (RFC 8414 §3.3); ask the server's "
        "operator to publish Protected Resource Metadata naming that authorization server")
    assert elsewhere.received == []  # no registration, no token request went there
    assert "POST /register" not in mcp.paths()


def test_with_protected_resource_metadata_the_issuer_must_be_the_one_it_names(sandbox, servers):
    """The fallback's leeway is the fallback's only: a named authorization server whose metadata
    says another issuer, even on its own origin, is refused (the SDK's RFC 8414 §3.3 check)."""
    mcp = servers({"POST /mcp": CHALLENGE})
    mcp.routes["GET /.well-known/oauth-protected-resource/mcp"] = Answer(200, {"resource": f"{mcp.origin}/mcp",
                                                                               "authorization_servers": [mcp.origin]})
    mcp.routes["GET /.well-known/oauth-authorization-server"] = metadata(f"{mcp.origin}/oauth", f"{mcp.origin}/oauth")
    done = login(sandbox, f"{mcp.origin}/mcp")
    assert done.returncode == 1
    assert f"issuer mismatch: {mcp.origin}/oauth != {mcp.origin}" in done.stderr
    assert "POST /oauth/register" not in mcp.paths()


@pytest.mark.parametrize(("issuer", "accepted"), [
    ("https://mcp.example.com/oauth", "https://mcp.example.com/oauth"),
    ("https://MCP.example.com:443/tenant/", "https://MCP.example.com:443/tenant/"),  # the same origin, written otherwise
    ("https://mcp.example.com", None), ("https://mcp.example.com/", None),  # the bare origin: the SDK's own case
    (None, None), (42, None),  # no issuer said: the SDK decides
])
def test_an_issuer_on_the_servers_origin_is_accepted_as_it_is(issuer, accepted):
    assert fallback_issuer("https://mcp.example.com/mcp", "https://mcp.example.com/.well-known/x", issuer) == accepted


@pytest.mark.parametrize("issuer", ["http://mcp.example.com/oauth", "https://mcp.example.com:8443/oauth",
                                    "https://auth.example.com/oauth", "https://mcp.example.com.evil.test"])
def test_another_scheme_host_or_port_is_another_origin(issuer):
    with pytest.raises(ForeignIssuer, match="not on the MCP server's own origin"):
        fallback_issuer("https://mcp.example.com/mcp", "https://mcp.example.com/.well-known/x", issuer)


GRANTED = Answer(200, {"access_token": "machine-token", "token_type": "Bearer", "expires_in": 3600})


def session(request):
    """The MCP server: a session for the machine's token, else the 401 that starts the sign-in."""
    if request.headers.get("Authorization") != "Bearer machine-token":
        return CHALLENGE
    return Answer(200, {"jsonrpc": "2.0", "id": request.document["id"], "result": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "legacy", "version": "1"}}})


def machine_login(sandbox, tmp_path, url: str, credentials: str, issuer: str | None = None):
    """`projector login` of a client_credentials provider: a secret, or a private key's signed assertion."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    if credentials == "secret":
        sandbox.env["CI_SECRET"] = "ci-secret"
        grant = "      client_secret_env: CI_SECRET\n      client_credentials: true\n"
    else:
        key = tmp_path / "ci.pem"
        key.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        grant = f"      client_credentials: {{private_key_file: {key}, algorithm: ES256}}\n"
    if issuer is not None:
        grant += f"      issuer: {issuer}\n"
    model = sandbox.model(f"version: 1\nproviders:\n  legacy:\n    url: {url}\n    oauth:\n      client_id: ci-bot\n{grant}")
    return sandbox.run("login", "legacy", config=model)


@pytest.mark.parametrize("issuer", [None, "the fallback's"])
@pytest.mark.parametrize("credentials", ["secret", "private key"])
def test_a_machine_grant_signs_in_through_the_fallbacks_issuer_on_the_servers_origin(sandbox, servers, tmp_path, credentials, issuer):
    """client_credentials (a secret, or a private key's signed assertion) takes the 2025-03-26
    fallback as a person's sign-in does: no Protected Resource Metadata, the origin's
    authorization server metadata naming an issuer with a path on that origin, whose token
    endpoint grants the machine's token; the model's issuer, when it gives one, is that one.
    (Enterprise sign-in is not discovered: its issuer is the model's.) Without an issuer the
    SDK's deprecation warning is not printed: sync and doctor say it, once."""
    from projector.core import tokenstore

    mcp = servers()
    mcp.routes.update({"POST /mcp": session, "POST /oauth/token": GRANTED,
                       "GET /.well-known/oauth-authorization-server": metadata(f"{mcp.origin}/oauth", f"{mcp.origin}/oauth")})
    done = machine_login(sandbox, tmp_path, f"{mcp.origin}/mcp", credentials, issuer and f"{mcp.origin}/oauth")
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr and "issuer" not in done.stderr, done.stderr
    token_requests = [r for r in mcp.received if r.path == "/oauth/token"]
    assert [r.form["grant_type"] for r in token_requests] == ["client_credentials"]
    assert ("client_assertion" in token_requests[0].form) == (credentials == "private key")
    kept = tokenstore.read(sandbox.env["XDG_STATE_HOME"] + "/projector", "legacy")
    assert kept.access_token == "machine-token" and kept.token_endpoint == f"{mcp.origin}/oauth/token"


def refusal(provider: str, configured: str, server_url: str, found: str) -> str:
    return (f"error: signing in to {provider} stopped before the client's credentials were sent: the model's issuer is "
            f"{configured}, but {server_url} leads to the authorization server {found}: if that is the one that registered "
            f"this client, set issuer: {found} in the model; if not, the MCP server points elsewhere than your client is "
            "registered: ask its operator\n")


@pytest.mark.parametrize("credentials", ["secret", "private key"])
def test_a_machine_grant_whose_fallback_yields_another_issuer_than_the_models_sends_nothing(sandbox, servers, tmp_path, credentials):
    """The fallback accepts an issuer with a path on the server's own origin; the model's issuer
    must still be that one: here the model says the bare origin, the metadata another path."""
    mcp = servers()
    mcp.routes.update({"POST /mcp": session, "POST /oauth/token": GRANTED,
                       "GET /.well-known/oauth-authorization-server": metadata(f"{mcp.origin}/oauth", f"{mcp.origin}/oauth")})
    done = machine_login(sandbox, tmp_path, f"{mcp.origin}/mcp", credentials, mcp.origin)
    assert (done.returncode, done.stderr) == (1, refusal("legacy", mcp.origin, f"{mcp.origin}/mcp", f"{mcp.origin}/oauth"))
    assert "POST /oauth/token" not in mcp.paths()


@pytest.mark.parametrize("credentials", ["secret", "private key"])
def test_a_machine_grant_led_to_another_authorization_server_than_the_models_issuer_sends_nothing_there(
        sandbox, servers, tmp_path, credentials):
    """The MCP server's Protected Resource Metadata names an authorization server the model's
    issuer is not (a hostile server, or a hijacked metadata document): its metadata is read,
    its token endpoint never hears of the client's secret or assertion, nor does the model's."""
    hijacker, ours = servers({"POST /token": GRANTED}), servers({"POST /token": GRANTED})
    hijacker.routes["GET /.well-known/oauth-authorization-server"] = metadata(hijacker.origin, hijacker.origin)
    mcp = servers({"POST /mcp": session})
    mcp.routes["GET /.well-known/oauth-protected-resource/mcp"] = Answer(200, {"resource": f"{mcp.origin}/mcp",
                                                                               "authorization_servers": [hijacker.origin]})
    done = machine_login(sandbox, tmp_path, f"{mcp.origin}/mcp", credentials, ours.origin)
    assert (done.returncode, done.stderr) == (1, refusal("legacy", ours.origin, f"{mcp.origin}/mcp", hijacker.origin))
    assert [r.method for r in hijacker.received] == ["GET"] and ours.received == []
    assert "ci-secret" not in done.stderr


@pytest.mark.parametrize("credentials", ["secret", "private key"])
def test_a_machine_grant_takes_the_models_issuer_among_those_the_server_names(sandbox, servers, tmp_path, credentials):
    """Protected Resource Metadata may name several authorization servers: the model's issuer is
    the one signed in at, whichever comes first."""
    first, ours = servers({"POST /token": GRANTED}), servers({"POST /token": GRANTED})
    for server in (first, ours):
        server.routes["GET /.well-known/oauth-authorization-server"] = metadata(server.origin, server.origin)
    mcp = servers({"POST /mcp": session})
    mcp.routes["GET /.well-known/oauth-protected-resource/mcp"] = Answer(200, {"resource": f"{mcp.origin}/mcp",
                                                                               "authorization_servers": [first.origin, ours.origin]})
    done = machine_login(sandbox, tmp_path, f"{mcp.origin}/mcp", credentials, ours.origin)
    assert done.returncode == 0, done.stderr
    assert first.received == [] and ours.paths() == ["GET /.well-known/oauth-authorization-server", "POST /token"]


def test_a_machine_grant_whose_authorization_server_publishes_no_metadata_sends_nothing(sandbox, servers, tmp_path):
    """Without metadata nothing says which issuer the token endpoint (the SDK's default /token on
    the server the resource names) belongs to: with an issuer given, nothing is sent there."""
    named = servers({"POST /token": GRANTED})
    mcp = servers({"POST /mcp": session})
    mcp.routes["GET /.well-known/oauth-protected-resource/mcp"] = Answer(200, {"resource": f"{mcp.origin}/mcp",
                                                                               "authorization_servers": [named.origin]})
    done = machine_login(sandbox, tmp_path, f"{mcp.origin}/mcp", "secret", named.origin)
    assert (done.returncode, done.stderr) == (1, (
        f"error: signing in to legacy stopped before the client's credentials were sent: the model's issuer is {named.origin}, "
        f"but {mcp.origin}/mcp leads to no authorization server metadata (RFC 8414) that would say an issuer, so whose token "
        "endpoint the credentials would go to cannot be checked; ask the server's operator to publish its authorization "
        "server's metadata\n"))
    assert "POST /token" not in named.paths()
