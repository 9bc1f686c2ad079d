"""`projector doctor`: what is wrong with projector's set-up, each with what to do."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from projector.commands.common import compute, err, load_model
from projector.compile import engine
from projector.compile.clients import Client
from projector.compile.plan import local_references
from projector.core.errors import ProjectorError, display_path
from projector.core.locations import home, on_path
from projector.core.model import Model
from projector.core.projects import recorded

SCHEMA = 1


def run(config: str | None, client: list[str] | None) -> int:
    try:
        outcome, _ = compute(config, client, False)
        loaded = load_model(config)
    except ProjectorError as error:
        err(f"error: {error}")
        return 1
    report = doctor(loaded, outcome, [r.client for r in outcome.results if not r.target.is_project and r.target.kind == "servers"], os.environ)
    for item in report["checks"]:
        print(("ok       " if item["ok"] else "PROBLEM  ") + item["message"])
    return 0 if report["healthy"] else 1


def doctor(model: Model, outcome: engine.Outcome, clients: list[Client], environ: Mapping[str, str]) -> dict[str, Any]:
    """Every check, each with ok/problem and a message a person can act on."""
    here = home(environ)
    checks: list[dict[str, Any]] = []

    def check(ok: bool, message: str) -> None:
        checks.append({"ok": ok, "message": message})

    found = engine.projector_on_path(environ)
    check(found is not None, f"projector on PATH: {found}" if found else "projector is not on PATH: bound providers get plain HTTP entries")
    for client in clients:
        path = client.global_file(environ)
        check(True, f"{client.name}: {display_path(path, here)}" + ("" if path and path.exists() else " (not there yet)"))
        for note in client.notes:
            check(True, f"{client.name}: {note}")
    for problem in outcome.problems:
        check(False, f"does not parse or cannot be read: {problem}")
    projects = recorded(environ)
    for provider in model.providers:
        if provider.token_env and not (environ.get(provider.token_env) or "").strip():
            check(False, f"${provider.token_env} (provider {provider.name}) is not set in this shell")
        if provider.local:
            for ok, message in _local_checks(model, projects, provider, environ):
                check(ok, message)
    for ok, message in _hook_checks(model, projects, environ):
        check(ok, message)
    for result in outcome.results:
        if result.target.is_project or result.target.kind != "servers":
            continue
        document_entries = _entries(result)
        reading = result.client.reading
        providers = {result.client.entry_name(n): p for n, p in outcome.providers.items()}
        for name, value in document_entries.items():
            provider = providers.get(name)
            found_command = reading.command_of(value)
            if provider is None or found_command is None or os.path.basename(found_command[0]) != "projector":
                continue
            command = found_command[0]
            if found and command != found:
                check(False, f"{result.shown}: entry {name} runs {command}, but PATH finds {found} (stale after an upgrade?): run `projector sync`")
            needed = local_references(model, projects, provider.name) if provider.local else (provider.token_env,)
            for variable in (v for v in needed if v and result.client.stdio_env != "inherit" and v not in reading.passed(value)):
                check(False, _not_passed(result.shown, result.client, variable, name))
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


SHELL_WORDS = {"cd", "exit", "exec", "export", "set", "unset", ":", ".", "source", "eval", "return", "shift", "trap", "wait", "read",
               "if", "for", "while", "case", "until", "!", "{", "(", "[[", "alias", "command", "type", "ulimit", "umask"}


def _hook_checks(model: Model, projects: tuple, environ: Mapping[str, str]) -> list[tuple[bool, str]]:
    """Hooks whose command's program is not on PATH here (nor, for a path, there): the client
    would run them and get "command not found" at every event."""
    import shlex

    places = [(None, "the model", model.hooks)] + [(b.path, f"binding {display_path(b.path)}", b.hooks) for b in model.bindings]
    places += [(p.root, f"project file {display_path(p.file)}", p.hooks) for p in projects]
    found = []
    for root, source, said in places:
        for hook in (h for h in said if h.command):
            try:
                words = [w for w in shlex.split(hook.command) if "=" not in w.partition("/")[0]]  # without VAR=value
            except ValueError:
                continue
            program = words[0] if words else ""
            if not program or program in SHELL_WORDS:
                continue
            if "/" in program:
                path = program if os.path.isabs(program) else (os.path.join(root, program) if root else None)
                if path is not None and not os.access(path, os.X_OK):
                    found.append((False, f"hook {hook.name} ({source}) runs {program}, which is not an executable file there"))
            elif on_path(program, environ) is None:
                found.append((False, f"hook {hook.name} ({source}) runs {program}, which is not on PATH here; if its env_files or "
                                     "direnv add it, the hook finds it in its workspace"))
    return found


def _entries(result: engine.FileResult) -> dict[str, Any]:
    from projector.compile import documents

    if result.before is None:
        return {}
    return documents.parse(result.target.format, result.before, result.shown).servers(result.target.key) or {}


def _not_passed(shown: str, client: Client, variable: str, entry: str) -> str:
    if not client.can_pass(variable):  # nothing a sync can write would pass it
        return (f"{shown}: {client.name} may not pass ${variable} to entry {entry}, and its file cannot reference a variable: "
                f"the bridge gets it only if {client.name} hands its own environment to the servers it starts")
    return f"{shown}: {client.name} will not pass ${variable} to entry {entry}: run `projector sync`"
