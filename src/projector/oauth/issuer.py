"""The issuers a sign-in holds the authorization server to, for `projector login` (mixins of the
MCP SDK's OAuth client): the 2025-03-26 fallback's (a person's sign-in, and a machine's
client_credentials, which discover the authorization server alike; an enterprise sign-in
discovers none, its issuer being the model's), and the one the model gives a machine's
client_credentials (``ConfiguredIssuer``).

A server that publishes no Protected Resource Metadata is, under the 2025-03-26 authorization
spec, its own authorization server: its origin's ``/.well-known/oauth-authorization-server``
says where to sign in. The SDK then holds the metadata's ``issuer`` to that origin exactly (RFC
8414 §3.3), and refuses an issuer with a path (``https://host/oauth``), which such servers (and
the MCP conformance suite's ``auth/2025-03-26-oauth-metadata-backcompat``) publish. No
Protected Resource Metadata names another server there, so an issuer on the server's own origin
(scheme, host and port) names the server itself, whatever its path: it is accepted, on that
path only. An issuer on any other origin is refused with what to do; with Protected Resource
Metadata the SDK's exact check stands untouched.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from projector.core.errors import ProjectorError
from projector.core.tokenrequest import json_object

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import AsyncGenerator
    from typing import Any

PRM = "/.well-known/oauth-protected-resource"
AS_METADATA = "/.well-known/oauth-authorization-server"
DEFAULT_PORTS = {"http": 80, "https": 443}


class ForeignIssuer(ProjectorError):
    """The fallback's metadata names an issuer on another origin than the MCP server's."""


class OtherIssuer(ProjectorError):
    """Discovery led a machine's sign-in to another authorization server than the model's issuer."""


def origin(url: str) -> tuple[str, str, int | None]:
    """``url``'s scheme, host and port (the scheme's default when none is written), as compared."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or DEFAULT_PORTS.get(scheme)


def origin_url(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def fallback_issuer(server_url: str, metadata_url: str, issuer: object) -> str | None:
    """The issuer the fallback's metadata names, when it is on the server's origin but is not
    the bare origin (the SDK takes that one itself); None when there is nothing to accept.
    ``ForeignIssuer`` for an issuer on another origin."""
    if not isinstance(issuer, str) or not issuer:
        return None
    if origin(issuer) != origin(server_url):
        raise ForeignIssuer(
            f"the authorization server metadata at {metadata_url} names the issuer {issuer}, not on the MCP server's "
            f"own origin ({origin_url(server_url)}): without Protected Resource Metadata the server is its own "
            "authorization server, so projector does not sign in there (RFC 8414 §3.3); ask the server's operator "
            "to publish Protected Resource Metadata naming that authorization server")
    if urlsplit(issuer).path.strip("/") == "":
        return None
    return issuer


class SameOriginFallbackIssuer:
    """Put before the SDK's ``OAuthClientProvider`` in a subclass's bases. When the last Protected
    Resource Metadata location (the origin's root one) answers with none, the origin's
    authorization server metadata is fetched once, here, ahead of the SDK, which is then handed
    that same answer when it asks for it; an issuer it names on the server's origin becomes the
    issuer the SDK expects (``_expected_issuer``, the SDK's one seam for it)."""

    context: Any
    accepted_fallback_issuer: str | None = None

    def _expected_issuer(self) -> str:
        if self.context.auth_server_url is None and self.accepted_fallback_issuer is not None:
            return self.accepted_fallback_issuer
        return super()._expected_issuer()  # type: ignore[misc]

    async def _auth_flow(self, request: Any) -> AsyncGenerator[Any, Any]:
        import httpx2

        flow = super()._auth_flow(request)  # type: ignore[misc]
        ahead: Any = None  # the metadata fetched ahead, handed to the SDK when it asks for it
        try:
            outgoing = await flow.__anext__()
            while True:
                if ahead is not None and outgoing.method == "GET" and str(outgoing.url) == str(ahead.request.url):
                    response, ahead = ahead, None
                else:
                    response = yield outgoing
                if self._no_resource_metadata(outgoing, response):
                    metadata_url = origin_url(self.context.server_url) + AS_METADATA
                    ahead = yield httpx2.Request("GET", metadata_url, headers={"Accept": "application/json"})
                    self.accepted_fallback_issuer = fallback_issuer(self.context.server_url, metadata_url,
                                                                    await _issuer_in(ahead))
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    def _no_resource_metadata(self, outgoing: Any, response: Any) -> bool:
        """The origin's root Protected Resource Metadata, the last place the SDK looks, is not
        there (a server error or a rate limit ends the SDK's sign-in instead)."""
        return (outgoing.method == "GET" and str(outgoing.url) == origin_url(self.context.server_url) + PRM
                and 400 <= response.status_code < 500 and response.status_code != 429)


async def _issuer_in(response: Any) -> object:
    if response.status_code != 200:
        return None
    return (json_object(await response.aread()) or {}).get("issuer")


class ConfiguredIssuer:
    """Put first in the bases of a subclass of the SDK's ClientCredentialsOAuthProvider or
    PrivateKeyJWTOAuthProvider, built with ``issuer=`` the model's. The SDK then prefers that
    issuer among those the Protected Resource Metadata names, and refuses to build the token
    request from metadata of another issuer; this says that refusal in projector's words (the
    provider, both issuers, what to do), before the SDK's own check and before the client's
    secret or signed assertion is made or sent. The 2025-03-26 fallback's issuer
    (SameOriginFallbackIssuer) is held to it alike: it is the metadata the fallback found."""

    context: Any
    provider_name: str = ""
    configured_issuer: str | None = None

    async def _exchange_token_client_credentials(self) -> Any:
        refuse_another_issuer(self.provider_name, self.configured_issuer, self.context.oauth_metadata, self.context.server_url)
        return await super()._exchange_token_client_credentials()  # type: ignore[misc]


def refuse_another_issuer(provider: str, configured: str | None, metadata: Any, server_url: str) -> None:
    """``OtherIssuer`` unless the authorization server metadata discovery ended with (``metadata``,
    None: none found) is the ``configured`` issuer's (compared as the SDK compares issuers: as
    strings, a root issuer with or without its trailing slash); nothing is checked without one."""
    from mcp.client.auth.utils import issuers_match

    if configured is None:
        return
    stopped = (f"signing in to {provider} stopped before the client's credentials were sent: the model's issuer is "
               f"{configured}, but")
    if metadata is None:
        raise OtherIssuer(f"{stopped} {server_url} leads to no authorization server metadata (RFC 8414) that would say "
                          "an issuer, so whose token endpoint the credentials would go to cannot be checked; ask the "
                          "server's operator to publish its authorization server's metadata")
    found = str(metadata.issuer)
    if issuers_match(found, configured):
        return
    raise OtherIssuer(f"{stopped} {server_url} leads to the authorization server {found}: if that is the one "
                      f"that registered this client, set issuer: {found} in the model; if not, the MCP server points "
                      "elsewhere than your client is registered: ask its operator")
