"""`projector explain [DIR]`: what a folder gets, and why."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from projector.commands.common import SignIn, compute, entries_in_file, err, layer_report, load_model, sign_in_states
from projector.compile import clients as client_registry
from projector.compile import engine
from projector.compile.clients import Client
from projector.compile.plan import HttpServer, StdioServer, plan
from projector.core import hooks, scope
from projector.core.errors import ProjectorError, display_path
from projector.core.locations import home
from projector.core.invocation import bridge_options
from projector.core.layers import Provenance
from projector.core.modeltypes import Binding, Model, Provider, token_words
from projector.core.projects import around, recorded

SCHEMA = 1


def run(folder: str | None, config: str | None, client: list[str] | None, as_json: bool, verbose: bool = False) -> int:
    from projector.compile.report import explain_lines

    try:
        loaded = load_model(config)
        chosen = client_registry.selected(tuple(client) if client else loaded.clients, os.environ)
        sign_ins = sign_in_states(loaded.providers)
        outcome, _ = compute(config, client, False, loaded=loaded, sign_ins=sign_ins)  # each client's file as it is, against what sync writes
    except ProjectorError as error:
        err(f"error: {error}")
        return 2
    place = folder or os.getcwd()
    missing = not os.path.isdir(place)
    if missing:  # as `bind` does: say so, and explain the folder as it would be (a clone not made yet)
        what = "is not a folder" if os.path.lexists(place) else "does not exist"
        err(f"warning: {display_path(os.path.abspath(place), home(os.environ))} {what}; explained as if it did")
    report = explain(loaded, place, chosen, os.environ, sign_ins, outcome.results)
    print(json.dumps(report, indent=2) if as_json else "\n".join(explain_lines(report, verbose)))
    return 1 if missing else 0


def explain(model: Model, folder: str, clients: list[Client], environ: Mapping[str, str], sign_ins: Mapping[str, SignIn],
            results: tuple[engine.FileResult, ...] = ()) -> dict[str, Any]:
    """``sign_ins``: the OAuth providers' sign-ins (common.sign_in_states); ``results``: a dry-run
    sync's, to show each client's entries as they are in its file."""
    folder = os.path.abspath(folder)
    canonical = scope.canonical(folder)
    shown = lambda path: display_path(path, home(environ))  # noqa: E731 - one short formatter
    # Deepest first; of two that reach one folder (a symlink made after the model was checked),
    # the one placement uses (the last by path) first, so the lines below agree with it.
    containing = sorted(
        (b for b in model.bindings if scope.contains(scope.canonical(b.path), canonical)),
        key=lambda b: len(scope.canonical(b.path)),
    )[::-1]
    every = recorded(environ)
    nearby = around(canonical, environ)
    projector_path = engine.projector_on_path(environ)
    compiled = plan(model, projector_path, bridge_options(model.source, environ), every)
    servers = dict(compiled.servers)
    no_entries = dict(compiled.no_entry)
    origin = Provenance(model, environ)
    by_client = _entry_kinds(compiled, clients)
    providers = []
    for provider in model.providers:
        if provider.local:
            providers.append(_local(model, nearby.trusted, provider.name, canonical, environ, shown, servers, origin))
            continue
        here = scope.resolve(model, provider, canonical, nearby.trusted)
        server = servers.get(provider.name)
        kbs = None if here.kbs is None else list(here.kbs)
        no_entry = no_entries.get(provider.name)
        providers.append(
            {
                "name": provider.name,
                "kind": "remote",
                "kbs": kbs,
                "why": f"bound here ({_kbs_words(kbs)}), but {no_entry}" if no_entry and here.bound else _why(here),
                "no_entry": no_entry,
                "binding": shown(here.binding.path) if here.binding else None,
                "project_file": shown(here.project.file) if here.project else None,
                "dropped": list(here.dropped),
                **_entry(server, by_client.get(provider.name, {})),
                "auth": _auth(provider, sign_ins),
                "url": server.url if isinstance(server, HttpServer) else None,
                "from": _origins(origin, provider.name, here.binding),
                "tools": _tools(model, provider.name, canonical, nearby.trusted, shown),
                # the bridge in an unbound folder asks a client that declares roots for them: the roots' KBs and tool rules apply
                "follows_roots": isinstance(server, StdioServer) and not here.bound,
            }
        )
    entries = {c.id: c.entries(compiled) for c in clients}
    own = sorted({p.name for project in every for p in project.providers} - {p.name for p in model.providers})
    providers += [_local(model, nearby.trusted, name, canonical, environ, shown, servers, origin) for name in own]
    return {
        "schema": SCHEMA,
        "folder": shown(folder),
        "canonical": canonical,
        "layers": layer_report(model, origin),
        "bindings": [_binding(model, b, origin, shown) for b in containing],
        "project_files": [shown(p.file) for p in nearby.trusted],
        "notices": list(nearby.notices),
        "providers": providers,
        "left_out": [_left_out(model, p, shown) for p in model.withheld],
        **_hooks(model, nearby.trusted, canonical, shown, origin),
        "clients": {c.id: entries[c.id][0] for c in clients},
        "files": _as_found(results, {c.id: entries[c.id][0] for c in clients}),
        "warnings": list(compiled.warnings) + [w for c in clients for w in entries[c.id][1]],
    }


def _kind(server: Any) -> str:
    return "bridge" if isinstance(server, StdioServer) else ("http" if server else "none")


def _entry_kinds(compiled: Any, clients: list[Client]) -> dict[str, dict[str, list[str]]]:
    """For each provider, the clients by the kind of entry sync writes in each ("http", "bridge",
    "none"): a client that cannot take the plan's HTTP entry gets the bridge or nothing."""
    kinds: dict[str, dict[str, list[str]]] = {}
    for client in clients:
        got = dict(client.servers(compiled)[0])
        for name, _ in compiled.servers:
            kinds.setdefault(name, {}).setdefault(_kind(got.get(name)), []).append(client.id)
    return kinds


def _entry(server: Any, by_kind: Mapping[str, list[str]]) -> dict[str, Any]:
    """``entry``: the kind of entry every client gets ("mixed" when they differ; with no client,
    the plan's); ``entries``: the clients by kind, the larger group first."""
    groups = dict(sorted(by_kind.items(), key=lambda kind: -len(kind[1])))
    entry = _kind(server) if not groups else next(iter(groups)) if len(groups) == 1 else "mixed"
    return {"entry": entry, "entries": groups}


def _auth(provider: Provider, sign_ins: Mapping[str, SignIn]) -> str:
    """How a session of ``provider`` authenticates (never the token)."""
    if provider.oauth is not None:
        return "OAuth: " + sign_ins[provider.name][1].split(": ", 1)[1]
    return f"the token in ${provider.token_env}" if provider.token_env else "none"


def _as_found(results: tuple[engine.FileResult, ...], wanted: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Each client's file: every entry projector writes or wrote there as it is in the file
    (None: not there), its state (as status says it) and what sync would write."""
    found: dict[str, Any] = {}
    for result in results:
        if result.target.is_project or result.target.kind != "servers" or result.client.id not in wanted:
            continue
        there = entries_in_file(result)
        states = dict(result.states)
        writes = wanted[result.client.id]
        names = list(dict.fromkeys([*writes, *states]))
        found[result.client.id] = {
            "file": result.shown,
            "entries": {name: {"state": states.get(name, "in-sync" if name in there else "add"), "in_file": there.get(name),
                               "sync_writes": writes.get(name)} for name in names},
        }
    return found


def _binding(model: Model, binding: Binding, origin: Provenance, shown: Any) -> dict[str, Any]:
    """A binding that contains the folder, where it came from, and for a clone of a repository binding why it matched."""
    key = origin.binding_key(binding)
    report: dict[str, Any] = {"path": shown(binding.path), "providers": [p for p, _ in binding.uses],
                              "from": origin.where(("bindings", key), key=True) if key else None, "repo": None}
    repo = model.repo(binding.repo) if binding.repo else None
    clone = next((c for c in repo.clones if c.path == binding.path), None) if repo else None
    if repo is not None and clone is not None:
        report["repo"] = {"name": repo.name, "repo": repo.repo, "remote": clone.remote,
                          "found": f"under root {shown(clone.root)}" if clone.root else "at a folder bound by path",
                          "distrust": binding.distrust}
    return report


def _origins(origin: Provenance, name: str, binding: Binding | None) -> dict[str, str]:
    """Where provider ``name``'s definition, each of its keys, and what the binding applying here says of it came from."""
    found = {"definition": where} if (where := origin.where(("providers", name), key=True)) else {}
    found.update(origin.keys(("providers", name)))
    key = origin.binding_key(binding) if binding is not None else None
    if key is not None:
        found.update({f"here: {setting}": place for setting, place in origin.keys(("bindings", key, name)).items()})
    return found


def _hooks(model: Model, trusted: tuple, folder: str, shown: Any, origin: Provenance) -> dict[str, Any]:
    """The hooks that reach ``folder``, where each was defined (the layer's file:line) and turned
    on or off, whether an untrusted layer stops it, and where they run (as the dispatcher
    decides: core.hooks)."""
    top = f"model {shown(model.source)}"
    bindings = [(scope.canonical(b.path), b.worktrees, f"binding {shown(b.path)}", b.hooks) for b in model.bindings]
    in_model = {top: ("hooks",)} | {f"binding {shown(b.path)}": ("bindings", key, "hooks")
                                    for b in model.bindings if (key := origin.binding_key(b)) is not None}
    projects = [(p.root, f"project file {shown(p.file)}", p.hooks) for p in trusted]
    here = hooks.places(bindings, projects, folder)
    applied = hooks.applying(model.hooks, top, here)
    return {
        "hooks": [
            {"name": a.hook.name, "event": a.hook.event, "matcher": a.hook.matcher, "command": a.hook.command,
             "timeout": a.hook.timeout or hooks.DEFAULT_TIMEOUT, "runs": a.hook.enabled is not False and not model.hook_blocked(a.hook.name),
             "defined": a.defined,
             "at": _hook_layer(a.defined, top, origin.where(in_model[a.defined] + (a.hook.name,), key=True)
                               if a.defined in in_model else None),
             "from": origin.where(in_model[a.defined] + (a.hook.name,), key=True) if a.defined in in_model else None,
             "blocked": model.hook_blocked(a.hook.name),
             "switched": [{"by": source, "enabled": enabled} for source, enabled in a.switched]}
            for a in applied
        ],
        "hooks_run_in": shown(hooks.workspace_root(here, folder)),
    }


def _hook_layer(defined: str, top: str, where: str | None) -> str:
    """Where a hook is defined, by the layer's file and line: the model's top level is whichever
    layer said it (a team's, say), a binding's hooks the file that binds."""
    if where is None:
        return defined
    return where if defined == top else f"{defined} ({where})"


def _local(model: Model, trusted: tuple, name: str, folder: str, environ: Mapping[str, str], shown: Any, servers: dict,
           origin: Provenance) -> dict[str, Any]:
    """A local provider in ``folder``: its workspace, what it runs, where each setting came from,
    and the names (never the values) of the variables its workspace sets."""
    from projector.runtime import launch, overlay

    plan_here = launch.resolve(model, trusted, name, folder)
    placed = _placed_binding(model, trusted, name, folder)
    report: dict[str, Any] = {
        "name": name,
        "kind": "local",
        "workspace": shown(plan_here.root) if plan_here.root else None,
        "runs": plan_here.runs,
        "why": _why_local(plan_here),
        "command": plan_here.command,
        "args": list(plan_here.args),
        "cwd": shown(plan_here.cwd),
        "sources": {key: "; ".join(_layer_of(part, key, name, placed, origin, shown) for part in source.split("; "))
                    for key, source in plan_here.sources},
        "env": {},
        "notices": [],
        "entry": "bridge" if isinstance(servers.get(name), StdioServer) else "none",
        "shared": None,  # where it runs: whether the workspace's sessions share one server, and its hosts
        "from": _origins(origin, name, placed),
        "blocked": plan_here.blocked,
        "tools": _tools(model, name, folder, trusted, shown),
    }
    if plan_here.runs:
        built = overlay.build(plan_here, environ)
        report["env"] = {_shown_source(source, shown): list(names) for source, names in built.names}
        report["notices"] = list(built.notices)
        program = overlay.program(plan_here, built.environ)
        if program is None:
            report["notices"].append(f"{plan_here.command} is not an executable here (PATH of the workspace, or from its cwd)")
        report["shared"] = _shared(plan_here, folder, program, built, environ, shown)
    return report


def _tools(model: Model, name: str, folder: str, trusted: tuple, shown: Any) -> dict[str, Any] | None:
    """The tool rule of provider ``name`` in ``folder`` and where it came from; None: every tool."""
    here = scope.tools(model, name, folder, trusted)
    if here.rule is None:
        return None
    allow = None if here.rule.allow is None else list(here.rule.allow)
    return {"allow": allow, "deny": list(here.rule.deny), "shown": here.rule.shown(), "from": _shown_source(here.source, shown)}


def _shared(plan_here: Any, folder: str, program: str | None, built: Any, environ: Mapping[str, str], shown: Any) -> dict[str, Any] | None:
    """Whether the workspace's sessions share one server here, and the hosts running for it:
    ``current`` is the one a session started now would attach to (the others serve sessions
    started before the launch changed, until they end)."""
    if not plan_here.shared:
        return None
    from projector.runtime.host import address, attach

    current = address.key(plan_here, folder, program, built.environ, built.names) if program else None
    where = address.workspace(plan_here, folder)
    running = [
        {"pid": status["server_pid"], "sessions": status["sessions"], "current": status["key"] == current}
        for status in attach.hosts(environ)
        if status["provider"] == plan_here.provider and status["workspace"] == where
    ]
    return {"workspace": shown(where), "linger": plan_here.linger, "hosts": running}


def _layer_of(source: str, key: str, name: str, binding: Binding | None, origin: Provenance, shown: Any) -> str:
    """Where a setting of local provider ``name`` came from, naming the layer's file and line
    (runtime.launch says "model" or "binding ... in" the model's own file, which a team's layer
    is not): ``~/team.yaml:9``, ``binding api (~/team.yaml:17)``."""
    if source.startswith("model "):
        return origin.where(("providers", name, key), key=True) or _shown_source(source, shown)
    if source.startswith("binding ") and binding is not None and (bound := origin.binding_key(binding)) is not None:
        where = origin.where(("bindings", bound, name, key), key=True) or origin.where(("bindings", bound), key=True)
        label = f"binding {bound}" if binding.repo else f"binding {shown(binding.path)}"
        return f"{label} ({where})" if where else _shown_source(source, shown)
    return _shown_source(source, shown)


def _shown_source(source: str, shown: Any) -> str:
    """A source ("binding /p in /m", "project file /f", "model /m", "default") with ~ paths."""
    return " ".join(shown(word) if word.startswith("/") else word for word in source.split(" "))


def _placed_binding(model: Model, trusted: tuple, name: str, folder: str) -> Binding | None:
    return scope.place(model, trusted, name, folder).binding


def _why_local(plan_here: Any) -> str:
    if not plan_here.declared:
        return "not declared here (a provider of other workspaces): no tools here"
    if plan_here.blocked:
        return f"does not run: {plan_here.blocked}"
    if not plan_here.enabled:
        return "turned off here: no tools, nothing is started"
    return "started in its workspace" if plan_here.root else "no workspace here: started with its own settings"


def _kbs_words(kbs: list[str] | None) -> str:
    return "every KB" if kbs is None else (", ".join(kbs) or "no KB")


def _left_out(model: Model, provider: Provider, shown: Any) -> dict[str, Any]:
    """A token-carrying provider left out because a layer that decides where its token goes is
    not trusted: that layer, and what to run."""
    layer = next(layer for layer in model.layers if layer.distrust and provider.name in layer.remote)
    return {"name": provider.name, "url": provider.url, "token": token_words(provider), "layer": shown(layer.path),
            "run": f"projector trust {shown(layer.path)}", "why": layer.distrust}


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
