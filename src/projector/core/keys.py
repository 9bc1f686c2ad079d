"""Key paths into client files, as descriptors spell them.

A step ``[FIELD]`` at the end of a servers key says the servers are a LIST of tables, each named
by its field FIELD (YAML ``mcpServers:`` with ``- name: x`` items, TOML ``[[mcp_servers]]``
with ``name = "x"``), where most clients keep a map from name to entry. Read through
``named_entries`` a list is the same name -> entry map (each entry keeps its name field), so the
compiler, the fast path and the ledger treat both forms alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

WORKSPACE = "{workspace}"  # in a descriptor's per-folder scope: any folder key at this step


def list_field(step: str) -> str | None:
    """The naming field of a ``[FIELD]`` step; None for an ordinary key."""
    return step[1:-1] if len(step) > 2 and step[0] == "[" and step[-1] == "]" else None


def split(key: Iterable[str]) -> tuple[tuple[str, ...], str | None]:
    """A servers key as (the path to its container, the list's naming field or None)."""
    key = tuple(key)
    field = list_field(key[-1]) if key else None
    return (key[:-1], field) if field is not None else (key, None)


def named_entries(items: Any, field: str) -> dict[str, Any] | None:
    """A list of tables as name -> table (the last of a name wins, as a map's reader keeps the
    last of a key); None when ``items`` is not a list."""
    if not isinstance(items, list):
        return None
    return {item[field]: item for item in items if isinstance(item, dict) and isinstance(item.get(field), str)}


class FolderScope(NamedTuple):
    """One folder's servers in a global file's per-folder scope."""

    folder: str  # the folder key, as the file spells it
    container: tuple[str, ...]  # the key path of the mapping whose keys are the folders
    key: tuple[str, ...]  # the key path of the folder's servers


def scope_keys(scopes: Iterable[Sequence[str]], at: Callable[[tuple[str, ...]], Any]) -> list[FolderScope]:
    """Every folder of a global file's per-folder scopes (a descriptor's ``local_scopes``, such as
    ``projects.{workspace}.mcpServers``), the folders of each scope in order. ``at(path)``: what
    the file holds at a key path (the folders are the keys of the mapping at a scope's container)."""
    found = []
    for scope in scopes:
        step = list(scope).index(WORKSPACE)
        container = tuple(scope[:step])
        folders = at(container)
        for folder in sorted(map(str, folders)) if isinstance(folders, Mapping) else ():
            found.append(FolderScope(folder, container, (*container, folder, *scope[step + 1 :])))
    return found
