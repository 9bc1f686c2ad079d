"""`projector logout PROVIDER`: forget an OAuth provider's sign-in (its token file and its keyring item)."""

from __future__ import annotations

import os

from projector.commands.common import err, load_model
from projector.commands.login import oauth_provider
from projector.core import locations, tokenstore
from projector.core.errors import ProjectorError


def run(name: str, config: str | None) -> int:
    try:
        oauth_provider(load_model(config).providers, name)
    except ProjectorError as error:
        err(f"error: {error}")
        return 1
    state = locations.state_folder(os.environ)
    with tokenstore.locked(state, name, timeout=60):  # not under a refresh that is writing it
        removed = tokenstore.remove(state, name, tokenstore.Keyring.found(os.environ))
    print(f"signed out of {name}" if removed else f"not signed in to {name}")
    return 0
