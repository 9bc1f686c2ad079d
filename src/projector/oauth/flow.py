"""The sign-in itself: the official MCP SDK's OAuth client (mcp.client.auth), not code of
projector's own: discovery from the 401's WWW-Authenticate or the well-known Protected Resource
Metadata, the authorization server's metadata (RFC 8414, OpenID, the 2025-03-26 fallbacks), the
client's identity (pre-registered, a Client ID Metadata Document, Dynamic Client Registration),
the authorization code with PKCE S256 and ``state``, the ``resource`` parameter, step-up. This
module gives it what it leaves to its caller: the person's browser and the redirect's listener
(oauth.redirect), and the tokens it ends with, for core.tokenstore. A machine without a person
signs in with ``client_credentials`` or enterprise-managed authorization; a person without a
browser, with the device grant (oauth.device) where the server offers it.
The SDK (with pydantic and httpx2) is imported inside functions only: a bridge's start never pays for it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from projector.core import tokenstore
from projector.core.errors import ProjectorError
from projector.core.modeltypes import OAuth, Provider
from projector.oauth import PROTOCOL, SignInFailed, tell
from projector.oauth.guard import in_clear, printable, refusing_clear_text
from projector.oauth.issuer import ConfiguredIssuer, SameOriginFallbackIssuer
from projector.oauth.redirect import Listener, send_person_to, state_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REQUIRED, OFFERED = "required", "offered"  # the device grant: asked for (--device), or where the server offers it
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "projector", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MACHINE_GRANTS = {"client_credentials": "with its client's credentials (client_credentials)",
                  "enterprise": "with its identity provider's token (enterprise)"}  # grants no person takes part in


def device_grant(asked: bool, paste: bool, nobrowser: bool) -> str | None:
    """Whether a person's sign-in uses the device authorization grant: REQUIRED when asked
    (``--device``), OFFERED (where the server offers it) when no browser can open here and
    the address is not to be pasted, else None."""
    if asked:
        return REQUIRED
    return OFFERED if nobrowser and not paste else None


def sign_in(provider: Provider, environ: Mapping[str, str], paste: bool, device: str | None = None) -> tokenstore.Tokens:
    """Sign in to ``provider`` (its secrets read from ``environ``); ``paste``: the address is
    printed and pasted back, no browser opened; ``device``: the device grant (``device_grant``).
    The tokens, for core.tokenstore to keep; SignInFailed says why not."""
    import asyncio
    import logging

    logging.getLogger("mcp").addHandler(logging.NullHandler())  # the SDK logs its failures; the error below says them once
    logging.getLogger("mcp").propagate = False
    assert provider.url is not None and provider.oauth is not None
    try:
        return asyncio.run(_sign_in(provider, environ, paste, device))
    except ProjectorError as refused:  # what it says may quote the server
        raise SignInFailed(printable(str(refused))) from None
    except Exception as failure:  # the SDK's OAuthFlowError, OAuthTokenError, httpx's errors
        if _unreachable(failure):
            raise SignInFailed(f"signing in to {provider.name} failed: cannot reach {provider.url} ({printable(_said(failure))}): "
                               "check the provider's url in the model, and that the server is up") from None
        raise SignInFailed(f"signing in to {provider.name} failed: {printable(_said(failure))}") from None


def _unreachable(failure: BaseException) -> bool:
    """Whether ``failure`` is the network's (no connection, no answer in time), not the server's."""
    import httpx2

    return isinstance(_first(failure), (httpx2.ConnectError, httpx2.TimeoutException))


def _first(failure: BaseException) -> BaseException:
    """The failure itself, out of the exception groups the SDK's task groups wrap it in."""
    while isinstance(failure, BaseExceptionGroup):
        failure = failure.exceptions[0]
    return failure


def _said(failure: BaseException) -> str:
    failure = _first(failure)
    said = str(failure)
    invalid = _validation_error(failure)
    if invalid is not None:  # pydantic's text quotes the answer it could not read: tokens, a client's secret
        fields = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'the answer'}: {e['msg']}"
                           for e in invalid.errors(include_url=False, include_input=False))
        said = said.replace(str(invalid), fields) if str(invalid) in said else f"{said.split(':')[0]}: {fields}"
    return f"{type(failure).__name__}: {said}" if said else type(failure).__name__


def _validation_error(failure: BaseException) -> Any:
    """The pydantic ValidationError behind ``failure`` (the SDK wraps it, as cause or context), if any."""
    from pydantic import ValidationError

    seen: BaseException | None = failure
    for _ in range(5):
        if seen is None:
            return None
        if isinstance(seen, ValidationError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None



async def _sign_in(provider: Provider, environ: Mapping[str, str], paste: bool, device: str | None = None) -> tokenstore.Tokens:
    import httpx2

    assert provider.url is not None and provider.oauth is not None
    url, oauth, insecure = provider.url, provider.oauth, provider.insecure
    if device and oauth.by_person:
        signed_in = await _device_sign_in(provider, environ, device == REQUIRED)
        if signed_in is not None:
            return signed_in
    storage = _Memory(provider.name)
    listener = None
    if oauth.grant == "client_credentials":
        auth = _machine_auth(provider.name, url, oauth, environ, storage)
    elif oauth.grant == "enterprise":
        auth = _enterprise_auth(url, oauth, environ, storage)
    else:
        listener = Listener(oauth.redirect_port)
        auth = _person_auth(url, oauth, environ, storage, listener, paste, insecure)
    try:
        async with httpx2.AsyncClient(auth=auth, timeout=30.0, follow_redirects=False,
                                      event_hooks={"request": [refusing_clear_text(insecure)]}) as client:
            await _probe(client, url, storage)
    finally:
        if listener is not None:
            listener.close()
    if storage.tokens is None:
        raise SignInFailed("the server answered without asking to sign in: it may not need OAuth (remove oauth: from the model)")
    if oauth.grant == "enterprise":  # the SDK's identity-assertion flow keeps what it learnt to itself
        return _kept(storage, auth._client, auth._token_endpoint, auth._resource)
    context = auth.context
    metadata = context.oauth_metadata
    resource = context.get_resource_url() if context.should_include_resource_param(context.protocol_version) else None
    return _kept(storage, context.client_info, str(metadata.token_endpoint) if metadata is not None else None, resource,
                 _revocation_endpoint(metadata))


def _revocation_endpoint(metadata: Any) -> str | None:
    """Where the authorization server revokes tokens (RFC 7009), when its metadata says."""
    endpoint = getattr(metadata, "revocation_endpoint", None)
    return str(endpoint) if endpoint else None


async def _probe(client: Any, url: str, storage: _Memory, signed_in: bool = False) -> None:
    """Open a session as a client would, so the server asks to sign in where it does (the SDK's
    auth signs in on that 401): ``initialize``, and where that needs no sign-in (a server that
    guards only its operations), ``tools/list`` in the session it opened. ``signed_in``: the
    client sends a token from the first request (the device grant's), so a session that opens
    proves nothing of it yet: its tools are listed too. A 403 for more scope than listing needs
    leaves the sign-in kept: a session asks for more when it needs it."""
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": PROTOCOL}
    answer = await client.post(url, json=INITIALIZE, headers=headers)
    session = answer.headers.get("mcp-session-id")
    if session:
        headers["mcp-session-id"] = session
    if (signed_in or storage.tokens is None) and answer.status_code == 200:
        await client.post(url, json=INITIALIZED, headers=headers)
        answer = await client.post(url, json=LIST_TOOLS, headers=headers)
    challenge = answer.headers.get("www-authenticate", "")
    if answer.status_code == 403 and storage.tokens is not None and "insufficient_scope" in challenge:
        tell(f"note: the server wants more than this sign-in allows to list its tools (HTTP 403: {printable(challenge[:200])}); "
            "a session asks for it when it needs it")
    elif answer.status_code in (401, 403):
        raise SignInFailed(f"the server still refuses the token (HTTP {answer.status_code}) after signing in")
    if session:  # end the session this opened: the bridge opens its own
        await client.delete(url, headers=headers)


async def _device_sign_in(provider: Provider, environ: Mapping[str, str], required: bool) -> tokenstore.Tokens | None:
    """The device authorization grant (oauth.device); None where the server does not offer it
    and it was not asked for (the address is then pasted back, as without it)."""
    from projector.oauth import device

    assert provider.url is not None and provider.oauth is not None
    url, oauth, insecure = provider.url, provider.oauth, provider.insecure
    secret = _secret(environ, oauth.client_secret_env, "the client's secret")
    try:
        grant = await device.sign_in(url, oauth, secret, INITIALIZE, tell, insecure=insecure)
    except device.NotOffered as offered:
        if required:
            raise SignInFailed(f"{offered}: sign in without --device") from None
        return None
    import httpx2

    checked = _Memory(provider.name, tokens=grant.tokens)
    bearer = {"Authorization": f"Bearer {grant.tokens.access_token}"}
    async with httpx2.AsyncClient(headers=bearer, timeout=30.0, follow_redirects=False) as client:
        await _probe(client, url, checked, signed_in=True)  # as after the browser's sign-in: a token refused is said, not kept
    return _kept(checked, grant.client, grant.token_endpoint, grant.resource, _revocation_endpoint(grant.metadata))


def _kept(storage: _Memory, client: Any, endpoint: str | None, resource: str | None,
          revocation_endpoint: str | None = None) -> tokenstore.Tokens:
    tokens = storage.tokens
    return tokenstore.Tokens(
        access_token=tokens.access_token,
        expires_at=None if tokens.expires_in is None else time.time() + tokens.expires_in,
        lifetime=None if tokens.expires_in is None else float(tokens.expires_in),
        token_endpoint=endpoint,
        revocation_endpoint=revocation_endpoint,
        client_id=client.client_id if client else None,
        auth_method=(client.token_endpoint_auth_method or "none") if client else "none",
        resource=resource,
        scope=tokens.scope,
        secrets=tokenstore.Secrets(refresh_token=tokens.refresh_token, client_secret=client.client_secret if client else None),
    )


class _Memory:
    """The SDK's TokenStorage for one sign-in: what it ends with is written by core.tokenstore.
    Tokens no request can carry are refused as they arrive, before the SDK (or the device grant's
    check) sends the access token: the HTTP library's refusal of that header would quote it."""

    def __init__(self, provider: str, client_info: Any = None, tokens: Any = None) -> None:
        self.provider = provider
        self.tokens: Any = None if tokens is None else self._fit(tokens)
        self.client_info = client_info

    def _fit(self, tokens: Any) -> Any:
        if why := tokenstore.unfit(self.provider, tokens.access_token, tokens.refresh_token):
            raise SignInFailed(why)
        return tokens

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = self._fit(tokens)

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


def _secret(environ: Mapping[str, str], name: str | None, what: str) -> str | None:
    if name is None:
        return None
    value = environ.get(name, "").strip()
    if not value:
        raise SignInFailed(f"${name} is not set: export {what} in it and sign in again")
    return value


def _person_auth(url: str, oauth: OAuth, environ: Mapping[str, str], storage: _Memory, listener: Listener, paste: bool,
                 insecure: bool = False) -> Any:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata

    secret = _secret(environ, oauth.client_secret_env, "the client's secret")
    method = "client_secret_basic" if secret else "none"
    metadata = OAuthClientMetadata(client_name="projector", redirect_uris=[listener.redirect_uri],
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                   token_endpoint_auth_method=method)
    if oauth.client_id:  # pre-registered: no registration
        storage.client_info = OAuthClientInformationFull(client_id=oauth.client_id, client_secret=secret,
                                                         redirect_uris=[listener.redirect_uri], token_endpoint_auth_method=method,
                                                         grant_types=["authorization_code", "refresh_token"])
    scopes = " ".join(oauth.scopes) if oauth.scopes is not None else None

    class Provider(SameOriginFallbackIssuer, OAuthClientProvider):
        async def _perform_authorization_code_grant(self) -> tuple[str, str]:
            require_pkce_s256(self.context.oauth_metadata, self.context.auth_server_url, self.context.server_url)
            if scopes is not None:  # the model's scopes win over those the server suggests
                self.context.client_metadata.scope = scopes or None
            return await super()._perform_authorization_code_grant()

    async def redirect(authorization_url: str) -> None:
        if not insecure and (why := in_clear(authorization_url)):  # where the person types a password
            raise SignInFailed(why)
        listener.expect(state_of(authorization_url))
        if not send_person_to(authorization_url, paste):
            listener.read_pasted()

    async def callback() -> AuthorizationCodeResult:
        import anyio

        query = await anyio.to_thread.run_sync(listener.wait)
        if "error" in query:
            raise SignInFailed(f"the server refused the sign-in: {query['error']}"
                               + (f" ({query['error_description']})" if query.get("error_description") else ""))
        if "code" not in query:
            raise SignInFailed("the browser came back without an authorization code")
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    return Provider(url, metadata, storage, redirect_handler=redirect, callback_handler=callback,
                    client_metadata_url=oauth.client_metadata_url)


def _machine_auth(name: str, url: str, oauth: OAuth, environ: Mapping[str, str], storage: _Memory) -> Any:
    """client_credentials, with the client's secret or a signed assertion (RFC 7523): sent only
    to the authorization server whose metadata names the model's ``issuer`` (ConfiguredIssuer);
    without one, to whichever the MCP server leads to."""
    import warnings

    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )
    from mcp.shared.exceptions import MCPDeprecationWarning

    class KeyProvider(ConfiguredIssuer, SameOriginFallbackIssuer, PrivateKeyJWTOAuthProvider):
        pass

    class SecretProvider(ConfiguredIssuer, SameOriginFallbackIssuer, ClientCredentialsOAuthProvider):
        pass

    assert oauth.client_id is not None
    scope = " ".join(oauth.scopes) if oauth.scopes else None
    made: type[Any]
    if oauth.private_key_file:
        path = os.path.expanduser(oauth.private_key_file)
        try:
            with open(path, encoding="utf-8") as handle:
                key = handle.read()
        except OSError as exc:
            raise SignInFailed(f"cannot read the private key {path}: {exc.strerror}") from None
        signed = SignedJWTParameters(issuer=oauth.client_id, subject=oauth.client_id, signing_key=key,
                                     signing_algorithm=oauth.algorithm or "RS256")
        made, credential = KeyProvider, signed.create_assertion_provider()
    else:
        made, credential = SecretProvider, _secret(environ, oauth.client_secret_env, "the client's secret")
        assert credential is not None
    with warnings.catch_warnings():
        # Without an issuer the SDK warns, at every sign-in and into a bridge's sign-in log; sync
        # and doctor say it once instead, in projector's words (commands.common.issuer_warnings).
        warnings.filterwarnings("ignore", message="Omitting `issuer` is deprecated", category=MCPDeprecationWarning)
        auth = made(url, storage, oauth.client_id, credential, scope=scope, issuer=oauth.issuer)
    auth.provider_name, auth.configured_issuer = name, oauth.issuer
    return auth


def _enterprise_auth(url: str, oauth: OAuth, environ: Mapping[str, str], storage: _Memory) -> Any:
    """Enterprise-managed authorization (SEP-990): the identity provider's ID token exchanged
    there (RFC 8693) for an identity assertion grant, which the SDK takes to the configured
    issuer's token endpoint (RFC 7523)."""
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    assert oauth.client_id and oauth.issuer and oauth.idp_token_endpoint and oauth.id_token_env
    secret = _secret(environ, oauth.client_secret_env, "the client's secret")
    if secret is None:
        raise SignInFailed("enterprise sign-in needs the client's secret: give client_secret_env")
    id_token = _secret(environ, oauth.id_token_env, "the ID token your identity provider issued")
    idp_secret = _secret(environ, oauth.idp_client_secret_env, "the identity provider client's secret")

    async def assertion(audience: str, resource: str) -> str:
        import httpx2

        form = {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": id_token or "",
                "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag", "audience": audience, "resource": resource}
        if oauth.idp_client_id:
            form["client_id"] = oauth.idp_client_id
        if idp_secret:
            form["client_secret"] = idp_secret
        async with httpx2.AsyncClient(timeout=30.0) as client:
            answer = await client.post(oauth.idp_token_endpoint or "", data=form)
        if answer.status_code != 200:
            code = answer.json().get("error", "") if "json" in answer.headers.get("content-type", "") else ""
            raise SignInFailed(f"the identity provider refused the token exchange (HTTP {answer.status_code}{': ' + code if code else ''})")
        return str(answer.json()["access_token"])

    return IdentityAssertionOAuthProvider(url, storage, oauth.client_id, secret, oauth.issuer, assertion,
                                          scope=" ".join(oauth.scopes) if oauth.scopes else None,
                                          token_endpoint_auth_method="client_secret_basic")


def require_pkce_s256(metadata: Any, named: str | None = None, resource: str = "") -> None:
    """The MCP authorization spec: a client MUST refuse an authorization server whose metadata
    does not list S256 in ``code_challenge_methods_supported`` (absent: it does not do PKCE), for
    its authorization codes could then be used by whoever intercepts them. Only the 2025-03-26
    fallback (no Protected Resource Metadata: ``named`` is None) signs in without metadata, at
    its default endpoints; an authorization server the resource's metadata ``named`` must publish
    its own, or nothing would be checked."""
    if metadata is None and named is not None:
        raise SignInFailed(f"the authorization server {named.rstrip('/')} that {resource} names publishes no metadata "
                           "(RFC 8414), so whether it does PKCE with S256, which the MCP authorization spec requires, "
                           "cannot be checked: projector does not sign in there; ask the server's operator to publish it")
    if metadata is None:
        return
    offered = list(metadata.code_challenge_methods_supported or ())
    if "S256" not in offered:
        said = (f"offers PKCE only as {', '.join(offered)}, not S256" if offered
                else "does not offer PKCE (its metadata lists no code_challenge_methods_supported)")
        raise SignInFailed(f"the authorization server {metadata.issuer} {said}, which the MCP authorization spec requires: "
                           "projector does not sign in there; ask the server's operator to turn on PKCE with S256")
