"""`projector logout PROVIDER`: revoke an OAuth provider's tokens at its authorization server
(RFC 7009, where its metadata named a revocation endpoint at sign-in), then forget them here
(the token file and the keyring item) whatever the server answered: a revocation that fails is
said, and never keeps a sign-in on this machine."""

from __future__ import annotations

import os
import re

from projector.commands.common import err, load_model
from projector.commands.login import oauth_provider
from projector.core import locations, tokenrequest, tokenstore
from projector.core.errors import ProjectorError
from projector.core.record import Record

REVOKE_TIMEOUT = 5.0  # seconds each revocation request may take: a server that hangs never holds a logout up for long


PROVIDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")  # schemas/model.schema.json's: also a token file's name


def run(name: str, config: str | None) -> int:
    state = locations.state_folder(os.environ)
    try:
        oauth_provider(load_model(config).providers, name)
    except ProjectorError as error:
        if not left_behind(state, name):
            err(f"error: {error}")
            return 1
    return signed_out(state, name)


def left_behind(state: str, name: str) -> bool:
    """Whether ``name``, which the model no longer signs in to (removed, or given a token
    variable instead), still has a sign-in here: it can be signed out of all the same."""
    return PROVIDER_NAME.fullmatch(name) is not None and os.path.lexists(tokenstore.token_file(state, name))


def signed_out(state: str, name: str) -> int:
    keyring = tokenstore.Keyring.found(os.environ)
    try:
        lock = tokenstore.locked(state, name, timeout=60)
    except tokenstore.Unsafe as unsafe:
        err(f"error: {unsafe}")
        return 1
    with lock:  # not under a refresh that is writing it
        revoked = revocation(state, name, keyring)
        removed = tokenstore.remove(state, name, keyring)
    if not removed:
        print(f"not signed in to {name}")
        return 0
    if revoked.warning:
        err(f"warning: {revoked.warning}")
    print(f"signed out of {name}{revoked.said}")
    return 0


class Revoked(Record):
    """What a revocation comes to: said after "signed out of NAME", and a warning when it failed."""

    said: str = ""
    warning: str | None = None


def revocation(state: str, provider: str, keyring: tokenstore.Keyring | None) -> Revoked:
    """Revoke the stored refresh token, then the access token, where the server revokes them."""
    try:
        tokens = tokenstore.read(state, provider)
    except tokenstore.Unsafe:  # its endpoint may be another user's: no secret of ours is sent there
        return Revoked(warning=f"the token file of {provider} is not one projector can trust (another user's, or others "
                               "could read it), so nothing was revoked at the server; it is forgotten here")
    if tokens is None:
        return Revoked()
    if not tokens.revocation_endpoint:
        return Revoked(" (the server names no revocation endpoint: its tokens stay valid there until they expire)")
    secrets = tokenstore.secrets_of(state, provider, tokens, keyring)
    failures = []
    for token, kind in ((secrets.refresh_token, "refresh_token"), (tokens.access_token, "access_token")):
        if token:
            failure, answered = revoke(tokens, secrets, token, kind)
            if failure:
                failures.append(f"the {kind.replace('_', ' ')}: {failure}")
            if not answered:
                break  # a server that does not answer is not asked twice
    if failures:
        return Revoked(warning=f"revoking the tokens of {provider} at {tokens.revocation_endpoint} failed ({'; '.join(failures)}): "
                               "they stay valid there until they expire; they are forgotten here all the same")
    return Revoked(" (its tokens are revoked at the server)")


def revoke(tokens: tokenstore.Tokens, secrets: tokenstore.Secrets, token: str, kind: str) -> tuple[str | None, bool]:
    """One RFC 7009 revocation request, the client authenticated as at a refresh: why it failed
    (None: revoked), and whether the server answered at all."""
    form, headers = tokenrequest.client_authenticated(tokens, secrets, {"token": token, "token_type_hint": kind})
    status, body, failure = tokenrequest.post(tokens.revocation_endpoint or "", form, headers, REVOKE_TIMEOUT)
    if status == 0:
        return failure, False
    if status != 200:  # RFC 7009 §2.2: 200 for a revoked token and for one the server did not know alike
        return f"HTTP {status}{tokenrequest.oauth_error(body)}", True
    return None, True
