"""Where projector's own files are. Standard library only: the fast paths import this."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def home(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("HOME") or Path.home())


def model_path(explicit: str | None, environ: Mapping[str, str]) -> Path:
    """``--config``, else ``$PROJECTOR_CONFIG``, else the XDG config folder."""
    if explicit:
        return Path(explicit).expanduser()
    if environ.get("PROJECTOR_CONFIG"):
        return Path(environ["PROJECTOR_CONFIG"]).expanduser()
    config_home = Path(environ["XDG_CONFIG_HOME"]) if environ.get("XDG_CONFIG_HOME") else home(environ) / ".config"
    return config_home / "projector" / "projector.yaml"


def state_dir(environ: Mapping[str, str]) -> Path:
    """``$XDG_STATE_HOME/projector`` (``~/.local/state/projector`` by default)."""
    if environ.get("XDG_STATE_HOME"):
        return Path(environ["XDG_STATE_HOME"]) / "projector"
    return home(environ) / ".local" / "state" / "projector"


def config_option(argv: list[str]) -> str | None:
    """The value of ``--config``/``-c`` in ``argv`` (None when absent)."""
    for index, word in enumerate(argv):
        if word.startswith("--config="):
            return word.split("=", 1)[1]
        if word in ("--config", "-c") and index + 1 < len(argv):
            return argv[index + 1]
    return None
