"""How an OAuth provider's sessions will authenticate, said for doctor, status, explain and sync:
signed in through projector (until when), renewed at the next session, or wanting a sign-in;
never a token. Read from the token store alone (core.tokenstore): nothing of the sign-in's
library is imported."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping

from projector.core import locations, tokenstore
from projector.core.modeltypes import Provider


def until(tokens: tokenstore.Tokens, word: str = "until") -> str:
    if tokens.expires_at is None:
        return ""
    return f" {word} " + time.strftime("%Y-%m-%d %H:%M", time.localtime(tokens.expires_at))


def headless(environ: Mapping[str, str]) -> bool:
    """No browser can open here: no $BROWSER, and an SSH session or (off macOS) no display."""
    if environ.get("BROWSER"):
        return False
    if environ.get("SSH_CONNECTION") or environ.get("SSH_TTY"):
        return True
    return sys.platform != "darwin" and not (environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))


def sign_in_state(provider: Provider, environ: Mapping[str, str], now: float | None = None) -> tuple[bool, str]:
    """How an OAuth provider's sessions authenticate, for doctor, status and explain: whether
    that is usable, and a line that says it (never a token)."""
    assert provider.oauth is not None
    name = provider.name
    if provider.oauth.by_client:
        return True, f"{name}: each client signs itself in (oauth: client); bindings do not narrow it"
    try:
        tokens = tokenstore.read(locations.state_folder(environ), name)
    except tokenstore.Unsafe as unsafe:
        return False, f"{name}: {unsafe}"
    if tokens is None:
        return False, f"{name}: needs a sign-in: run `projector login {name}`"
    machine = not provider.oauth.by_person  # signed in again with its client's credentials
    if not tokens.serves(provider.url):  # the model moved the provider since: the bridge does not use this sign-in
        moved = f"{name}: signed in for {tokens.resource}, the model now says {provider.url}"
        if machine:
            return True, f"{moved}: the next session signs in again (its grant needs no person)"
        return False, f"{moved}: run `projector login {name}`"
    now = time.time() if now is None else now
    renewable = tokens.in_keyring or bool(tokens.secrets.refresh_token) or machine
    where = "the keyring" if tokens.in_keyring else "the state folder"
    if tokens.usable(now):
        return True, f"{name}: signed in through projector{until(tokens)} (tokens in {where})"
    if renewable:
        return True, f"{name}: signed in through projector; the token expire{'s' if tokens.expires_at > now else 'd'}{until(tokens, 'at')}" \
                     f" and is renewed at the next session (tokens in {where})"
    return False, f"{name}: the sign-in expire{'s' if tokens.expires_at > now else 'd'}{until(tokens, 'at')} and cannot be renewed: " \
                  f"run `projector login {name}`"
