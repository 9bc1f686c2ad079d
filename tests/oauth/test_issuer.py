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


@pytest.mark.parametrize("credentials", ["secret", "private key"])
def test_a_machine_grant_signs_in_through_the_fallbacks_issuer_on_the_servers_origin(sandbox, servers, tmp_path, credentials):
    """client_credentials (a secret, or a private key's signed assertion) takes the 2025-03-26
    fallback as a person's sign-in does: no Protected Resource Metadata, the origin's
    authorization server metadata naming an issuer with a path on that origin, whose token
    endpoint grants the machine's token. (Enterprise sign-in is not discovered: its issuer is
    the model's.)"""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from projector.core import tokenstore

    granted = Answer(200, {"access_token": "machine-token", "token_type": "Bearer", "expires_in": 3600})
    mcp = servers()

    def session(request):
        if request.headers.get("Authorization") != "Bearer machine-token":
            return CHALLENGE
        return Answer(200, {"jsonrpc": "2.0", "id": request.document["id"], "result": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "legacy", "version": "1"}}})

    mcp.routes.update({"POST /mcp": session, "POST /oauth/token": granted,
                       "GET /.well-known/oauth-authorization-server": metadata(f"{mcp.origin}/oauth", f"{mcp.origin}/oauth")})
    if credentials == "secret":
        sandbox.env["CI_SECRET"] = "ci-secret"
        grant = "      client_secret_env: CI_SECRET\n      client_credentials: true\n"
    else:
        key = tmp_path / "ci.pem"
        key.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        grant = f"      client_credentials: {{private_key_file: {key}, algorithm: ES256}}\n"
    model = sandbox.model(f"version: 1\nproviders:\n  legacy:\n    url: {mcp.origin}/mcp\n    oauth:\n      client_id: ci-bot\n{grant}")
    done = sandbox.run("login", "legacy", config=model)
    assert done.returncode == 0, done.stderr
    token_requests = [r for r in mcp.received if r.path == "/oauth/token"]
    assert [r.form["grant_type"] for r in token_requests] == ["client_credentials"]
    assert ("client_assertion" in token_requests[0].form) == (credentials == "private key")
    kept = tokenstore.read(sandbox.env["XDG_STATE_HOME"] + "/projector", "legacy")
    assert kept.access_token == "machine-token" and kept.token_endpoint == f"{mcp.origin}/oauth/token"
