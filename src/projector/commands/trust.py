"""`projector trust` and `projector untrust`: whether a workspace's .projector.yaml counts."""

from __future__ import annotations

import os

from projector.commands.common import err, load_model
from projector.core import projects
from projector.core.errors import ProjectorError, display_path
from projector.core.modeltypes import Model
from projector.core.reading import Unreadable, read_regular


def trust(folder: str | None, config: str | None) -> int:
    if folder is not None and os.path.isfile(folder):
        return _trust_layer(folder, config)
    file = projects.project_file(folder or os.getcwd())
    shown = display_path(file)
    try:
        raw = projects.read(file)
    except Unreadable as reason:
        err(f"error: {shown} is not trusted: {reason}")
        return 2
    if raw is None:
        err(f"error: {shown}: no project file here; write one (README: Project files) or give another folder")
        return 2
    try:
        loaded = load_model(config)
        data = projects.checked(raw, projects.specs(loaded), shown, projects.hook_names(loaded))
    except ProjectorError as error:
        err(f"error: {error}\nnothing was trusted")
        return 1
    projects.trust(file, data, raw, os.environ)
    print(f"trusted {shown} (sha256 {projects.digest(raw)[:12]})")
    for name, spec in sorted((data.get("providers") or {}).items()):
        print(f"  local server {name}: runs {' '.join([spec['command'], *spec.get('args', [])])}")
    for name, spec in (data.get("hooks") or {}).items():
        says = f"on {spec['event']}" + (f" ({spec['matcher']})" if spec.get("matcher") else "") + f" runs {spec['command']}" if "command" in spec else (
            "turned on" if spec.get("enabled") else "turned off")
        print(f"  hook {name}: {says}")
    mentioned = sorted(name for name in data if name not in ("providers", "hooks"))
    if mentioned:
        print(f"  settings for: {', '.join(mentioned)}")
    print("run `projector sync` (the shell hook does it at the next prompt) so every client has its entries")
    return 0


def _trust_layer(path: str, config: str | None) -> int:
    """Trust a file the model includes: the local servers and hooks it declares or sets may run while its bytes are these."""
    shown = display_path(path)
    try:
        loaded = load_model(config)
    except ProjectorError as error:
        err(f"error: {error}\nnothing was trusted")
        return 1
    real = os.path.realpath(path)
    layer = next((layer for layer in loaded.layers[:-1] if os.path.realpath(layer.path) == real), None)
    if layer is None:
        included = ", ".join(display_path(layer.path) for layer in loaded.layers[:-1]) or "none"
        err(f"error: {shown} is not a file your model includes (it includes: {included}); a project file is trusted by its folder")
        return 2
    try:
        raw = read_regular(real, 64 * 1024 * 1024) or b""
    except Unreadable as reason:
        err(f"error: {shown} is not trusted: {reason}")
        return 2
    if projects.digest(raw) != layer.sha256:
        err(f"error: {shown} changed while projector read it; nothing was trusted, try again")
        return 1
    projects.trust_layer(real, raw, os.environ)
    print(f"trusted {shown} (sha256 {layer.sha256[:12]})")
    for name in layer.local:
        provider = loaded.provider(name)
        runs = " ".join([provider.command or "", *provider.args]) if provider is not None else ""
        print(f"  local server {name}: runs {runs}" if runs.strip() else f"  settings for local server {name}")
    for name in layer.hooks:
        print(f"  hook {name}: {_hook_words(loaded, name)}")
    if not layer.local and not layer.hooks:
        print("  it declares no local server and no hook: it counted without trust")
    print("run `projector sync` (the shell hook does it at the next prompt)")
    return 0


def _hook_words(loaded: Model, name: str) -> str:
    """What hook ``name`` runs, as the model's top level or its bindings define it."""
    said = [h for h in (*loaded.hooks, *(h for b in loaded.bindings for h in b.hooks)) if h.name == name and h.command]
    if not said:
        return "turned on or off"
    return "; ".join(f"on {h.event}" + (f" ({h.matcher})" if h.matcher else "") + f" runs {h.command}" for h in said)


def untrust(folder: str | None, config: str | None = None) -> int:
    if folder is not None and os.path.isfile(folder):
        file = os.path.realpath(folder)
        if not projects.untrust(file, os.environ):
            err(f"error: {display_path(file)} is not trusted; nothing to do")
            return 1
        print(f"the local servers and hooks {display_path(file)} declares or sets no longer run")
        return 0
    file = projects.project_file(folder or os.getcwd())
    declared = [p.name for project in projects.recorded(os.environ) if project.file == file for p in project.providers]
    if not projects.untrust(file, os.environ):
        err(f"error: {display_path(file)} is not trusted; nothing to do")
        return 1
    print(f"{display_path(file)} no longer counts")
    try:
        own = [name for name in declared if load_model(config).provider(name) is None]
    except ProjectorError:
        own = declared
    if own:
        print(f"run `projector sync` (the shell hook does it at the next prompt) to remove the entries only it declared: {', '.join(own)}")
    return 0
