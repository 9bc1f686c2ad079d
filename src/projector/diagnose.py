"""`explain` (what a folder gets, and why) and `doctor` (what is wrong), as data.

Both are computed from the same model, plan and outcome that `diff` and `sync` use; the CLI
prints them as text or JSON.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from projector import engine, scope
from projector.clients import Client
from projector.errors import display_path
from projector.locations import on_path
from projector.model import Model, bridge_config
from projector.plan import HttpServer, StdioServer, local_references, plan
from projector.projects import around, recorded
from projector.reconcile import command_of

SCHEMA = 1


def explain(model: Model, folder: str, clients: list[Client], environ: Mapping[str, str]) -> dict[str, Any]:
    home = Path(environ.get("HOME") or Path.home())
    folder = os.path.abspath(folder)
    canonical = scope.canonical(folder)
    shown = lambda path: display_path(path, home)  # noqa: E731 - one short formatter
    containing = sorted(
        (b for b in model.bindings if scope.contains(scope.canonical(b.path), canonical)),
        key=lambda b: len(scope.canonical(b.path)),
        reverse=True,
    )
    every = recorded(environ)
    nearby = around(canonical, environ)
    compiled = plan(model, engine.projector_on_path(environ), bridge_config(model, environ), every)
    servers = dict(compiled.servers)
    providers = []
    for provider in model.providers:
        if provider.local:
            providers.append(_local(model, nearby.trusted, provider.name, canonical, environ, shown, servers))
            continue
        here = scope.resolve(model, provider, canonical, nearby.trusted)
        server = servers.get(provider.name)
        providers.append(
            {
                "name": provider.name,
                "kind": "remote",
                "kbs": None if here.kbs is None else list(here.kbs),
                "why": _why(here),
                "binding": shown(here.binding.path) if here.binding else None,
                "project_file": shown(here.project.file) if here.project else None,
                "dropped": list(here.dropped),
                "entry": "bridge" if isinstance(server, StdioServer) else ("http" if server else "none"),
                "url": server.url if isinstance(server, HttpServer) else None,
            }
        )
    own = sorted({p.name for project in every for p in project.providers} - {p.name for p in model.providers})
    providers += [_local(model, nearby.trusted, name, canonical, environ, shown, servers) for name in own]
    return {
        "schema": SCHEMA,
        "folder": shown(folder),
        "canonical": canonical,
        "bindings": [{"path": shown(b.path), "providers": [p for p, _ in b.uses]} for b in containing],
        "project_files": [shown(p.file) for p in nearby.trusted],
        "notices": list(nearby.notices),
        "providers": providers,
        "clients": {c.id: {name: c.render(server) for name, server in compiled.servers} for c in clients},
        "warnings": list(compiled.warnings),
    }


def _local(model: Model, trusted: tuple, name: str, folder: str, environ: Mapping[str, str], shown: Any, servers: dict) -> dict[str, Any]:
    """A local provider in ``folder``: its workspace, what it runs, where each setting came from,
    and the names (never the values) of the variables its workspace sets."""
    from projector import launch, overlay

    plan_here = launch.resolve(model, trusted, name, folder)
    report: dict[str, Any] = {
        "name": name,
        "kind": "local",
        "workspace": shown(plan_here.root) if plan_here.root else None,
        "runs": plan_here.runs,
        "why": _why_local(plan_here),
        "command": plan_here.command,
        "args": list(plan_here.args),
        "cwd": shown(plan_here.cwd),
        "sources": {key: _shown_source(source, shown) for key, source in plan_here.sources},
        "env": {},
        "notices": [],
        "entry": "bridge" if isinstance(servers.get(name), StdioServer) else "none",
    }
    if plan_here.runs:
        built = overlay.build(plan_here, environ)
        report["env"] = {_shown_source(source, shown): list(names) for source, names in built.names}
        report["notices"] = list(built.notices)
        if overlay.program(plan_here, built.environ) is None:
            report["notices"].append(f"{plan_here.command} is not an executable here (PATH of the workspace, or from its cwd)")
    return report


def _shown_source(source: str, shown: Any) -> str:
    """A source ("binding /p in /m", "project file /f", "model /m", "default") with ~ paths."""
    return " ".join(shown(word) if word.startswith("/") else word for word in source.split(" "))


def _why_local(plan_here: Any) -> str:
    if not plan_here.declared:
        return "not declared here (a provider of other workspaces): no tools here"
    if not plan_here.enabled:
        return "turned off here: no tools, nothing is started"
    return "started in its workspace" if plan_here.root else "no workspace here: started with its own settings"


def _why(here: scope.Scope) -> str:
    if here.bound:
        if here.kbs == () and here.dropped:
            return "bound, but the provider mounts none of the bound KBs: no tools here"
        if here.kbs == ():
            return "bound to no KB: no tools here"
        return "bound" + (" (KBs the provider does not mount left out)" if here.dropped else "")
    if here.kbs is None:
        return "no binding and no default: every KB"
    if here.kbs == ():
        return "no binding; the default is no KB: no tools here"
    return "no binding: the provider's default"


def doctor(model: Model, outcome: engine.Outcome, clients: list[Client], environ: Mapping[str, str]) -> dict[str, Any]:
    """Every check, each with ok/problem and a message a person can act on."""
    home = Path(environ.get("HOME") or Path.home())
    checks: list[dict[str, Any]] = []

    def check(ok: bool, message: str) -> None:
        checks.append({"ok": ok, "message": message})

    found = engine.projector_on_path(environ)
    check(found is not None, f"projector on PATH: {found}" if found else "projector is not on PATH: bound providers get plain HTTP entries")
    for client in clients:
        path = client.global_file(environ)
        check(True, f"{client.name}: {display_path(path, home)}" + ("" if path and path.exists() else " (not there yet)"))
    for problem in outcome.problems:
        check(False, f"does not parse or cannot be read: {problem}")
    projects = recorded(environ)
    for provider in model.providers:
        if provider.token_env and not (environ.get(provider.token_env) or "").strip():
            check(False, f"${provider.token_env} (provider {provider.name}) is not set in this shell")
        if provider.local:
            for ok, message in _local_checks(model, projects, provider, environ):
                check(ok, message)
    for result in outcome.results:
        if result.target.is_project:
            continue
        document_entries = _entries(result)
        for name, value in document_entries.items():
            provider = outcome.providers.get(name)
            found_command = command_of(value)
            if provider is None or found_command is None or os.path.basename(found_command[0]) != "projector":
                continue
            command = found_command[0]
            if found and command != found:
                check(False, f"{result.shown}: entry {name} runs {command}, but PATH finds {found} (stale after an upgrade?): run `projector sync`")
            needed = local_references(model, projects, name) if provider.local else (provider.token_env,)
            for variable in (v for v in needed if v and result.client.stdio_env == "listed" and not _passes(value, v)):
                check(False, f"{result.shown}: {result.client.name} will not pass ${variable} to entry {name}: run `projector sync`")
    for warning in outcome.warnings:
        if "shadows the global entry" in warning:
            check(False, warning)
    return {"schema": SCHEMA, "healthy": all(c["ok"] for c in checks), "checks": checks}


def _local_checks(model: Model, projects: tuple, provider: Any, environ: Mapping[str, str]) -> list[tuple[bool, str]]:
    checks = [
        (False, f"${name} (in the env of local provider {provider.name}) is not set in this shell")
        for name in local_references(model, projects, provider.name)
        if name not in environ
    ]
    command = provider.command or ""
    if "/" not in command and on_path(command, environ) is None:
        checks.append((False, f"{command} (local provider {provider.name}) is not on PATH here; if a workspace's env_files "
                              "or direnv add it, `projector explain DIR` shows whether it is found there"))
    return checks


def _entries(result: engine.FileResult) -> dict[str, Any]:
    from projector import documents

    if result.before is None:
        return {}
    return documents.parse(result.target.format, result.before, result.shown).servers(result.target.key) or {}


def _passes(value: dict[str, Any], variable: str) -> bool:
    listed = value.get("env_vars") or []
    names = {item if isinstance(item, str) else item.get("name") for item in listed if isinstance(item, (str, dict))}
    return variable in names or variable in (value.get("env") or {})
