"""Which KB set a provider shows in a folder: canonical paths, the deepest binding, roots.

A folder's set comes from the deepest binding that contains it (on path-component boundaries:
``/w/a`` does not contain ``/w/ab``) and names the provider; a folder under no such binding gets
the provider's ``default``. KBs the provider does not mount are dropped (with a note).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from projector.model import Binding, KbSet, Model, Provider


@dataclass(frozen=True)
class Scope:
    kbs: KbSet  # None: every KB; (): none
    binding: Binding | None  # the binding it came from; None: the provider's default
    dropped: tuple[str, ...] = ()  # bound KBs the provider does not mount

    @property
    def empty(self) -> bool:
        return self.kbs == ()


def canonical(path: str) -> str:
    return os.path.realpath(path)


def contains(folder: str, path: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def deepest_binding(model: Model, provider: str, path: str) -> Binding | None:
    """The deepest binding that contains ``path`` (canonical) and names ``provider``."""
    found = [b for b in model.bindings_of(provider) if contains(canonical(b.path), path)]
    return max(found, key=lambda b: len(canonical(b.path)), default=None)


def resolve(model: Model, provider: Provider, folder: str) -> Scope:
    binding = deepest_binding(model, provider.name, canonical(folder))
    if binding is None:
        return Scope(provider.default, None)
    kbs = binding.kb_set(provider.name)
    assert kbs is not None
    if provider.kbs is None:
        return Scope(kbs, binding)
    kept = tuple(kb for kb in kbs if kb in provider.kbs)
    return Scope(kept, binding, tuple(kb for kb in kbs if kb not in provider.kbs))


def union(scopes: list[Scope]) -> KbSet:
    """The KB sets of several folders together: all if any shows all."""
    if any(s.kbs is None for s in scopes):
        return None
    merged: list[str] = []
    for scope in scopes:
        merged += [kb for kb in scope.kbs or () if kb not in merged]
    return tuple(merged)


def root_path(uri: object) -> str | None:
    """A ``file://`` root as a local path; None for anything else (never raises)."""
    from urllib.parse import (  # only sessions that ask for roots need it
        unquote,
        urlsplit,
    )

    if not isinstance(uri, str):
        return None
    try:
        parts = urlsplit(uri)
    except ValueError:
        return None
    if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
        return None
    path = unquote(parts.path)
    return path if path.startswith("/") else None
