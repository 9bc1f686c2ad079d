"""The routed KB server (routed_kb.py) behind OAuth, for tests: the authorization is the official
MCP Python SDK's (mcp.server.auth), not ours.

The SDK serves the authorization server's routes (RFC 8414 metadata, Dynamic Client Registration,
the authorization endpoint with PKCE S256, the token endpoint, revocation) and the resource
server's side (RFC 9728 Protected Resource Metadata, the 401 with ``resource_metadata``, the
bearer check, which refuses a token issued for another resource). What it leaves to a server is
the provider, here one that keeps everything in memory and approves every authorization at once
(the authorization endpoint redirects straight back with a code), as a person who clicks "allow"
would, so a test's browser only follows redirects (tests/runtime/bridge/follow_redirects.py).

Every access token it issues starts with ``--canary``, so a test can look for it anywhere it must
not be. Its record (``--record``, one JSON line per HTTP request, as routed_kb's) never holds a
token: ``auth`` is ``Bearer <canary>…`` for one of its tokens. Beside routed_kb's tools, the
``signed_in`` tool answers whom the token was issued to, for which resource and which KBs the
request asked for (``kbs``), as JSON.

    python oauth_kb.py --port P --canary CANARY- --record requests.jsonl [--kbs a,b,c]
"""

from __future__ import annotations

import argparse
import json
import secrets
import time
from typing import Any

from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import Context
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from routed_kb import Routed, kb_server
from serving import add_listen_options, serve

SCOPE = "kb.read"
LIFETIME = 3600  # seconds an access token lasts


class Approving:
    """An OAuthAuthorizationServerProvider in memory that approves every authorization of a
    registered client for this one resource, and issues tokens bound to it."""

    def __init__(self, canary: str, resource: str) -> None:
        self.canary = canary
        self.resource = resource
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if params.resource != self.resource:  # RFC 8707: a token for this server, and only when asked for it
            raise AuthorizeError("invalid_target", f"this server issues tokens for {self.resource} only")
        code = secrets.token_urlsafe(32)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [SCOPE], expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource, subject="tester")
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str) -> AuthorizationCode | None:
        found = self.codes.get(authorization_code)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "the code was used already")
        return self._issued(authorization_code.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotated: a refresh token works once
        return self._issued(refresh_token.client_id, scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access = {k: v for k, v in self.access.items() if v.client_id != token.client_id}
        self.refresh = {k: v for k, v in self.refresh.items() if v.client_id != token.client_id}

    async def exchange_identity_assertion(self, client: OAuthClientInformationFull, params: Any) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "not offered here")

    def _issued(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access = f"{self.canary}{secrets.token_hex(16)}"
        refresh = f"{self.canary}refresh-{secrets.token_hex(16)}"
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + LIFETIME,
                                          resource=resource, subject="tester")
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject="tester")
        return OAuthToken(access_token=access, expires_in=LIFETIME, scope=" ".join(scopes), refresh_token=refresh)


class OAuthRouted(Routed):
    """routed_kb's server, each KB set's app with the SDK's authorization in front of it (one
    provider for all, so a token is good for every set)."""

    def __init__(self, mounted: tuple[str, ...], port: int, canary: str, record: str) -> None:
        super().__init__(mounted, token="", mode="stateful", idle=None, record=record)
        origin = f"http://127.0.0.1:{port}"
        self.canary = canary
        self.provider = Approving(canary, f"{origin}/mcp")
        self.auth = AuthSettings(
            issuer_url=origin, resource_server_url=f"{origin}/mcp", validate_token_resource=True, required_scopes=[SCOPE],
            client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]),
            revocation_options=RevocationOptions(enabled=True))

    def server_for(self, kbs: tuple[str, ...]) -> MCPServer:
        server = kb_server(kbs, auth=self.auth, auth_server_provider=self.provider, log_level="WARNING")  # a line per session fills a pipe

        @server.tool()
        def signed_in(ctx: Context) -> str:
            """Who this session signed in as, and the KBs it asked for."""
            user = getattr(ctx.request_context.request, "user", None)
            token = getattr(user, "access_token", None) or get_access_token()
            assert token is not None, "the SDK's bearer check let a request through without a token"
            return json.dumps({"signed_in_as": token.client_id, "resource": token.resource, "scopes": token.scopes,
                               "kbs": list(kbs)})

        return server

    def admits(self, headers: dict[str, str]) -> bool:
        return True  # the SDK's bearer check decides, in each app

    def recorded_auth(self, header: str | None) -> str | None:
        if header and header.startswith(f"Bearer {self.canary}"):
            return f"Bearer {self.canary}…"
        return header and "(another)"


def main() -> None:
    parser = argparse.ArgumentParser()
    add_listen_options(parser)
    parser.add_argument("--kbs", default="handbook,api-a,api-b")
    parser.add_argument("--canary", required=True, help="what every access and refresh token it issues starts with")
    parser.add_argument("--record", required=True)
    options = parser.parse_args()
    routed = OAuthRouted(tuple(options.kbs.split(",")), options.port, options.canary, options.record)
    serve(routed, options, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
