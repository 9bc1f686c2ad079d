"""`projector login PROVIDER`: sign in to an OAuth provider once, for every client and folder.

The sign-in is projector.oauth's (the MCP SDK's OAuth client, the browser and the redirect's
listener, the device grant); this command picks the provider, holds its sign-in lock, keeps the
tokens (core.tokenstore) and says where. The SDK is imported only once a sign-in runs.
"""

from __future__ import annotations

import os
import time

from projector.commands.common import err, load_model, oauth_provider
from projector.core import locations, tokenstore
from projector.core.errors import ProjectorError
from projector.core.modeltypes import Provider
from projector.core.record import replace
from projector.core.signin import headless, until
from projector.oauth import flow
from projector.oauth.redirect import WAIT_FOR_BROWSER


def run(name: str, config: str | None, paste: bool = False, device: bool = False, scope: str | None = None,
        replacing: str | None = None) -> int:
    """Sign in to ``name``; ``scope``: the scopes to ask for (space-separated), instead of the
    model's or the server's. ``replacing``: a bridge started this sign-in when it found the token
    file at that stamp (core.tokenstore.stamp): once the lock is held, a usable sign-in written
    since (another session's) is kept and no browser opens."""
    try:
        provider = oauth_provider(load_model(config).providers, name)
        assert provider.oauth is not None
        if device and (how := flow.MACHINE_GRANTS.get(provider.oauth.grant)):
            raise ProjectorError(f'provider "{name}" signs in {how}, with no person: --device is for a person\'s sign-in; '
                                 f"run `projector login {name}` without it")
        if scope is not None:
            provider = replace(provider, oauth=replace(provider.oauth, scopes=tuple(scope.split())))
        state = locations.state_folder(os.environ)
        keyring = tokenstore.Keyring.found(os.environ)
        with tokenstore.locked(state, name, timeout=WAIT_FOR_BROWSER + 60):  # one sign-in at a time, bridges included
            if replacing is not None and (meanwhile := signed_in_since(state, provider, replacing, scope)) is not None:
                print(f"signed in to {name} already (another session did){until(meanwhile)}")
                return 0
            nobrowser = headless(os.environ)
            tokens = flow.sign_in(provider, os.environ, paste or nobrowser, flow.device_grant(device, paste, nobrowser))
            kept = tokenstore.write(state, name, tokens, keyring)
    except (ProjectorError, tokenstore.Unsafe) as error:
        err(f"error: {error}")
        return 1
    where = "the keyring" if kept.in_keyring else tokenstore.token_file(state, name)
    print(f"signed in to {name}{until(kept)}; tokens kept in {where}")
    return 0


def signed_in_since(state: str, provider: Provider, stamp: str, scope: str | None) -> tokenstore.Tokens | None:
    """The sign-in written after the token file was at ``stamp``, when it is usable for the
    provider's address (and has ``scope``, when one is asked for); None: sign in."""
    if tokenstore.stamp(state, provider.name) == stamp:
        return None
    try:
        tokens = tokenstore.read(state, provider.name)
    except tokenstore.Unsafe:
        return None
    if tokens is None or not tokens.current_for(provider.url, time.time()):
        return None
    if scope is not None and not tokenstore.covers(tokens.scope, scope):
        return None
    return tokens
