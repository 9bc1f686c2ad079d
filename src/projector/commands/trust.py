"""`projector trust` and `projector untrust`: whether a workspace's .projector.yaml counts."""

from __future__ import annotations

import os

from projector.commands.common import err, load_model
from projector.core import projects
from projector.core.errors import ProjectorError, display_path
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
        data = projects.checked(raw, projects.specs(load_model(config)), shown)
    except ProjectorError as error:
        err(f"error: {error}\nnothing was trusted")
        return 1
    projects.trust(file, data, raw, os.environ)
    print(f"trusted {shown} (sha256 {projects.digest(raw)[:12]})")
    for name, spec in sorted((data.get("providers") or {}).items()):
        print(f"  local server {name}: runs {' '.join([spec['command'], *spec.get('args', [])])}")
    mentioned = sorted(name for name in data if name != "providers")
    if mentioned:
        print(f"  settings for: {', '.join(mentioned)}")
    print("run `projector sync` (the shell hook does it at the next prompt) so every client has its entries")
    return 0


def _trust_layer(path: str, config: str | None) -> int:
    """Trust a file the model includes: the local servers it declares or sets may run while its bytes are these."""
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
    if not layer.local:
        print("  it declares no local server: it counted without trust")
    print("run `projector sync` (the shell hook does it at the next prompt)")
    return 0


def untrust(folder: str | None) -> int:
    if folder is not None and os.path.isfile(folder):
        file = os.path.realpath(folder)
        if not projects.untrust(file, os.environ):
            err(f"error: {display_path(file)} is not trusted; nothing to do")
            return 1
        print(f"the local servers {display_path(file)} declares or sets no longer run")
        return 0
    file = projects.project_file(folder or os.getcwd())
    if not projects.untrust(file, os.environ):
        err(f"error: {display_path(file)} is not trusted; nothing to do")
        return 1
    print(f"{display_path(file)} no longer counts; run `projector sync` to remove entries only it declared")
    return 0
