"""An OAuth provider's access token for the bridge, renewed when it expires (standard library only).

The token `projector login` stored (core.tokenstore) is used while it has more than five minutes
left; then, or when the provider answers 401, it is refreshed with the refresh token, once,
under the provider's sign-in lock: every bridge waits on the same lock file, re-reads the store
once it holds it, and uses the token another bridge got meanwhile instead of refreshing again,
so twenty sessions starting on an expired token make one refresh request and a rotated refresh
token is never sent twice. A refresh the server refuses (revoked, expired) leaves the store as
it is and says to sign in again; nothing waits on a person here.
"""

from __future__ import annotations

import time

from projector.core import locations, tokenstore
from projector.core.record import replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

LOCK_WAIT = 60.0  # seconds a bridge waits for another's refresh (or sign-in) before giving up
REFRESH_TIMEOUT = 30.0


class Renewer:
    """One provider's tokens, as one bridge session uses them."""

    def __init__(self, provider: str, environ: Mapping[str, str], log: Callable[[str], None],
                 clock: Callable[[], float] = time.time) -> None:
        self.provider = provider
        self.environ = environ
        self.state = locations.state_folder(environ)
        self.log = log
        self.clock = clock

    def _again(self, why: str) -> str:
        return f"{why}: sign in again with `projector login {self.provider}`"

    def _unsigned(self) -> str:
        return f"not signed in to {self.provider}: run `projector login {self.provider}`"

    def not_signed_in(self) -> str | None:
        """Why there is no sign-in to use, when nobody has signed in; None when there is one
        (usable, or renewed when the session opens) or the store is unsafe (the session says so
        when it opens)."""
        try:
            return self._unsigned() if tokenstore.read(self.state, self.provider) is None else None
        except tokenstore.Unsafe:
            return None

    def current(self) -> tuple[str | None, str | None]:
        """A token to send (refreshed first when it expires soon), and what is wrong when none."""
        try:
            tokens = tokenstore.read(self.state, self.provider)
        except tokenstore.Unsafe as unsafe:
            return None, str(unsafe)
        if tokens is None:
            return None, self._unsigned()
        if tokens.usable(self.clock()):
            return tokens.access_token, None
        return self.renewed(tokens.access_token)

    def renewed(self, refused: str | None) -> tuple[str | None, str | None]:
        """A token other than ``refused`` (the one the provider turned down or that expires):
        another bridge's fresh one, or one this refresh gets; and what is wrong when none."""
        from projector.core.files import Busy

        try:
            with tokenstore.locked(self.state, self.provider, LOCK_WAIT):
                tokens = tokenstore.read(self.state, self.provider)  # again: another bridge may have renewed it
                if tokens is None:
                    return None, self._unsigned()
                if tokens.access_token != refused and tokens.usable(self.clock(), margin=0):
                    return tokens.access_token, None
                return self._refresh(tokens)
        except Busy:
            return None, f"another projector held the sign-in of {self.provider} for {LOCK_WAIT:.0f} s; try again"
        except tokenstore.Unsafe as unsafe:
            return None, str(unsafe)

    def _refresh(self, tokens: tokenstore.Tokens) -> tuple[str | None, str | None]:
        keyring = tokenstore.Keyring.found(self.environ) if tokens.in_keyring else None
        if tokens.in_keyring and keyring is None:
            return None, self._again(f"the refresh token of {self.provider} is in the keyring, which this session cannot reach")
        secrets = tokenstore.secrets_of(self.state, self.provider, tokens, keyring)
        if not secrets.refresh_token or not tokens.token_endpoint:
            return None, self._again(f"the sign-in to {self.provider} has expired and the server gave no refresh token")
        answer, problem = _token_request(tokens, secrets)
        if answer is None:
            return None, self._again(f"renewing the sign-in to {self.provider} failed ({problem})")
        expires_in = answer.get("expires_in")
        lifetime = float(expires_in) if isinstance(expires_in, (int, float)) else None
        renewed = replace(
            tokens,
            access_token=str(answer["access_token"]),
            expires_at=None if lifetime is None else self.clock() + lifetime,
            lifetime=lifetime,
            scope=answer.get("scope") or tokens.scope,
            secrets=tokenstore.Secrets(refresh_token=answer.get("refresh_token") or secrets.refresh_token,
                                       client_secret=secrets.client_secret),
        )
        tokenstore.write(self.state, self.provider, renewed, keyring)
        self.log(f"renewed the sign-in to {self.provider}")
        return renewed.access_token, None


def _token_request(tokens: tokenstore.Tokens, secrets: tokenstore.Secrets) -> tuple[dict[str, Any] | None, str]:
    """The token endpoint's answer to a refresh (RFC 6749 §6, with RFC 8707's resource); None and
    why when there is none. Neither the request's secrets nor the answer's tokens are ever said."""
    from projector.core import tokenrequest  # a refresh's only: a start with a usable token never loads it

    form = {"grant_type": "refresh_token", "refresh_token": secrets.refresh_token or ""}
    if tokens.resource:
        form["resource"] = tokens.resource
    form, headers = tokenrequest.client_authenticated(tokens, secrets, form)
    status, body, failure = tokenrequest.post(tokens.token_endpoint or "", form, headers, REFRESH_TIMEOUT)
    if status == 0:
        return None, failure
    if not 200 <= status < 300:
        return None, f"HTTP {status}{tokenrequest.oauth_error(body)}"
    answer = tokenrequest.json_object(body)
    if answer is None:
        return None, "the answer is not JSON"
    if not isinstance(answer.get("access_token"), str):
        return None, "the answer has no access token"
    return answer, ""
