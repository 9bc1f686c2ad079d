"""The files a sync reads and may edit, and everything its result depends on.

A target is a file and a key: a client's global file (its servers), a project file inside a
bound workspace (only those that exist: projector never creates a file inside a repository),
a client's hook file (its hook lists: projector's group per event), or the entries a client
needs in its global file before it runs those hooks (``trust``). Targets of one file are
applied one after the other to its text. ``dependencies`` lists every path and binary the
result depends on, for the fast path and the shell hook. Both look at the same folders (every
bound workspace, under both spellings, and the project files each client reads there); a
Survey looks each path up once per sync, which at a thousand bindings is most of a sync's
system calls.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from projector.compile.clients import Client, Reading, expand
from projector.core import locations
from projector.core.errors import display_path
from projector.core.keys import scope_keys
from projector.core.modeltypes import Model, Project
from projector.core.projects import trust_path
from projector.core.record import Record, replace
from projector.core.resources import descriptor_files


class TargetFile(Record):
    """One file the compiler edits: a client's global file, or a project file inside a workspace."""

    client: Client  # for a project file shared by clients: the first of them
    path: Path
    shown: str  # the path as a person reads it (~/...)
    format: str
    key: tuple[str, ...]
    desired: Mapping[str, Any] | None  # None: a project file, where entries are pruned
    workspaces: tuple[str, ...] = ()  # bound folders: per-folder scopes at or below them are pruned
    shadows: str = ""  # the clients a project file's entries shadow the global entry in
    readings: tuple[Reading, ...] = ()  # how the clients that read the file read an entry
    file_keys: tuple[str, ...] = ()  # top-level keys they write by themselves, carrying no setting
    kind: str = "servers"  # servers | hooks (a group per event in lists under key) | trust
    follows: Path | None = None  # trust: the hook file whose groups its entries are for
    # Another target's record says projector created this file (with these folders to hold it):
    # whichever target takes out the last of projector's content takes the file too.
    made: tuple[str, ...] | None = None

    @property
    def is_project(self) -> bool:
        return self.desired is None

    @property
    def ledger_key(self) -> str:
        """The ledger's name for what projector owns here: the path for servers (as ever), the
        path and key for the other kinds (one file may hold several)."""
        return str(self.path) if self.kind == "servers" else f"{self.path}#{'.'.join(self.key)}"

    def local_scope_keys(self, at: Callable[[tuple[str, ...]], Any]) -> tuple[tuple[str, ...], ...]:
        """The per-folder scopes of the client's global file (``projects["/w/sub"].mcpServers``)
        that a binding governs: every folder at or below a bound one, not only the bound folder
        itself. ``at(path)``: what the file holds at a key path."""
        bound = set(self.workspaces)
        return tuple(scope.key for scope in scope_keys(self.client.local_scopes, at) if governed(scope.folder, bound))


def governed(folder: str, bound: set[str]) -> bool:
    """Whether ``folder`` is a bound folder or below one (on path-component boundaries)."""
    path = folder.rstrip("/") or "/"
    while True:
        if path in bound:
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


class Survey:
    """The folders around the bound workspaces, as one sync sees them: each path's existence and
    each workspace's canonical path looked up once (a removal the sync makes is told with
    ``forget``)."""

    def __init__(self) -> None:
        self._exists: dict[str, bool] = {}
        self._canonical: dict[str, str] = {}
        self._workspaces: tuple[str, ...] | None = None

    def exists(self, path: str) -> bool:
        """``os.path.lexists`` of an absolute path; its folder first (once for all the paths in
        it), and nothing in a folder that is absent."""
        found = self._exists.get(path)
        if found is None:
            parent = os.path.dirname(path)
            found = (parent == path or self.exists(parent)) and os.path.lexists(path)
            self._exists[path] = found
        return found

    def forget(self, path: str) -> None:
        self._exists.pop(path, None)

    def canonical(self, path: str) -> str:
        """``os.path.realpath`` of an absolute, normalised path, its folder's resolved once for
        all the paths in it."""
        found = self._canonical.get(path)
        if found is None:
            parent, name = os.path.split(path)
            if not name:
                found = os.path.realpath(path)
            elif os.path.islink(path):
                found = os.path.realpath(path)
            else:
                found = os.path.join(self.canonical(parent), name)
            self._canonical[path] = found
        return found

    def workspaces(self, model: Model, projects: tuple[Project, ...] = ()) -> tuple[str, ...]:
        """Every bound folder, as written and as its canonical path (both spellings are in use),
        and the root of every trusted project file."""
        if self._workspaces is None:
            paths = {b.path for b in model.bindings} | {self.canonical(b.path) for b in model.bindings}
            self._workspaces = tuple(sorted(paths | {p.root for p in projects}))
        return self._workspaces


def targets(
    model: Model,
    clients: list[Client],
    environ: Mapping[str, str],
    desired: Mapping[str, Mapping[str, Any]],
    projects: tuple[Project, ...] = (),
    hooks: Mapping[str, Mapping[str, Any]] | None = None,
    survey: Survey | None = None,
) -> list[TargetFile]:
    """``desired``: each client's servers; ``hooks``: each client's hook groups (None: hook
    files are not looked at)."""
    survey = survey or Survey()
    home = locations.home(environ)
    found: list[TargetFile] = []
    folders = survey.workspaces(model, projects)
    for client in clients:
        path = client.global_file(environ)
        assert path is not None  # every descriptor ends its folder list with one under ~
        bound = folders if client.local_scopes else ()
        found.append(TargetFile(client, path, display_path(path, home), client.format, client.servers_key, desired[client.id], bound,
                                client.name, (client.reading,), client.file_keys))
    found += _hook_targets(clients, environ, hooks) if hooks is not None else []
    project: dict[str, TargetFile] = {}
    for workspace in (w for w in folders if survey.exists(w)):  # nothing inside a folder that is not there
        for client in clients:
            for spec in client.project_files:
                name = os.path.join(workspace, spec.path)  # strings: most of these do not exist
                if name in project:
                    known = project[name]
                    project[name] = replace(known, shadows=f"{known.shadows} and {client.name}", readings=known.readings + (client.reading,),
                                            file_keys=tuple(dict.fromkeys(known.file_keys + client.file_keys)))
                elif survey.exists(name):  # projector never creates a file inside a workspace
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


class Dependencies(Record):
    """What a sync's result depends on, for the fast path and the shell hook."""

    files: tuple[str, ...]  # whose bytes matter: the model, the trust store, the clients' files and descriptors
    project_files: tuple[str, ...]  # a workspace's project files, each by its own path (present or not)
    present: tuple[str, ...]  # whose presence alone matters: what tells that a client is installed
    binaries: tuple[str, ...]  # looked up on PATH
    variables: tuple[str, ...]  # projector's own, and those that move a client's files (from its descriptor)


def dependencies(model: Model, clients: list[Client], environ: Mapping[str, str], projects: tuple[Project, ...] = (),
                 survey: Survey | None = None) -> Dependencies:
    """Every path, binary and variable a sync's result depends on. The same descriptors that
    place the target files name the variables that move them, so the two cannot disagree. A
    model that names its clients depends on those only; one that does not, on what tells each
    client is installed too (its presence, not what happens inside it). A project file counts by
    its own path, never through its folder: a file created beside it changes nothing. Every
    layer of the model counts, and what else its check depended on (core.modeltypes.Model.watched:
    optional includes, the folders of include globs, where clones of repository bindings are
    found). projector's own descriptors change only with its version, which the fingerprint
    holds; the user's are watched."""
    survey = survey or Survey()
    user_descriptors = locations.clients_folder(environ)
    paths: set[str] = {str(model.source), trust_path(environ), user_descriptors} | {p.file for p in projects}
    paths.update(layer.path for layer in model.layers)  # every file the model includes; a `git pull` there is a change
    paths.update(model.watched)  # optional includes, globs' folders, where clones of repository bindings are found
    paths.update(str(p) for p in descriptor_files() if str(p.parent) == user_descriptors)
    project: set[str] = set()
    present: set[str] = set()
    binaries = {"projector"}
    variables = set(locations.VARIABLES) | set(model.variables)
    folders = survey.workspaces(model, projects)
    for client in (c for c in clients if model.clients is None or c.id in model.clients):
        variables.update(client.variables())
        paths.update(str(p) for p in client.candidate_files(environ))
        hook_file = client.hook_file(environ)
        if hook_file is not None:
            paths.add(str(hook_file))
        paths.update(str(p) for p in (expand(f, environ) for f in client.env_files) if p is not None)
        if model.clients is None:
            present.update(str(p) for p in (expand(d, environ) for d in client.detect_paths) if p is not None)
            binaries.update(client.detect_binaries)
        project.update(os.path.join(workspace, spec.path) for workspace in folders for spec in client.project_files)
    return Dependencies(tuple(sorted(paths)), tuple(sorted(project - paths)), tuple(sorted(present - paths)), tuple(sorted(binaries)),
                        tuple(sorted(variables)))
