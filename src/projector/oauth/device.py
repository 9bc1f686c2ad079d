"""The device authorization grant (RFC 8628) for `projector login`, where no browser can open here.

The official MCP SDK has no device grant, so the grant itself is here, small, on the SDK's HTTP
client (httpx2); what comes before it is the SDK's: discovery from the server's 401 (Protected
Resource Metadata, the authorization server's metadata, in the spec's order) and the scope it
selects (the challenge's, else the resource's, plus offline_access when offered) are read off an
OAuthClientProvider stopped where it would send the person to a browser. The SDK's metadata
model drops ``device_authorization_endpoint``, so that one field is read from the same
metadata document again. The client is the pre-registered one, else one registered (Dynamic
Client Registration, through the SDK's request and parsing) for this grant and refresh.

The person is told where to go and which code to confirm (stderr); the token endpoint is polled
every ``interval`` seconds (5 when the server does not say), 5 more after each ``slow_down``, until
the code is confirmed, refused or expired. ``resource`` (RFC 8707) goes on the device and token
requests; PKCE has no place in this grant.
"""

from __future__ import annotations

import json
import re
import time

from projector.core.errors import ProjectorError
from projector.core.tokenrequest import oauth_error
from projector.oauth import PROTOCOL, SignInFailed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from typing import Any

    from projector.core.modeltypes import OAuth

GRANT = "urn:ietf:params:oauth:grant-type:device_code"
DEFAULT_INTERVAL = 5.0  # RFC 8628 §3.2: when the answer has no interval
SLOW_DOWN = 5.0  # RFC 8628 §3.5: seconds added to the interval at each slow_down
INTERVAL_AT_MOST = 60.0  # seconds between polls, whatever the server says
EXPIRES_AT_MOST = 1800.0  # seconds a code is waited for, whatever the server says (Google's: 1800; Microsoft's, GitHub's: 900)


class NotOffered(ProjectorError):
    """The authorization server's metadata has no device authorization endpoint."""


class Discovered(Exception):
    """Raised by the SDK's flow where it would open a browser: what it found by then."""

    def __init__(self, context: Any) -> None:
        super().__init__("discovered")
        self.context = context


class Grant:
    """What a device sign-in ends with, for the token store."""

    def __init__(self, tokens: Any, client: Any, token_endpoint: str, resource: str | None, metadata: Any = None) -> None:
        self.tokens = tokens  # the SDK's OAuthToken
        self.client = client  # the SDK's OAuthClientInformationFull
        self.token_endpoint = token_endpoint
        self.resource = resource
        self.metadata = metadata  # the SDK's OAuthMetadata of the authorization server


async def sign_in(url: str, oauth: OAuth, secret: str | None, initialize: dict[str, Any], tell: Callable[[str], None],
                  sleep: Callable[[float], Awaitable[None]] | None = None, insecure: bool = False) -> Grant:
    """Sign in to the MCP server at ``url`` (asked ``initialize`` to be told where to sign in)
    with the device grant; ``NotOffered`` when its authorization server has none (before
    anything is registered or printed). ``insecure``: the provider accepts plain http:// to
    another host (oauth.guard.in_clear)."""
    import anyio
    import httpx2

    from projector.oauth.guard import refusing_clear_text

    async with httpx2.AsyncClient(timeout=30.0, follow_redirects=False, event_hooks={"request": [refusing_clear_text(insecure)]}) as http:
        context = await discover(http, url, oauth, initialize)
        endpoint = await device_endpoint(http, context, url)
        if endpoint is None:
            raise NotOffered(f"the authorization server {context.auth_server_url or url} offers no device authorization grant "
                             "(its metadata has no device_authorization_endpoint)")
        context.client_info = await client(http, context, oauth, secret)
        resource = context.get_resource_url() if context.should_include_resource_param(PROTOCOL) else None
        form = {"client_id": context.client_info.client_id}
        if context.client_metadata.scope:
            form["scope"] = context.client_metadata.scope
        if resource:
            form["resource"] = resource
        started = await _post(http, context, endpoint, form)
        if started.status_code != 200:
            raise SignInFailed(f"the authorization server refused to start a device sign-in ({_refusal(started)})")
        code = started.json()
        tell(instructions(code, str(context.oauth_metadata.issuer)))
        tokens = await poll(http, context, code, resource, sleep or anyio.sleep)
    from mcp.shared.auth import OAuthToken

    if tokens.get("scope") is None:
        tokens["scope"] = context.client_metadata.scope
    return Grant(OAuthToken.model_validate(tokens), context.client_info, str(context.oauth_metadata.token_endpoint), resource,
                 context.oauth_metadata)


async def discover(http: Any, url: str, oauth: OAuth, initialize: dict[str, Any]) -> Any:
    """The SDK's OAuthContext after discovery and scope selection, nothing registered."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    from projector.oauth.issuer import SameOriginFallbackIssuer

    class Stopped(SameOriginFallbackIssuer, OAuthClientProvider):  # the 2025-03-26 fallback's issuer as login's
        async def _perform_authorization(self) -> Any:
            raise Discovered(self.context)

    class Nothing:  # the SDK's TokenStorage: no tokens; a client so that it registers none
        async def get_tokens(self) -> None:
            return None

        async def set_tokens(self, tokens: Any) -> None:
            pass

        async def get_client_info(self) -> Any:
            return OAuthClientInformationFull(client_id=oauth.client_id or "not registered yet")

        async def set_client_info(self, info: Any) -> None:
            pass

    metadata = OAuthClientMetadata(client_name="projector", redirect_uris=["http://127.0.0.1/callback"],
                                   grant_types=[GRANT, "refresh_token"], response_types=[])
    auth = Stopped(url, metadata, Nothing(), redirect_handler=_never, callback_handler=_never)
    try:
        answer = await http.post(url, json=initialize, auth=auth, headers={
            "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": PROTOCOL})
    except Discovered as found:
        if found.context.oauth_metadata is None:
            raise SignInFailed("the server's authorization server publishes no metadata (RFC 8414)") from None
        if oauth.scopes is not None:  # the model's scopes win over those the server suggests
            found.context.client_metadata.scope = " ".join(oauth.scopes) or None
        return found.context
    raise SignInFailed(f"the server answered HTTP {answer.status_code} without asking to sign in: "
                             "it may not need OAuth (remove oauth: from the model)")


async def device_endpoint(http: Any, context: Any, url: str) -> str | None:
    """The authorization server's ``device_authorization_endpoint``, from the metadata document
    the SDK took (the first of the spec's locations that names the same issuer)."""
    from mcp.client.auth.utils import build_oauth_authorization_server_metadata_discovery_urls

    issuer = str(context.oauth_metadata.issuer).rstrip("/")
    for where in build_oauth_authorization_server_metadata_discovery_urls(context.auth_server_url, url):
        answer = await http.get(where, headers={"MCP-Protocol-Version": PROTOCOL})
        if answer.status_code != 200:
            continue
        document = answer.json()
        if isinstance(document, dict) and str(document.get("issuer", "")).rstrip("/") == issuer:
            endpoint = document.get("device_authorization_endpoint")
            return endpoint if isinstance(endpoint, str) and endpoint else None
    return None


async def client(http: Any, context: Any, oauth: OAuth, secret: str | None) -> Any:
    """The pre-registered client, else one registered for the device grant and refresh."""
    from mcp.client.auth.utils import create_client_registration_request, handle_registration_response
    from mcp.shared.auth import OAuthClientInformationFull

    method = "client_secret_basic" if secret else "none"
    if oauth.client_id:
        return OAuthClientInformationFull(client_id=oauth.client_id, client_secret=secret, token_endpoint_auth_method=method,
                                          grant_types=[GRANT, "refresh_token"])
    wanted = context.client_metadata.model_copy(update={"token_endpoint_auth_method": method})
    request = create_client_registration_request(context.oauth_metadata, wanted, context.get_authorization_base_url(context.server_url))
    payload = {k: v for k, v in json.loads(request.content).items() if k != "redirect_uris"}  # this grant has no redirect
    return await handle_registration_response(await http.post(str(request.url), json=payload))


async def poll(http: Any, context: Any, code: dict[str, Any], resource: str | None,
               sleep: Callable[[float], Awaitable[None]]) -> dict[str, Any]:
    """The token endpoint's answer once the person confirms (RFC 8628 §3.4, §3.5)."""
    interval = _seconds(code.get("interval"), DEFAULT_INTERVAL, INTERVAL_AT_MOST)
    deadline = time.monotonic() + _seconds(code.get("expires_in"), 600.0, EXPIRES_AT_MOST)
    form = {"grant_type": GRANT, "device_code": str(code.get("device_code", "")), "client_id": context.client_info.client_id}
    if resource:
        form["resource"] = resource
    while time.monotonic() < deadline:
        await sleep(interval)
        answer = await _post(http, context, str(context.oauth_metadata.token_endpoint), dict(form))
        if answer.status_code == 200:
            return answer.json()
        error = _error(answer)
        if error == "authorization_pending":
            continue
        if error == "slow_down":
            interval += SLOW_DOWN
            continue
        if error == "access_denied":
            raise SignInFailed("the sign-in was refused at the authorization server")
        if error == "expired_token":
            break
        raise SignInFailed(f"the authorization server refused the device sign-in ({_refusal(answer)})")
    raise SignInFailed("the code expired before it was confirmed; sign in again")


async def _post(http: Any, context: Any, endpoint: str, form: dict[str, str]) -> Any:
    """A form POST with the client's authentication, as the SDK's token requests make it."""
    data, headers = context.prepare_token_auth(form, {"Content-Type": "application/x-www-form-urlencoded",
                                                      "Accept": "application/json"})
    return await http.post(endpoint, data=data, headers=headers)


ADDRESS = re.compile(r"[\x21-\x7e]{1,2000}")  # a URL as a person can read it: no space, no control character
USER_CODE = re.compile(r"[\x21-\x7e]([\x20-\x7e]{0,62}[\x21-\x7e])?")


def instructions(code: dict[str, Any], issuer: str) -> str:
    """What the person is told: the address and the code the authorization server ``issuer``
    gave. Both are the server's text, shown as they are only when they are what they claim (an
    https:// address, or http:// to this machine; a short printable code): an escape sequence
    would rewrite the terminal. An address on another host than the issuer's is said to be so:
    a server could show a well-known sign-in page with a code of its own (device-code phishing)."""
    from urllib.parse import urlsplit

    from projector.oauth.guard import in_clear, printable

    complete = code.get("verification_uri_complete")
    where = complete or code.get("verification_uri", "")
    user_code = code.get("user_code", "")
    if not (isinstance(where, str) and ADDRESS.fullmatch(where) and urlsplit(where).scheme.lower() in ("https", "http")
            and urlsplit(where).hostname and not in_clear(where)):
        raise SignInFailed(f"the authorization server {issuer} gave no https:// address to sign in at "
                                 f"({printable(str(where)[:200])}); sign in without --device")
    if not (isinstance(user_code, str) and USER_CODE.fullmatch(user_code)):
        raise SignInFailed(f"the authorization server {issuer} gave a code that is not a short printable one "
                                 f"({printable(str(user_code)[:80])}); sign in without --device")
    minutes = _seconds(code.get("expires_in"), 600.0, EXPIRES_AT_MOST) / 60
    confirm = "confirm the code" if complete else "enter the code"
    host, own = urlsplit(where).hostname, urlsplit(issuer).hostname
    elsewhere = (f"\n(that address is on {host}, not on {own}, the authorization server the MCP server named: go on only "
                 f"if you expected {host} to sign you in)" if host != own else "")
    return (f"no browser here: open this address on any device and sign in:\n\n  {where}\n\n"
            f"then {confirm} {user_code} (it expires in {minutes:.0f} minutes); waiting…{elsewhere}")


def _error(answer: Any) -> str:
    try:
        error = answer.json().get("error")
    except (ValueError, AttributeError):
        return ""
    return error if isinstance(error, str) else ""


def _refusal(answer: Any) -> str:
    """`HTTP 400: invalid_client`: its OAuth error code only (a description may quote anything)."""
    return f"HTTP {answer.status_code}{oauth_error(answer.content)}"


def _seconds(value: Any, default: float, most: float = float("inf")) -> float:
    """``value`` seconds, at most ``most``: a server's interval or expiry never holds a login (and
    the provider's lock) for longer."""
    valid = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    return min(float(value), most) if valid else default


async def _never(*_: Any) -> Any:
    raise AssertionError("the device grant opens no browser")
