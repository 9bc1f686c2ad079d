"""Where a folder stands for one provider: its workspace, and what applies there.

A folder's workspace for a provider is the deepest place that says something about that
provider and contains the folder (on path-component boundaries: ``/w/a`` does not contain
``/w/ab``): a binding of the model, a binding with ``worktrees: true`` seen through a git
worktree of its repository, or a trusted project file. Paths are canonical (realpath), so a
symlink to a bound folder is that workspace. A project file at the same folder as a binding is
laid over it. A folder in no workspace gets the provider's own definition (and, for a remote
provider, its ``default`` KB set).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from projector.core.model import Binding, KbSet, Model, Provider, Settings
from projector.core.projects import Project
from projector.core.reading import Unreadable, read_regular


@dataclass(frozen=True)
class Placement:
    """A folder's workspace for one provider."""

    root: str | None  # the workspace root (in a git worktree: the worktree's folder); None: none
    binding: Binding | None  # the model's binding that applies
    project: Project | None  # the trusted project file that applies
    settings: Settings  # what they say of the provider (the project file's laid over the binding's)


@dataclass(frozen=True)
class Scope:
    """A remote provider's KB set in a folder, and where it came from."""

    kbs: KbSet  # None: every KB; (): none
    binding: Binding | None  # the binding it came from; None: a project file or the default
    dropped: tuple[str, ...] = ()  # bound KBs the provider does not mount
    project: Project | None = None

    @property
    def empty(self) -> bool:
        return self.kbs == ()

    @property
    def bound(self) -> bool:
        return self.binding is not None or self.project is not None


UNBOUND = Placement(None, None, None, Settings())


def canonical(path: str) -> str:
    return os.path.realpath(path)


def contains(folder: str, path: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


# --------------------------------------------------------------------------- git worktrees


@dataclass(frozen=True)
class Worktree:
    """A linked git worktree and its main worktree."""

    root: str  # the linked worktree's top folder
    main: str  # the repository's main worktree


def worktree(folder: str) -> Worktree | None:
    """The linked git worktree ``folder`` is in, read from git's own files (no git process):
    its ``.git`` file names the worktree's git dir, whose ``commondir`` is the repository's."""
    path = folder
    while True:
        dot_git = os.path.join(path, ".git")
        if os.path.isdir(dot_git):
            return None  # a main worktree (or a plain repository): bindings apply directly
        if os.path.isfile(dot_git):
            return _linked(path, dot_git)
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def _linked(root: str, dot_git: str) -> Worktree | None:
    """The worktree at ``root``, if its repository lists it back: anyone can write a ``.git`` file
    and a git dir whose ``commondir`` names a bound repository, so, as git does, the git dir must
    be the repository's own ``worktrees/<name>``, and its ``gitdir`` must name this ``.git``."""
    try:
        pointer = _first_line(dot_git)
        if not pointer.startswith("gitdir:"):
            return None
        git_dir = canonical(os.path.join(root, pointer[len("gitdir:") :].strip()))
        common = canonical(os.path.join(git_dir, _first_line(os.path.join(git_dir, "commondir"))))
        listed = canonical(os.path.join(git_dir, _first_line(os.path.join(git_dir, "gitdir"))))
    except (Unreadable, UnicodeDecodeError, ValueError):
        return None  # a submodule's .git file has no commondir: not a worktree
    if os.path.dirname(git_dir) != os.path.join(common, "worktrees") or listed != canonical(dot_git):
        return None  # not a worktree the repository knows of at this place
    if os.path.basename(common) != ".git":
        return None  # a bare repository has no main worktree to carry bindings
    return Worktree(root=root, main=os.path.dirname(common))


def _first_line(path: str) -> str:
    """The first line of one of git's small files (the folder may be anyone's: read with care)."""
    raw = read_regular(path, 4096)
    if raw is None:
        raise Unreadable("absent")
    return raw.decode("utf-8").partition("\n")[0].strip()


def _seen_from(binding_path: str, tree: Worktree) -> str | None:
    """Where a binding of the main worktree stands in the linked worktree ``tree``."""
    if contains(tree.main, binding_path):
        return tree.root + binding_path[len(tree.main) :]
    if contains(binding_path, tree.main):
        return tree.root  # a binding above the repository: the worktree as a whole
    return None


# --------------------------------------------------------------------------- placement


def place(model: Model, projects: tuple[Project, ...], name: str, folder: str) -> Placement:
    """The workspace of canonical ``folder`` for provider ``name``, and what applies there."""
    found: list[tuple[int, int, str, Binding | Project]] = []  # (depth, rank, root, source)
    tree: Worktree | None | bool = False  # looked up once, only if a binding asks for it
    for binding in model.bindings_of(name):
        path = canonical(binding.path)
        if contains(path, folder):
            found.append((len(path), 1, path, binding))
        elif binding.worktrees:
            if tree is False:
                tree = worktree(folder)
            seen = _seen_from(path, tree) if tree else None
            if seen is not None and contains(seen, folder):
                found.append((len(seen), 0, seen, binding))
    for project in projects:
        if project.mentions(name) and contains(project.root, folder):
            found.append((len(project.root), 2, project.root, project))
    if not found:
        return UNBOUND
    found.sort(key=lambda item: item[:2])
    depth, _, root, _ = found[-1]
    here = [source for d, _, _, source in found if d == depth]
    binding = next((s for s in reversed(here) if isinstance(s, Binding)), None)
    project = next((s for s in here if isinstance(s, Project)), None)
    settings = Settings()
    if binding is not None:
        settings = binding.settings(name) or settings
    if project is not None:
        settings = (project.settings(name) or Settings()).over(settings)
    return Placement(root, binding, project, settings)


# --------------------------------------------------------------------------- remote: the KB set


def with_kbs(url: str, kbs: KbSet) -> str:
    """``url`` with ``kbs=a,b`` (commas literal), keeping the rest of its query and any fragment.

    None (all KBs) sends no parameter at all. An empty set must never reach this function:
    the server reads an empty ``kbs=`` as "all".
    """
    base, hash_mark, fragment = url.partition("#")
    head, question, query = base.partition("?")
    kept = [part for part in query.split("&") if part and not _names_kbs(part)] if question else []
    if kbs is not None:
        if not kbs:
            raise ValueError("an empty KB set has no URL: it must not be sent")
        kept.append("kbs=" + ",".join(kbs))
    result = head + ("?" + "&".join(kept) if kept else "")
    return result + hash_mark + fragment


def kbs_in_url(url: str) -> str | None:
    """The ``kbs`` parameter ``url`` itself carries (as written), or None. It is projector's to
    set per folder: one in the model's URL would be dropped (every KB shown) or contradicted."""
    query = url.partition("#")[0].partition("?")[2]
    return next((part for part in query.split("&") if _names_kbs(part)), None)


def _names_kbs(part: str) -> bool:
    """Whether a query part sets ``kbs``, as a server decodes it (``kb%73=``, ``KBS=``, ``kbs``)."""
    name = part.partition("=")[0]
    if "%" in name or "+" in name:
        from urllib.parse import unquote_plus

        name = unquote_plus(name)
    return name.strip().lower() == "kbs"


def resolve(model: Model, provider: Provider, folder: str, projects: tuple[Project, ...] = ()) -> Scope:
    placed = place(model, projects, provider.name, canonical(folder))
    if placed.root is None:
        return Scope(provider.default, None)
    if placed.settings.enabled is False:
        return Scope((), placed.binding, project=placed.project)
    kbs = placed.settings.kbs if placed.settings.kbs is not None else provider.default
    if provider.kbs is None or kbs is None:
        return Scope(kbs, placed.binding, project=placed.project)
    kept = tuple(kb for kb in kbs if kb in provider.kbs)
    return Scope(kept, placed.binding, tuple(kb for kb in kbs if kb not in provider.kbs), placed.project)


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
