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

from projector.core.folders import Worktree, canonical, contains, seen_from, worktree
from projector.core.modeltypes import Binding, KbSet, Model, Project, Provider, Settings
from projector.core.record import Record
from projector.core.tools import AnyRule, ToolRule, any_of


class Placement(Record):
    """A folder's workspace for one provider."""

    root: str | None  # the workspace root (in a git worktree: the worktree's folder); None: none
    binding: Binding | None  # the model's binding that applies
    project: Project | None  # the trusted project file that applies
    settings: Settings  # what they say of the provider (the project file's laid over the binding's)


class Scope(Record):
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
            seen = seen_from(path, tree) if tree else None
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


def unbound(provider: Provider) -> KbSet:
    """The set of a folder under no binding: the provider's default, none while it is turned off."""
    return provider.default if provider.enabled else ()


def resolve(model: Model, provider: Provider, folder: str, projects: tuple[Project, ...] = ()) -> Scope:
    return scope_at(provider, place(model, projects, provider.name, canonical(folder)))


def scope_at(provider: Provider, placed: Placement) -> Scope:
    """Remote ``provider``'s KB set where ``placed`` (see ``resolve``)."""
    if placed.root is None:
        return Scope(unbound(provider), None)
    if (placed.settings.enabled if placed.settings.enabled is not None else provider.enabled) is False:
        return Scope((), placed.binding, project=placed.project)
    kbs = placed.settings.kbs if placed.settings.kbs is not None else provider.default
    if provider.kbs is None or kbs is None:
        return Scope(kbs, placed.binding, project=placed.project)
    kept = tuple(kb for kb in kbs if kb in provider.kbs)
    return Scope(kept, placed.binding, tuple(kb for kb in kbs if kb not in provider.kbs), placed.project)


class Tools(Record):
    """The tool rule of one provider in a folder, and where it came from."""

    rule: ToolRule | None  # None: every tool
    source: str  # "binding PATH", "project file FILE", "provider NAME" or "nothing"


def tools(model: Model, name: str, folder: str, projects: tuple[Project, ...] = ()) -> Tools:
    """The rule of provider ``name`` in canonical ``folder`` (see ``tools_at``)."""
    return tools_at(model, place(model, projects, name, folder), name)


def tools_at(model: Model, placed: Placement, name: str) -> Tools:
    """The rule of provider ``name`` where ``placed``: the workspace's (a project file's over its
    binding's), else the provider's own definition (the trusted project file's that declares it
    here, else the model's). The one place a folder's rule is decided: the bridge of a local
    provider (runtime.launch), a session over roots (``over_roots``), `explain` and
    `projector tools` all ask it, so a session never applies a rule `explain` does not show."""
    project = placed.project
    said = project.settings(name) if project is not None else None
    if said is not None and said.tools is not None:
        return Tools(said.tools, f"project file {project.file}")
    said = placed.binding.settings(name) if placed.binding is not None else None
    if said is not None and said.tools is not None:
        return Tools(said.tools, f"binding {placed.binding.path}")
    own = project.provider(name) if project is not None else None
    if own is not None:
        return Tools(own.tools, f"project file {project.file}" if own.tools is not None else "nothing")
    own = model.provider(name)
    if own is not None and own.tools is not None:
        return Tools(own.tools, f"provider {name}")
    return Tools(None, "nothing")


def union(scopes: list[Scope]) -> KbSet:
    """The KB sets of several folders together: all if any shows all."""
    if any(s.kbs is None for s in scopes):
        return None
    merged: list[str] = []
    for scope in scopes:
        merged += [kb for kb in scope.kbs or () if kb not in merged]
    return tuple(merged)


class Roots(Record):
    """What a session over a client's roots shows: the KB set and the tool rule."""

    kbs: KbSet
    tools: ToolRule | AnyRule | None  # None: every tool


def over_roots(model: Model, provider: Provider, roots: list[tuple[str, tuple[Project, ...]]], unbound_rule: ToolRule | None) -> Roots:
    """The KB set and tool rule of a session over ``roots`` (canonical folders, each with the
    project files trusted around it). The roots bound for the provider decide both: the union of
    their KB sets, and a tool offered when any of their rules offers it (a root whose workspace
    says no rule counts with the provider's; a root that shows no KB offers no tool, as it adds
    no KB). A root outside every workspace adds neither KBs nor tools when another root is bound;
    none bound: the provider's default set and ``unbound_rule``, as in the bridge's own folder."""
    placements = (place(model, trusted, provider.name, root) for root, trusted in roots)  # once a root: its KBs and rule
    bound = [(here, placed) for placed in placements if (here := scope_at(provider, placed)).bound]
    if not bound:
        return Roots(unbound(provider), unbound_rule)
    rules = (tools_at(model, placed, provider.name).rule for here, placed in bound if not here.empty)
    return Roots(union([here for here, _ in bound]), any_of(rules))


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
