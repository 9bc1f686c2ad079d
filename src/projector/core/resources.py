"""Where the data files (client descriptors, JSON schemas) are.

They live at the top of the repository so people can read and review them; a built wheel
carries them as ``projector/_data``. An editable install runs from the source tree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
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


@cache
def validator(name: str) -> Any:
    """A validator for ``schemas/<name>.schema.json`` with its references (to its own definitions
    and to the other schemas') put in place, and whose ``pattern`` means what it means in the schema's own dialect (ECMA-262,
    what editors apply): ``$`` is the end of the text. Python's ``re`` lets ``$`` match before a
    final newline, so ``"docs\\n"`` would pass ``^[a-z]+$`` and reach the client files."""
    import jsonschema

    # jsonschema checks a thousand bindings in half the time it takes to look each reference up
    # per value, with the same errors (tests/core/test_resources.py).
    schemas = {f"{other}.schema.json": schema(other) for other in ("model", "project", "client")}
    strict = jsonschema.validators.extend(jsonschema.Draft202012Validator, validators={"pattern": _pattern})
    return strict(_inlined(schema(name), schema(name), schemas))


_ANNOTATIONS = frozenset({"description", "title", "$comment", "default", "examples"})


def _inlined(node: Any, document: Mapping[str, Any], schemas: Mapping[str, Any]) -> Any:
    """``node`` with every ``$ref`` replaced by what it points to (in ``document``, or in another
    schema by its file name). A reference with annotations beside it takes them along; one with
    other keywords beside it becomes ``allOf`` of it, which validates the same."""
    if isinstance(node, list):
        return [_inlined(item, document, schemas) for item in node]
    if not isinstance(node, Mapping):
        return node
    rest = {key: _inlined(value, document, schemas) for key, value in node.items() if key != "$ref"}
    if "$ref" not in node:
        return rest
    where, _, pointer = node["$ref"].partition("#")
    target_document = schemas[where] if where else document
    target: Any = target_document
    for step in pointer.strip("/").split("/") if pointer.strip("/") else ():
        target = target[step]
    resolved = _inlined(target, target_document, schemas)
    if set(rest) <= _ANNOTATIONS and isinstance(resolved, Mapping):
        return {**resolved, **rest}
    return {**rest, "allOf": [resolved, *rest.get("allOf", [])]}


def _pattern(validator: Any, pattern: str, instance: Any, _schema: Any) -> Any:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not ecma(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def ecma(pattern: str) -> Any:
    """``pattern`` compiled with each ``$`` (outside a class, unescaped) as ``\\Z``."""
    import re

    out, in_class, escaped = [], False, False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "$":
            char = r"\Z"
        out.append(char)
    return re.compile("".join(out))
