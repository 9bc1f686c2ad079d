"""An OAuth provider's access token for the bridge, renewed when it expires (standard library only).

The token `projector login` stored (core.tokenstore) is used while it has more than five minutes
left; then, or when the provider answers 401, it is refreshed with the refresh token, once,
under the provider's sign-in lock: every bridge waits on the same lock file, re-reads the store
once it holds it, and uses the token another bridge got meanwhile instead of refreshing again,
so twenty sessions starting on an expired token make one refresh request and a rotated refresh
token is never sent twice. A refresh the server refuses (revoked, expired) leaves the store as
it is and says to sign in again (a SignInNeeded: the session then starts one, bridge.signing).
A machine's grant (``client_credentials``, ``enterprise``) has no refresh token: it is renewed by
running `projector login` itself, which needs no person, under the same lock.
"""

from __future__ import annotations

import time

from projector.core import locations, tokenstore
from projector.core.modeltypes import plain_http_host
from projector.core.record import replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

# Seconds a bridge waits for the sign-in lock: another bridge's refresh (one request) is over
# by then; a lock held longer is a sign-in waiting for a person (minutes), which the session
# waits for answered here (bridge.signing) rather than leave its client's initialize unanswered.
LOCK_WAIT = 5.0
REFRESH_TIMEOUT = 30.0
MACHINE_SIGN_IN_TIMEOUT = 120.0  # a machine's `projector login`: a wait for the lock, then a few requests


class SignInNeeded(str):
    """What is wrong when only a sign-in cures it (nobody signed in, a refused refresh): the
    session starts one (bridge.signing) rather than failing."""


class Renewer:
    """One provider's tokens, as one bridge session uses them."""

    def __init__(self, provider: str, environ: Mapping[str, str], log: Callable[[str], None],
                 clock: Callable[[], float] = time.time, config: str | None = None, machine: bool = False,
                 url: str | None = None, insecure: bool = False) -> None:
        self.provider = provider
        self.url = url  # the provider's address in the model: a sign-in issued for another is not used
        self.insecure = insecure  # the model's `insecure: true`: a refresh may go over plain http:// to another host
        self.environ = environ
        self.state = locations.state_folder(environ)
        self.log = log
        self.clock = clock
        self.config = config  # the model's file, for the `projector login` a bridge runs
        self.machine = machine  # a client_credentials or enterprise grant: renewed by signing in again, no person
        # The token file as it was when last read (core.tokenstore.stamp): a sign-in waited for
        # is one written after it, even in the instant between this read and the wait.
        self.seen = ""
        # What current() last read and the file's stamp then: a session's start asks twice (is a
        # sign-in needed; the provider's session opening) and reads the file once.
        self.kept: tuple[str, tokenstore.Tokens] | None = None

    def _again(self, why: str) -> SignInNeeded:
        return SignInNeeded(f"{why}: sign in again with `projector login {self.provider}`")

    def _unsigned(self) -> SignInNeeded:
        return SignInNeeded(f"not signed in to {self.provider}: run `projector login {self.provider}`")

    def _elsewhere(self, tokens: tokenstore.Tokens) -> SignInNeeded | None:
        """A sign-in issued for another address (the model moved the provider since): its token
        and its refresh both ask for the old resource, so neither is spent on the new one."""
        if tokens.serves(self.url):
            return None
        return SignInNeeded(f"signed in to {self.provider} for {tokens.resource}, the model now says {self.url}: "
                            f"run `projector login {self.provider}`")

    def login_command(self, *options: str) -> list[str]:
        """`projector login` for this provider, as this bridge runs it: the same interpreter and
        model (no token in it: the login reads the store and the model's variables itself). -P:
        the session's folder is not put on the module path (a ``projector/`` folder there is not us)."""
        import sys

        config = ["--config", self.config] if self.config else []
        return [sys.executable, "-P", "-m", "projector", "login", self.provider, *config, *options]

    def current(self) -> tuple[str | None, str | None]:
        """A token to send (refreshed first when it expires soon), and what is wrong when none."""
        try:
            tokens = self._read()
        except tokenstore.Unsafe as unsafe:
            return None, str(unsafe)
        if tokens is None:
            return self._signed_in_again(tokenstore.NO_FILE) if self.machine else (None, self._unsigned())
        if moved := self._elsewhere(tokens):
            return self.renewed(tokens.access_token) if self.machine else (None, moved)
        if tokens.usable(self.clock()):
            return tokens.access_token, None
        return self.renewed(tokens.access_token)

    def _read(self) -> tokenstore.Tokens | None:
        """The stored tokens: those read last while the file has not changed since (a stat), else
        the file's, and its stamp with them."""
        if self.kept is not None and (now := tokenstore.stamp(self.state, self.provider)) == self.kept[0]:
            self.seen = now
            return self.kept[1]
        tokens, self.seen = tokenstore.read_stamped(self.state, self.provider)
        self.kept = None if tokens is None else (self.seen, tokens)
        return tokens

    def renewed(self, refused: str | None) -> tuple[str | None, str | None]:
        """A token other than ``refused`` (the one the provider turned down or that expires):
        another bridge's fresh one, or one this refresh gets; and what is wrong when none."""
        from projector.core.files import Busy

        try:
            self.seen = tokenstore.stamp(self.state, self.provider)
            with tokenstore.locked(self.state, self.provider, LOCK_WAIT):
                # again: another bridge may have renewed it (the stamp: of the very file read)
                tokens, self.seen = tokenstore.read_stamped(self.state, self.provider)
                if tokens is None:
                    return None, self._unsigned()
                moved = self._elsewhere(tokens)
                if moved and not self.machine:
                    return None, moved
                if not moved:
                    if tokens.access_token != refused and tokens.usable(self.clock(), margin=0):
                        return tokens.access_token, None
                    keyring = tokenstore.Keyring.found(self.environ) if tokens.in_keyring else None
                    secrets = tokenstore.secrets_of(self.state, self.provider, tokens, keyring)
                    if not (self.machine and not secrets.refresh_token):
                        return self._refresh(tokens, secrets, keyring)
                stale = self.seen  # the file whose tokens will not do: the login replaces only it
            return self._signed_in_again(stale)  # it takes the lock itself
        except Busy:  # a person signing in elsewhere: waited for as a sign-in (seen: the file before it)
            return None, SignInNeeded(f"a sign-in to {self.provider} is under way in another projector")
        except tokenstore.Unsafe as unsafe:
            return None, str(unsafe)

    def _refresh(self, tokens: tokenstore.Tokens, secrets: tokenstore.Secrets,
                 keyring: tokenstore.Keyring | None) -> tuple[str | None, str | None]:
        if tokens.in_keyring and keyring is None:
            return None, self._again(f"the refresh token of {self.provider} is in the keyring, which this session cannot reach")
        if not secrets.refresh_token or not tokens.token_endpoint:
            return None, self._again(f"the sign-in to {self.provider} has expired and the server gave no refresh token")
        if not self.insecure and (host := plain_http_host(tokens.token_endpoint)):  # a token file of an older projector's
            return None, self._again(f"the sign-in to {self.provider} renews at {tokens.token_endpoint}, plain http:// to {host}, "
                                     "which is not this machine: its refresh token would cross the network in clear, so it "
                                     "is not sent (say insecure: true of the provider if you accept that)")
        answer, problem = _token_request(tokens, secrets)
        if answer is None:
            why = f"renewing the sign-in to {self.provider} failed ({problem})"
            return None, self._again(why) if problem.startswith("HTTP 4") else f"{why}; try again"
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
        if unfit := tokenstore.unfit(self.provider, renewed.access_token, renewed.secrets.refresh_token):
            return None, SignInNeeded(unfit)  # not kept; the refresh token sent is spent where the server rotates them
        tokenstore.write(self.state, self.provider, renewed, keyring)
        self.log(f"renewed the sign-in to {self.provider}")
        return renewed.access_token, None

    def _signed_in_again(self, stale: str) -> tuple[str | None, str | None]:
        """A machine's grant renewed by `projector login` (no person: its client's credentials),
        waited for. Under the lock it signs in only while the token file is still ``stale``, so
        bridges that meet the same expired token make one sign-in."""
        import subprocess

        try:
            done = subprocess.run(self.login_command("--from-bridge", stale), stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=MACHINE_SIGN_IN_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as failure:
            return None, f"signing in to {self.provider} again failed ({type(failure).__name__})"
        for line in (done.stdout + done.stderr).splitlines():  # what login says never holds a token
            self.log(f"login: {line}")
        try:
            tokens = tokenstore.read(self.state, self.provider)
        except tokenstore.Unsafe as unsafe:
            return None, str(unsafe)
        if done.returncode != 0 or tokens is None or not tokens.current_for(self.url, self.clock()):
            return None, f"signing in to {self.provider} again failed (projector login exited {done.returncode}; see above)"
        self.log(f"renewed the sign-in to {self.provider} (signed in again with its client's credentials)")
        return tokens.access_token, None


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
