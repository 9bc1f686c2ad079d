"""`projector doctor`: what is wrong with projector's set-up, each with what to do.

Each line is ok, a note (worth knowing, nothing broken: what the next sync will remove, the
clients left out) or a PROBLEM (exit 1). Every bridge entry is started the way its client starts
it (the client's environment rules come from its descriptor: some clear the environment) with
``--check``, which finds the model and the state folder as a session would and starts nothing.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from typing import Any

from projector.commands.common import (SignIn, compute, entries_in_file, err, load_model, sign_in_states, sign_in_warnings, store_warnings,
                                       stored_warnings)
from projector.compile import clients as client_registry
from projector.compile import engine
from projector.compile.clients import Client
from projector.compile.plan import insecure_warning, local_references
from projector.compile.report import unmanaged
from projector.core.errors import ProjectorError, display_path
from projector.core.invocation import BRIDGE
from projector.core.locations import home, on_path, state_folder
from projector.core.modeltypes import Model, clear_text_host
from projector.core.projects import recorded, withdrawn

SCHEMA = 1
LABELS = {"ok": "ok       ", "note": "note     ", "problem": "PROBLEM  "}


def run(config: str | None, client: list[str] | None, as_json: bool = False, ack: bool = False, show_all: bool = False) -> int:
    try:
        loaded = load_model(config)
        sign_ins = sign_in_states(loaded.providers)  # said by its own check, and among the warnings it leaves out
        outcome, _ = compute(config, client, False, loaded=loaded, sign_ins=sign_ins)
    except ProjectorError as error:
        if as_json:
            import json

            print(json.dumps({"schema": SCHEMA, "healthy": False, "checks": [], "errors": [str(p) for p in error.problems]}, indent=2))
        else:
            err(f"error: {error}")
        return 1
    chosen = client_registry.selected(tuple(client) if client else loaded.clients, os.environ)
    if ack:
        noted = acknowledgeable(outcome.warnings, sign_in_warnings(loaded, sign_ins))
        acknowledge(noted, os.environ)
        print(f"acknowledged {len(noted)} warning{'s' if len(noted) != 1 else ''}: doctor lists "
              f"{'them' if len(noted) != 1 else 'it'} again with --all, or once {'they change' if len(noted) != 1 else 'it changes'}")
        return 0
    report = doctor(loaded, outcome, chosen, os.environ, sign_ins, explicit=bool(client),
                    acknowledged=() if show_all else acknowledged(os.environ))
    if as_json:
        import json

        print(json.dumps(report, indent=2))
    else:
        for item in report["checks"]:
            print(LABELS[item["level"]] + item["message"])
    return 0 if report["healthy"] else 1


def doctor(model: Model, outcome: engine.Outcome, clients: list[Client], environ: Mapping[str, str], sign_ins: Mapping[str, SignIn],
           explicit: bool = False, acknowledged: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every check, each ok, a note or a problem, with a message a person can act on;
    ``sign_ins``: each OAuth provider's (common.sign_in_states), the ones ``outcome`` was computed with;
    ``acknowledged``: warnings the user has read (`doctor --ack`), counted in one note."""
    here = home(environ)
    checks: list[dict[str, Any]] = []

    def check(ok: bool, message: str, level: str | None = None) -> None:
        checks.append({"ok": ok, "level": level or ("ok" if ok else "problem"), "message": message})

    found = engine.projector_on_path(environ)
    check(found is not None, f"projector on PATH: {found}" if found else "projector is not on PATH: bound providers get plain HTTP entries")
    for client in clients:
        path = client.global_file(environ)
        check(True, f"{client.name}: {display_path(path, here)}" + ("" if path and path.exists() else " (not there yet)"))
        for note in client.notes:
            check(True, f"{client.name}: {note}")
        for ok, message in _trusted_folders(client, model, environ):
            check(True, message, None if ok else "note")
    if not explicit:
        for message in _skipped(model, clients):
            check(True, message, "note")
    for problem in outcome.problems:
        check(False, f"does not parse or cannot be read: {problem}")
    for layer in model.layers[:-1]:
        check(layer.distrust is None, layer.distrust or f"included: {display_path(layer.path, here)} (sha256 {layer.sha256[:12]})")
    for binding in model.bindings:
        if binding.distrust:
            check(True, binding.distrust, "note")  # a folder anyone could make under a root: the user decides, doctor does not urge
    projects = recorded(environ)
    setters = EnvSetters([b.path for b in model.bindings] + [p.root for p in projects])
    for provider in model.providers:
        if provider.token_env and not (environ.get(provider.token_env) or "").strip():
            unset = f"${provider.token_env} (provider {provider.name}) is not set in this shell"
            setter = setters.setting(provider.token_env)
            if setter is None:
                check(False, unset)
            else:
                check(True, f"{unset}; {display_path(setter, here)} sets it in its folder: a client started there has it", "note")
        if (host := clear_text_host(provider)) is not None:
            check(True, insecure_warning(provider, host), "note")
        if provider.local:
            for ok, message in _local_checks(model, projects, provider, environ, setters):
                check(ok, message, "note" if ok else None)
        if provider.oauth is not None:
            check(*sign_ins[provider.name])
    for ok, message in _hook_checks(model, projects, environ):
        check(ok, message)
    starts = _Starts(str(model.source), os.path.abspath(state_folder(environ)), environ)
    for result in outcome.results:
        if result.target.is_project or result.target.kind != "servers":
            continue
        document_entries = entries_in_file(result)
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
            for message in starts.problems(result, name, value):
                check(False, message)
        started = starts.started.get(result.client.id)
        if started:
            entries = f"{started} bridge entr{'y' if started == 1 else 'ies'}"
            check(True, f"{result.client.name}: {entries} started as it starts them: each finds the model and the trust store")
    signing_in = set(sign_in_warnings(model, sign_ins))  # told above, by each OAuth provider's own check
    known = [w for w in acknowledgeable(outcome.warnings, signing_in) if w in acknowledged]
    for warning in outcome.warnings:  # sync, diff and status say each once: here they are all, but the acknowledged
        if warning not in known and warning not in signing_in:
            check(not shadowing(warning), warning, None if shadowing(warning) else "note")
    if known:
        check(True, f"{len(known)} warning{'s' if len(known) != 1 else ''} acknowledged (`projector doctor --all` lists "
                    f"{'them' if len(known) != 1 else 'it'})", "note")
    for message in _pending_removals(outcome):
        check(True, message, "note")
    for client_name, names in unmanaged(outcome).items():
        check(True, f"{client_name}: {len(names)} entr{'y' if len(names) == 1 else 'ies'} projector does not manage ({', '.join(names)}): "
                    "`projector import` brings them into the model", "note")
    for file, why in withdrawn(environ):
        folder = display_path(os.path.dirname(file), here)
        if why == "missing":
            check(False, f"{display_path(file, here)} is trusted but gone: `projector untrust {folder}` forgets it")
        else:
            check(False, f"{display_path(file, here)} changed since it was trusted: its workspace ignores it (its servers have no "
                         f"tools there) until you review it and run `projector trust {folder}`")
    return {"schema": SCHEMA, "healthy": all(c["ok"] for c in checks), "checks": checks}


def acknowledgeable(warnings: tuple[str, ...], signing_in: Iterable[str]) -> list[str]:
    """The warnings `doctor --ack` may hide: not a shadowing entry (a problem), not a provider
    nobody signed in to (its own check says it until a login)."""
    told = set(signing_in)
    return [w for w in warnings if not shadowing(w) and w not in told]


def shadowing(warning: str) -> bool:
    """A project file's entry that shadows projector's global entry: a problem, never merely acknowledged."""
    return "shadows the global entry" in warning


def acknowledged_path(environ: Mapping[str, str]):  # -> Path
    from projector.core.locations import state_dir

    return state_dir(environ) / "acknowledged.json"


def acknowledged(environ: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(sorted(stored_warnings(acknowledged_path(environ))))


def acknowledge(warnings: list[str], environ: Mapping[str, str]) -> None:
    """The warnings given now are the acknowledged ones (a warning that changes is new again)."""
    store_warnings(acknowledged_path(environ), warnings)


class _Starts:
    """Bridge entries started the way their clients start them (each distinct start once)."""

    def __init__(self, model: str, state: str, environ: Mapping[str, str]):
        self.model, self.state, self.environ = model, state, environ
        self.seen: dict[tuple, tuple[int, str, str]] = {}
        self.started: dict[str, int] = {}

    def problems(self, result: engine.FileResult, name: str, value: Mapping[str, Any]) -> list[str]:
        command, args = result.client.reading.command_of(value) or ("", [])
        if [str(a) for a in args[:1]] != [BRIDGE]:
            return []
        environment = result.client.server_environment(value, self.environ)
        key = (command, tuple(map(str, args)), tuple(sorted(environment.items())))
        if key not in self.seen:
            self.seen[key] = _start(command, [str(a) for a in args], environment, str(home(self.environ)))
        code, out, error = self.seen[key]
        how = f"{result.shown}: entry {name}, started as {result.client.name} starts it,"
        if code != 0:
            last = (error.strip().splitlines() or [f"exit status {code}"])[-1].split("]: ", 1)[-1]
            return [f"{how} fails ({last}): run `projector sync`"]
        said = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
        problems = []
        if said.get("model") != self.model:
            problems.append(f"{how} reads the model {said.get('model')}, not {self.model}: run `projector sync`")
        if said.get("state") != self.state:
            problems.append(f"{how} looks for trusted project files in {said.get('state')}, not {self.state}: run `projector sync`")
        if not problems:
            self.started[result.client.id] = self.started.get(result.client.id, 0) + 1
        return problems


def _start(command: str, args: list[str], environment: dict[str, str], folder: str) -> tuple[int, str, str]:
    try:
        done = subprocess.run([command, *args, "--check"], env=environment, cwd=folder, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=30, check=False)
    except OSError as error:
        return 127, "", f"cannot start {command}: {error.strerror}"
    except subprocess.TimeoutExpired:
        return 124, "", "did not answer within 30 s"
    return done.returncode, done.stdout, done.stderr


def _trusted_folders(client: Client, model: Model, environ: Mapping[str, str]) -> list[tuple[bool, str]]:
    """For a client that turns MCP servers off in folders it does not trust: whether it trusts
    each bound folder there is (ok), or not (a note with what it does and what to do)."""
    if client.folder_trust is None:
        return []
    from projector.core import scope

    folders = [b.path for b in model.bindings if os.path.isdir(b.path)]
    if not folders:
        return [(False, f"{client.name}: {client.folder_trust.untrusted}")]
    said = []
    for folder in folders:
        shown = display_path(folder, home(environ))
        if client.trusts(scope.canonical(folder), environ):
            said.append((True, f"{client.name} trusts {shown}: its MCP servers run there"))
        else:
            said.append((False, f"{client.name} does not trust {shown}: {client.folder_trust.untrusted}"))
    return said


def _skipped(model: Model, clients: list[Client]) -> list[str]:
    """The clients projector knows but writes nothing for, and why (one line)."""
    chosen = {c.id for c in clients}
    skipped = sorted(c.name for c in client_registry.registry().values() if c.id not in chosen)
    if not skipped:
        return []
    if model.clients is not None:
        return [f"skipped, not in the model's clients: {', '.join(skipped)}"]
    return [f"skipped, not installed here (none of the folders or programs that tell it is): {', '.join(skipped)}; "
            "name one under clients: in the model to write its file anyway"]


def _pending_removals(outcome: engine.Outcome) -> list[str]:
    """What the next sync takes away: entries, and files projector created."""
    notes = []
    for result in outcome.results:
        removed = result.named("remove")
        if result.target.is_project and removed:
            notes.append(f"{result.shown}: sync will remove {', '.join(removed)} (it shadows projector's global entry); the file stays")
        elif removed:
            notes.append(f"{result.shown}: sync will remove {', '.join(removed)}")
        if result.before is not None and result.after is None:
            notes.append(f"{result.shown}: sync will delete this file (projector created it and nothing else is in it)")
    return notes


ENV_SETTERS = (".envrc", ".env")  # direnv's file, and the dotenv file env_files and direnv's dotenv read


class EnvSetters:
    """The ``.envrc`` and ``.env`` files of the bound folders and recorded workspaces (and of
    workspaces' env_files), each read once however many variables are looked for in them: a
    token kept per folder, as direnv users keep theirs, is missing from a shell elsewhere without
    anything failing where it is used."""

    def __init__(self, folders: list[str]):
        self.files = [os.path.join(folder, env_file) for folder in folders for env_file in ENV_SETTERS]
        self.texts: dict[str, str | None] = {}

    def setting(self, name: str, files: list[str] = ()) -> str | None:  # type: ignore[assignment]
        """The first of the files (then of ``files``) that sets variable ``name`` (``NAME=`` or
        ``export NAME=`` at a line's start)."""
        import re

        setting = re.compile(rf"^[ \t]*(export[ \t]+)?{re.escape(name)}=", re.MULTILINE)
        return next((file for file in self.files + list(files) if setting.search(self._text(file) or "")), None)

    def _text(self, file: str) -> str | None:
        if file not in self.texts:
            try:
                with open(file, encoding="utf-8", errors="replace") as handle:
                    self.texts[file] = handle.read(1 << 20)
            except OSError:
                self.texts[file] = None
        return self.texts[file]


def _local_checks(model: Model, projects: tuple, provider: Any, environ: Mapping[str, str], setters: EnvSetters) -> list[tuple[bool, str]]:
    env_files = [os.path.join(b.path, e) for b in model.bindings if (said := b.settings(provider.name)) is not None
                 for e in said.env_files or ()]
    checks = []
    for name in local_references(model, projects, provider.name):
        if name in environ:
            continue
        setter = setters.setting(name, env_files)
        unset = f"${name} (in the env of local provider {provider.name}) is not set in this shell"
        checks.append((True, f"{unset}; {display_path(setter)} sets it in its workspace") if setter else (False, unset))
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


def _not_passed(shown: str, client: Client, variable: str, entry: str) -> str:
    if not client.can_pass(variable):  # nothing a sync can write would pass it
        return (f"{shown}: {client.name} may not pass ${variable} to entry {entry}, and its file cannot reference a variable: "
                f"the bridge gets it only if {client.name} hands its own environment to the servers it starts")
    return f"{shown}: {client.name} will not pass ${variable} to entry {entry}: run `projector sync`"
