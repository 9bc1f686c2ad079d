"""The 2025-03-26 fallback's issuer, for `projector login` (a mixin of the MCP SDK's OAuth client:
a person's, and a machine's client_credentials, which discover the authorization server alike;
an enterprise sign-in discovers none, its issuer being the model's).

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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import AsyncGenerator
    from typing import Any

PRM = "/.well-known/oauth-protected-resource"
AS_METADATA = "/.well-known/oauth-authorization-server"
DEFAULT_PORTS = {"http": 80, "https": 443}


class ForeignIssuer(ProjectorError):
    """The fallback's metadata names an issuer on another origin than the MCP server's."""


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
    import json

    if response.status_code != 200:
        return None
    try:
        document = json.loads(await response.aread())
    except ValueError:
        return None
    return document.get("issuer") if isinstance(document, dict) else None
