"""An MCP server behind OAuth for tests, on the official MCP Python SDK: a resource server whose
tokens an authorization server it does not run issues (tests/servers/oidc_provider.mjs).

- publishes its Protected Resource Metadata (RFC 9728) naming ``--issuer``, and answers a
  request without a good token 401 with ``WWW-Authenticate: Bearer ... resource_metadata=...``;
- checks every token at the issuer's introspection endpoint (RFC 7662, as the confidential
  client ``resource-server``): it must be active, an access token, carry the ``mcp`` scope and
  have this server's own URL as its audience (a token for another resource is refused);
- records every check as one JSON line in ``--record`` (active, audience, accepted).

    python guarded_mcp.py --port P --issuer http://127.0.0.1:Q --secret S --record checks.jsonl
"""

import argparse
import base64
import json
import time

import httpx2
from mcp.server import MCPServer
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from serving import add_listen_options, serve

SCOPE = "mcp"


class Introspecting:
    """The SDK's TokenVerifier: asks the authorization server about each token."""

    def __init__(self, issuer: str, secret: str, resource: str, record: str):
        self.endpoint = f"{issuer}/token/introspection"
        self.basic = "Basic " + base64.b64encode(f"resource-server:{secret}".encode()).decode()
        self.resource = resource
        self.record = record

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx2.AsyncClient(timeout=10) as client:
            answer = await client.post(self.endpoint, data={"token": token}, headers={"Authorization": self.basic})
        found = answer.json() if answer.status_code == 200 else {}
        audience = found.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        accepted = (found.get("active") is True and found.get("token_type") == "Bearer" and self.resource in audiences
                    and SCOPE in str(found.get("scope", "")).split())
        with open(self.record, "a", encoding="utf-8") as out:
            out.write(json.dumps({"active": found.get("active", False), "aud": audience, "accepted": accepted,
                                  "client_id": found.get("client_id"), "sub": found.get("sub"), "at": time.time()}) + "\n")
        if not accepted:
            return None
        return AccessToken(token=token, client_id=found["client_id"], scopes=str(found.get("scope", "")).split(),
                           expires_at=found.get("exp"), resource=self.resource, subject=found.get("sub"))


def server(url: str, issuer: str, verifier: Introspecting) -> MCPServer:
    auth = AuthSettings(issuer_url=issuer, resource_server_url=url, required_scopes=[SCOPE], validate_token_resource=True)
    guarded = MCPServer("guarded", token_verifier=verifier, auth=auth)

    @guarded.tool()
    def search(query: str) -> str:
        """Search the knowledge base."""
        return f"found {query}"

    @guarded.tool()
    def whoami() -> str:
        """Who the token was issued to."""
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        return f"{token.subject} through {token.client_id}" if token else "nobody"

    return guarded


def main() -> None:
    parser = argparse.ArgumentParser()
    add_listen_options(parser)
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--record", required=True)
    args = parser.parse_args()
    url = f"http://127.0.0.1:{args.port}/mcp"
    app = server(url, args.issuer, Introspecting(args.issuer, args.secret, url, args.record)).streamable_http_app()
    serve(app, args, log_level="warning")


if __name__ == "__main__":
    main()
