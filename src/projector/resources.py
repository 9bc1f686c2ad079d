"""Where the data files (client descriptors, JSON schemas) are.

They live at the top of the repository so people can read and review them; a built wheel
carries them as ``projector/_data``. An editable install runs from the source tree.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

_PACKAGE = Path(__file__).resolve().parent


@cache
def data_dir(name: str) -> Path:
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"projector is installed without its {name}/ folder")


@cache
def schema(name: str) -> dict[str, Any]:
    return json.loads((data_dir("schemas") / f"{name}.schema.json").read_text(encoding="utf-8"))
