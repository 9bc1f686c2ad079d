"""The files a sync reads and may edit, and everything its result depends on.

A target is a file and a key: a client's global file (its servers), a project file inside a
bound workspace (only those that exist: projector never creates a file inside a repository),
a client's hook file (its hook lists: projector's group per event), or the entries a client
needs in its global file before it runs those hooks (``trust``). Targets of one file are
applied one after the other to its text. ``dependencies`` lists every path and binary the
result depends on, for the fast path and the shell hook.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from projector.compile.clients import Client, Reading, expand
from projector.core import locations
from projector.core.errors import display_path
from projector.core.model import Model
from projector.core.projects import Project, trust_path
from projector.core.resources import descriptor_files


@dataclass(frozen=True)
class TargetFile:
    """One file the compiler edits: a client's global file, or a project file inside a workspace."""

    client: Client  # for a project file shared by clients: the first of them
    path: Path
    shown: str  # the path as a person reads it (~/...)
    format: str
    key: tuple[str, ...]
    desired: Mapping[str, Any] | None  # None: a project file, where entries are pruned
    prune_keys: tuple[tuple[str, ...], ...] = ()  # local scopes inside a global file
    shadows: str = ""  # the clients a project file's entries shadow the global entry in
    readings: tuple[Reading, ...] = ()  # how the clients that read the file read an entry
    file_keys: tuple[str, ...] = ()  # top-level keys they write by themselves, carrying no setting
    kind: str = "servers"  # servers | hooks (a group per event in lists under key) | trust
    follows: Path | None = None  # trust: the hook file whose groups its entries are for

    @property
    def is_project(self) -> bool:
        return self.desired is None

    @property
    def ledger_key(self) -> str:
        """The ledger's name for what projector owns here: the path for servers (as ever), the
        path and key for the other kinds (one file may hold several)."""
        return str(self.path) if self.kind == "servers" else f"{self.path}#{'.'.join(self.key)}"


def workspaces(model: Model, projects: tuple[Project, ...] = ()) -> tuple[str, ...]:
    """Every bound folder, as written and as its canonical path (both spellings are in use),
    and the root of every trusted project file."""
    paths = {b.path for b in model.bindings} | {os.path.realpath(b.path) for b in model.bindings}
    return tuple(sorted(paths | {p.root for p in projects}))


def targets(
    model: Model,
    clients: list[Client],
    environ: Mapping[str, str],
    desired: Mapping[str, Mapping[str, Any]],
    projects: tuple[Project, ...] = (),
    hooks: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[TargetFile]:
    """``desired``: each client's servers; ``hooks``: each client's hook groups (None: hook
    files are not looked at)."""
    home = locations.home(environ)
    found: list[TargetFile] = []
    folders = workspaces(model, projects)
    for client in clients:
        path = client.global_file(environ)
        assert path is not None  # every descriptor ends its folder list with one under ~
        scopes = tuple(key for w in folders for key in client.local_scope_keys(w))
        found.append(TargetFile(client, path, display_path(path, home), client.format, client.servers_key, desired[client.id], scopes,
                                client.name, (client.reading,), client.file_keys))
    found += _hook_targets(clients, environ, hooks) if hooks is not None else []
    project: dict[str, TargetFile] = {}
    for workspace in folders:
        for client in clients:
            for spec in client.project_files:
                name = os.path.join(workspace, spec.path)  # strings: most of these do not exist
                if name in project:
                    known = project[name]
                    project[name] = replace(known, shadows=f"{known.shadows} and {client.name}", readings=known.readings + (client.reading,),
                                            file_keys=tuple(dict.fromkeys(known.file_keys + client.file_keys)))
                elif os.path.lexists(name):  # projector never creates a file inside a workspace
                    path = Path(name)
                    project[name] = TargetFile(client, path, display_path(path, home), spec.format, spec.servers_key, None, (), client.name,
                                               (client.reading,), client.file_keys)
    return found + [project[p] for p in sorted(project)]


def _hook_targets(clients: list[Client], environ: Mapping[str, str], hooks: Mapping[str, Mapping[str, Any]]) -> list[TargetFile]:
    """Each client's hook file, then the trust entries that follow its groups (they are worked
    out from the hook file as the sync leaves it)."""
    home = locations.home(environ)
    files, trusts = [], []
    for client in clients:
        spec, path = client.hooks, client.hook_file(environ)
        if spec is None or path is None:
            continue
        files.append(TargetFile(client, path, display_path(path, home), spec.format, spec.key, hooks[client.id], (), client.name,
                                (client.reading,), kind="hooks"))
        if spec.trust_function:
            config = client.global_file(environ)
            assert config is not None
            trusts.append(TargetFile(client, config, display_path(config, home), client.format, spec.trust_key, {}, (), client.name,
                                     (client.reading,), kind="trust", follows=path))
    return files + trusts


@dataclass(frozen=True)
class Dependencies:
    """What a sync's result depends on, for the fast path and the shell hook."""

    paths: list[str]
    binaries: list[str]
    variables: list[str]  # projector's own, and those that move a client's files (from its descriptor)


def dependencies(
    model: Model, clients: list[Client], environ: Mapping[str, str], projects: tuple[Project, ...] = ()
) -> Dependencies:
    """Every path, binary and variable a sync's result depends on. The same descriptors that
    place the target files name the variables that move them, so the two cannot disagree. A
    model that names its clients depends on those only; one that does not, on what tells each
    client is installed too. A project file that does not exist is watched through its nearest
    existing folder (creating it changes that folder), which keeps the list to about one path a
    workspace. projector's own descriptors change only with its version, which the fingerprint
    holds; the user's are watched."""
    user_descriptors = locations.clients_folder(environ)
    paths: set[str] = {str(model.source), trust_path(environ), user_descriptors} | {p.file for p in projects}
    paths.update(str(p) for p in descriptor_files() if str(p.parent) == user_descriptors)
    binaries = {"projector"}
    variables = set(locations.VARIABLES)
    folders = workspaces(model, projects)
    for client in (c for c in clients if model.clients is None or c.id in model.clients):
        variables.update(client.variables())
        folder = client.folder(environ)
        if folder is not None:
            paths.update(str(folder / name) for name in client.files)
        hook_file = client.hook_file(environ)
        if hook_file is not None:
            paths.add(str(hook_file))
        paths.update(str(p) for p in (expand(f, environ) for f in client.env_files) if p is not None)
        if model.clients is None:
            paths.update(str(p) for p in (expand(d, environ) for d in client.detect_paths) if p is not None)
            binaries.update(client.detect_binaries)
        for workspace in folders:
            paths.update(_watched(os.path.join(workspace, spec.path), workspace) for spec in client.project_files)
    return Dependencies(sorted(paths), sorted(binaries), sorted(variables))


def _watched(path: str, stop: str) -> str:
    """``path`` if it exists, else its nearest existing folder (not above ``stop``)."""
    while not os.path.lexists(path) and path != stop and len(path) > len(stop):
        path = os.path.dirname(path)
    return path
