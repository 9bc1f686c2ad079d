"""Key paths into client files, as descriptors spell them.

A step ``[FIELD]`` at the end of a servers key says the servers are a LIST of tables, each named
by its field FIELD (YAML ``mcpServers:`` with ``- name: x`` items, TOML ``[[mcp_servers]]``
with ``name = "x"``), where most clients keep a map from name to entry. Read through
``named_entries`` a list is the same name -> entry map (each entry keeps its name field), so the
compiler, the fast path and the ledger treat both forms alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


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
