"""`projector logout PROVIDER`: revoke an OAuth provider's tokens at its authorization server
(oauth.revocation), then forget them here (the token file and the keyring item) whatever the
server answered: a revocation that fails is said, and never keeps a sign-in on this machine."""

from __future__ import annotations

import os

from projector.commands.common import err, load_model, oauth_provider
from projector.core import locations, tokenstore
from projector.core.checking import PROVIDER_NAME
from projector.core.errors import ProjectorError
from projector.oauth.revocation import revocation


def run(name: str, config: str | None) -> int:
    state = locations.state_folder(os.environ)
    insecure = False  # a provider the model no longer has: no plain http:// to another host
    try:
        insecure = oauth_provider(load_model(config).providers, name).insecure
    except ProjectorError as error:
        if not left_behind(state, name):
            err(f"error: {error}")
            return 1
    return signed_out(state, name, insecure)


def left_behind(state: str, name: str) -> bool:
    """Whether ``name``, which the model no longer signs in to (removed, or given a token
    variable instead), still has a sign-in here: it can be signed out of all the same."""
    return PROVIDER_NAME.fullmatch(name) is not None and os.path.lexists(tokenstore.token_file(state, name))


def signed_out(state: str, name: str, insecure: bool = False) -> int:
    keyring = tokenstore.Keyring.found(os.environ)
    try:
        lock = tokenstore.locked(state, name, timeout=60)
    except tokenstore.Unsafe as unsafe:
        err(f"error: {unsafe}")
        return 1
    with lock:  # not under a refresh that is writing it
        revoked = revocation(state, name, keyring, insecure)
        removed = tokenstore.remove(state, name, keyring)
    if not removed:
        print(f"not signed in to {name}")
        return 0
    if revoked.warning:
        err(f"warning: {revoked.warning}")
    print(f"signed out of {name}{revoked.said}")
    return 0
