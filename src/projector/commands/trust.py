"""`projector trust` and `projector untrust`: whether a workspace's .projector.yaml counts."""

from __future__ import annotations

import os

from projector.commands.common import err, load_model
from projector.core import projects
from projector.core.errors import ProjectorError, display_path
from projector.core.reading import Unreadable


def trust(folder: str | None, config: str | None) -> int:
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


def untrust(folder: str | None, config: str | None = None) -> int:
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
