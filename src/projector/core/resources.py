"""Where the data files (client descriptors, JSON schemas) are.

They live at the top of the repository so people can read and review them; a built wheel
carries them as ``projector/_data``. An editable install runs from the source tree.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

_PACKAGE = Path(__file__).resolve().parent.parent  # src/projector


@cache
def data_dir(name: str) -> Path:
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"projector is installed without its {name}/ folder")


def descriptor_files() -> list[Path]:
    """Every client descriptor: projector's own, and the user's in ``$XDG_CONFIG_HOME/projector/
    clients/`` (a new client, or a fix to one of projector's: same name, the user's wins)."""
    import os

    from projector.core.locations import clients_folder

    found: dict[str, Path] = {}
    for folder in (str(data_dir("clients")), clients_folder(os.environ)):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        found.update({name: Path(folder, name) for name in names if name.endswith(".yaml")})
    return [found[name] for name in sorted(found)]


def client_ids() -> tuple[str, ...]:
    """The ids of the client descriptors (their file names): what a model may name in ``clients``.
    Directory listings, so the bridge can check a model without loading any descriptor."""
    return tuple(path.stem for path in descriptor_files())


@cache
def schema(name: str) -> dict[str, Any]:
    return json.loads((data_dir("schemas") / f"{name}.schema.json").read_text(encoding="utf-8"))
