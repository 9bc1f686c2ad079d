"""What the bridge runs for a local provider in a folder, and where each setting came from (pure).

The provider's own definition (the model's, or the trusted project file's that declares it) is
the base; the workspace's settings are laid over it (``env`` merges by variable). ``cwd`` and
``env_files`` are taken from the workspace root, and so is a relative ``command`` (``./bin/x``:
what a person reads it against, whatever ``cwd`` says); a folder in no workspace uses the folder itself
and gets no workspace settings at all.
"""

from __future__ import annotations

import os

from projector.core.modeltypes import Env, Model, Project, Settings
from projector.core.record import Record
from projector.core.scope import Placement, place, tools_at
from projector.core.tools import ToolRule

DEFAULTS = Settings(enabled=True, args=(), cwd=".", env=(), env_files=(), direnv=False, shared=False, linger=30.0)  # cwd: the workspace root


class Launch(Record):
    """What the bridge runs for a local provider in a folder."""

    provider: str
    declared: bool  # False: no definition reaches this folder (a provider of other workspaces)
    enabled: bool
    root: str | None  # the workspace root; None: the folder is in no workspace
    command: str | None
    args: tuple[str, ...]
    cwd: str  # absolute
    env: Env  # the model's and the project file's variables, in order (values expanded at start)
    env_files: tuple[str, ...]  # absolute, in order
    direnv: bool
    sources: tuple[tuple[str, str], ...]  # (setting, where it came from), for `explain`
    shared: bool = False  # one server for the workspace's sessions (runtime/host) instead of one per session
    linger: float = 30.0  # seconds a shared server outlives its last session
    blocked: str | None = None  # why it must not run: a layer of the model that says something of it, or the clone it runs in, is not trusted
    tools: ToolRule | None = None  # the tools offered here (core.tools); None: every tool
    base: str = ""  # the workspace root, or the folder when it is in none: a relative command is taken from here

    @property
    def env_values(self) -> tuple[str, ...]:
        return tuple(value for _, value in self.env if value is not None)

    @property
    def runs(self) -> bool:
        return self.declared and self.enabled and bool(self.command) and self.blocked is None


def _definition(model: Model, placed: Placement, name: str) -> tuple[str, Settings] | None:
    """The provider's own definition that reaches this folder: the trusted project file's that
    declares it here, else the model's (a local provider)."""
    if placed.project is not None and (own := placed.project.provider(name)) is not None:
        return f"project file {placed.project.file}", own.launch()
    provider = model.provider(name)
    if provider is not None and provider.local:
        return f"model {model.source}", provider.launch()
    return None


def _workspace_layers(model: Model, placed: Placement, name: str) -> list[tuple[str, Settings]]:
    layers = []
    if placed.binding is not None and (said := placed.binding.settings(name)) is not None:
        layers.append((f"binding {placed.binding.path} in {model.source}", said))
    if placed.project is not None and (said := placed.project.settings(name)) is not None:
        layers.append((f"project file {placed.project.file}", said))
    return layers


def resolve(model: Model, projects: tuple[Project, ...], name: str, folder: str) -> Launch:
    """``folder`` canonical. ``projects``: the trusted project files."""
    placed = place(model, projects, name, folder)
    definition = _definition(model, placed, name)
    layers = [("default", DEFAULTS)] + ([definition] if definition else []) + _workspace_layers(model, placed, name)
    settings = Settings()
    sources: dict[str, str] = {}
    for source, layer in layers:
        settings = layer.over(settings)
        for key in layer.said():
            merged = key == "env" and sources.get(key, "default") != "default"  # env merges; others replace
            sources[key] = f"{sources[key]}; {source}" if merged else source
    sources.setdefault("command", "default")  # no layer names one: not declared here
    base = placed.root or folder
    return Launch(
        provider=name,
        declared=definition is not None,
        enabled=bool(settings.enabled),
        root=placed.root,
        command=settings.command,
        args=settings.args or (),
        cwd=os.path.normpath(os.path.join(base, settings.cwd)),
        env=settings.env or (),
        env_files=tuple(os.path.normpath(os.path.join(base, f)) for f in settings.env_files or ()),
        direnv=bool(settings.direnv) and placed.root is not None,
        sources=tuple(sorted(sources.items())),
        shared=bool(settings.shared),
        linger=float(settings.linger),
        blocked=model.blocked(name) or (placed.binding.distrust if placed.binding is not None else None),
        tools=tools_at(model, placed, name).rule,  # decided in core, as for a remote provider and `explain`
        base=base,
    )
