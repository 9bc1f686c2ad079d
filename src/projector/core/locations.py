"""Where projector's own files are, and projector on PATH. Only `os` is imported: the fast paths
use this."""

from __future__ import annotations

import os
from collections.abc import Mapping

# What moves projector's own files (the model, its state), and its lookups on PATH. The variables
# that move a client's files come from its descriptor (compile.clients.Client.variables).
VARIABLES = ("HOME", "PATH", "PROJECTOR_CONFIG", "PROJECTOR_STATE", "XDG_CONFIG_HOME", "XDG_STATE_HOME")


def home_text(environ: Mapping[str, str]) -> str:
    """The home folder: ``$HOME``, else the account's."""
    return environ.get("HOME") or os.path.expanduser("~")


def home(environ: Mapping[str, str]):  # -> Path
    from pathlib import Path

    return Path(home_text(environ))


def model_file(explicit: str | None, environ: Mapping[str, str]) -> str:
    """``--config``, else ``$PROJECTOR_CONFIG``, else the XDG config folder."""
    if explicit:
        return os.path.expanduser(explicit)
    if environ.get("PROJECTOR_CONFIG"):
        return os.path.expanduser(environ["PROJECTOR_CONFIG"])
    return os.path.join(config_folder(environ), "projector.yaml")


def config_folder(environ: Mapping[str, str]) -> str:
    """``$XDG_CONFIG_HOME/projector`` (``~/.config/projector`` by default)."""
    config_home = environ.get("XDG_CONFIG_HOME") or os.path.join(home_text(environ), ".config")
    return os.path.join(config_home, "projector")


def clients_folder(environ: Mapping[str, str]) -> str:
    """Where a user keeps client descriptors of their own."""
    return os.path.join(config_folder(environ), "clients")


def state_folder(environ: Mapping[str, str]) -> str:
    """``$PROJECTOR_STATE``, else ``$XDG_STATE_HOME/projector`` (``~/.local/state/projector`` by
    default). A bridge entry's ``--state DIR`` reaches the bridge as PROJECTOR_STATE."""
    if environ.get("PROJECTOR_STATE"):
        return environ["PROJECTOR_STATE"]
    if environ.get("XDG_STATE_HOME"):
        return os.path.join(environ["XDG_STATE_HOME"], "projector")
    return os.path.join(home_text(environ), ".local", "state", "projector")


def model_path(explicit: str | None, environ: Mapping[str, str]):  # -> Path
    from pathlib import Path

    return Path(model_file(explicit, environ))


def state_dir(environ: Mapping[str, str]):  # -> Path
    from pathlib import Path

    return Path(state_folder(environ))


def on_path(name: str, environ: Mapping[str, str]) -> str | None:
    """``name`` as PATH finds it: absolute, but not resolved through symlinks (a pipx or
    Homebrew shim stays the stable entry an upgrade keeps). Only absolute entries are searched:
    an empty or relative one (``PATH=$PATH:`` is a common slip) names the cwd, which for a bridge
    is a workspace someone else may have written (a ``secret-tool`` there would be handed the
    refresh token); Go's exec.LookPath refuses them too."""
    for folder in (environ.get("PATH") or os.defpath).split(os.pathsep):
        if not os.path.isabs(folder):
            continue
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    return None


def config_option(argv: list[str]) -> str | None:
    """The value of ``--config``/``-c`` in ``argv`` (None when absent)."""
    for index, word in enumerate(argv):
        if word.startswith("--config="):
            return word.split("=", 1)[1]
        if word in ("--config", "-c") and index + 1 < len(argv):
            return argv[index + 1]
    return None
