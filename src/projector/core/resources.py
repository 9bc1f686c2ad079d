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


def client_ids() -> tuple[str, ...]:
    """The ids of the client descriptors (their file names): what a model may name in ``clients``.
    A directory listing, so the bridge can check a model without loading any descriptor."""
    import os

    folder = data_dir("clients")
    return tuple(sorted(name[: -len(".yaml")] for name in os.listdir(folder) if name.endswith(".yaml")))


@cache
def schema(name: str) -> dict[str, Any]:
    return json.loads((data_dir("schemas") / f"{name}.schema.json").read_text(encoding="utf-8"))
