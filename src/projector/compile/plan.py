"""Model × where projector is on PATH → one client-neutral server per provider (pure).

A remote provider with at least one binding becomes the stdio bridge ``<projector> mcp
--provider P``, which narrows the KB set per folder at run time. Without projector on PATH (a
hook with a minimal PATH) or without bindings it becomes the plain HTTP entry, narrowed by its
``default``. A local provider, and one a trusted project file declares, is always the bridge:
it starts the server in the session's workspace with that workspace's environment, and clients
disagree on ``cwd`` and on how ``env`` values are spelled, so no client gets them written out.

A client that cannot take a provider's HTTP entry (``for_client``) gets the bridge instead,
which proxies an unbound provider to its URL with the default set; a provider that signs in
with OAuth cannot go through the bridge (it does not speak OAuth yet), so such a client gets
no entry for it, and a bound one keeps its HTTP entry everywhere.
"""

from __future__ import annotations

from collections.abc import Callable

from projector.core import hooks
from projector.core.invocation import bridge_args, dispatch_args
from projector.core.modeltypes import Model, Project, Provider, clear_text_host, token_words
from projector.core.record import Record, replace
from projector.core.scope import with_kbs
from projector.core.tools import ToolRule
from projector.core.variables import references


class StdioServer(Record):
    """An entry that starts a command (the bridge, or a local server)."""

    command: str
    args: tuple[str, ...]
    pass_env: tuple[str, ...]  # variables the server needs from the client's environment
    # Variables to pass only where the client would drop them and leaves an unset one unset
    # (clients/*.yaml passes_unset): what a sign-in the bridge starts reads (a display, $BROWSER).
    sign_in_env: tuple[str, ...] = ()


class HttpServer(Record):
    """An entry the client reaches over HTTP itself."""

    url: str
    token_env: str | None
    tools: ToolRule | None = None  # the provider's tool rule: the client's own filter must say it, or the bridge stands in
    chosen_by: str | None = None  # a layer nobody trusted that chose this URL (Model.urls_chosen): see for_client


Server = StdioServer | HttpServer


class Plan(Record):
    """The entry each provider gets, whatever the client."""

    servers: tuple[tuple[str, Server], ...]  # (provider name, server), sorted by name
    warnings: tuple[str, ...]
    # For each provider served over HTTP above: the bridge that can stand in for it, or why none can.
    bridges: tuple[tuple[str, StdioServer | str], ...] = ()
    # Each remote provider no client gets an entry for, and why (explain says it).
    no_entry: tuple[tuple[str, str], ...] = ()


def _direct(provider: Provider) -> HttpServer | None:
    if provider.default == () or not provider.enabled:
        return None  # an entry without kbs would widen access to every KB; one turned off has none
    return HttpServer(url=with_kbs(provider.url, provider.default), token_env=provider.token_env, tools=provider.tools)


def local_references(model: Model, projects: tuple[Project, ...], name: str) -> tuple[str, ...]:
    """Variables a local provider's ``env`` values refer to (in the model and in project files):
    clients that pass a stdio server only listed variables must pass these to the bridge."""
    definitions = [model.provider(name)] + [project.provider(name) for project in projects]
    envs = [d.env for d in definitions if d is not None]
    said = [b.settings(name) for b in model.bindings_of(name)] + [dict(r.uses).get(name) for r in model.repos]
    envs += [s.env for s in said + [p.settings(name) for p in projects] if s and s.env]
    return references([value for env in envs for _, value in env if value is not None])


def plan(model: Model, projector_path: str | None, options: tuple[str, ...] = (), projects: tuple[Project, ...] = ()) -> Plan:
    """``options``: what the bridge must be told to find the model and the state folder when a
    client starts it with a cleared environment (core.invocation.bridge_options).
    ``projects``: the trusted project files (what they declare and what they bind)."""
    servers: list[tuple[str, Server]] = []
    warnings: list[str] = [layer.distrust for layer in model.layers if layer.distrust]
    args_for = lambda name: bridge_args(name, options)  # noqa: E731
    declared = {p.name for project in projects for p in project.providers if model.provider(p.name) is None}
    for name in sorted(declared | {p.name for p in model.providers if p.local}):
        if projector_path:
            servers.append((name, StdioServer(projector_path, args_for(name), local_references(model, projects, name))))
        else:
            warnings.append(f'local provider "{name}" runs through projector, which is not on PATH: no entry was written for it')
    mentioned = {name for project in projects for name, _ in project.uses}
    bridges: list[tuple[str, StdioServer | str]] = []
    no_entry: list[tuple[str, str]] = []
    for provider in (p for p in model.providers if not p.local):
        bound = model.bound(provider.name) or provider.name in mentioned
        if not provider.enabled and not _turned_on(model, projects, provider.name):
            no_entry.append((provider.name, "it is turned off, and no binding turns it on"))
            continue
        if (host := clear_text_host(provider)) is not None:
            warnings.append(insecure_warning(provider, host))
        by_client = provider.oauth is not None and provider.oauth.by_client
        signs_in = provider.oauth is not None and not by_client  # one sign-in (projector login) for every client: the bridge
        pass_env = (provider.token_env,) if provider.token_env else ()
        sign_in_env: tuple[str, ...] = ()
        if signs_in and provider.oauth is not None:
            pass_env += provider.oauth.secret_variables()
            sign_in_env = provider.oauth.environment()
        bridge: StdioServer | str = (StdioServer(projector_path, args_for(provider.name), pass_env, sign_in_env) if projector_path
                                     else "projector is not on PATH")
        if by_client:
            bridge = "each client signs itself in (oauth: client)"
        if (bound or signs_in) and isinstance(bridge, StdioServer):
            servers.append((provider.name, bridge))
            continue
        server = _direct(provider)
        if server is None:
            why = _no_entry(provider, bound, signs_in, str(bridge))
            no_entry.append((provider.name, why))
            if bound or signs_in:  # the bridge was wanted, and nothing stands in for it
                warnings.append(f'provider "{provider.name}" gets no entry: {why}')
            continue
        if bound:
            warnings.append(
                f'provider "{provider.name}" has bindings but {bridge}: its plain HTTP entry was written, so its '
                "bindings will not narrow the tools" + ("" if by_client else " until a sync finds projector on PATH")
            )
        elif signs_in:
            warnings.append(f'provider "{provider.name}" signs in through projector, which is not on PATH: its plain HTTP entry '
                            "was written (each client signs itself in) until a sync finds projector on PATH")
        chosen_by = dict(model.urls_chosen).get(provider.name)
        servers.append((provider.name, replace(server, chosen_by=chosen_by) if chosen_by else server))
        bridges.append((provider.name, bridge))
    return Plan(servers=tuple(sorted(servers, key=lambda s: s[0])), warnings=tuple(warnings), bridges=tuple(bridges),
                no_entry=tuple(no_entry))


def _no_entry(provider: Provider, bound: bool, signs_in: bool, bridge: str) -> str:
    """Why remote ``provider`` gets no entry in any client: its bridge was wanted (it is bound, or
    projector signs in to it) and cannot be written (``bridge`` says why), and its plain HTTP
    entry would show no KB or it is turned off (a binding turns it on)."""
    plain = "its default shows no KB" if provider.default == () else "it is turned off"
    if not (bound or signs_in):
        return plain
    does = "narrows it per folder" if bound else "signs in for it"
    until = "" if provider.oauth is not None and provider.oauth.by_client else " until a sync finds projector on PATH"
    return f"{bridge}, so no bridge {does}, and {plain}, so no plain HTTP entry stands in: no tools here{until}"


def insecure_warning(provider: Provider, host: str) -> str:
    """What to say of a provider whose token goes over plain HTTP to another machine (it says insecure: true)."""
    return (f'provider "{provider.name}" sends {token_words(provider)} in clear over http:// to {host} (it says insecure: true): '
            "anyone on the way can read it; use https:// when the server offers it")


def _turned_on(model: Model, projects: tuple[Project, ...], name: str) -> bool:
    """Whether a binding, a repository binding or a project file turns provider ``name`` on."""
    said = [b.settings(name) for b in model.bindings] + [dict(r.uses).get(name) for r in model.repos] + [p.settings(name) for p in projects]
    return any(s is not None and s.enabled for s in said)


def for_client(compiled: Plan, remote: str, client: str, filters: Callable[[ToolRule], object | None] = lambda rule: None,
               tokens_by_name: bool = False) -> tuple[tuple[tuple[str, Server], ...], tuple[str, ...]]:
    """The servers of a client that takes remote entries with a token reference (``token``),
    only without a token (``no-token``: it cannot reference a variable in a header), or none
    (``none``), and whose own tool filter can say a rule when ``filters(rule)`` is not None: an
    HTTP server it cannot take becomes the bridge, or no entry with a warning.
    ``tokens_by_name``: the client keeps the OAuth tokens it signed in with by server name and
    sends them to whatever URL the entry of that name has; it takes no HTTP entry whose URL a
    layer nobody trusted chose, which could be a name the user signed in to there (the bridge
    it starts gets no token of its)."""
    bridges = dict(compiled.bridges)
    servers: list[tuple[str, Server]] = []
    warnings: list[str] = []
    for name, server in compiled.servers:
        why = _refused(server, remote, filters, tokens_by_name) if isinstance(server, HttpServer) else None
        bridge = bridges.get(name)
        if why is None:
            servers.append((name, server))
        elif isinstance(bridge, StdioServer):
            servers.append((name, bridge))
        else:
            warnings.append(f'{client} gets no entry for provider "{name}": {why}, and the bridge cannot stand in: {bridge}')
    return tuple(servers), tuple(warnings)


def _refused(server: HttpServer, remote: str, filters: Callable[[ToolRule], object | None], tokens_by_name: bool = False) -> str | None:
    """Why a client cannot take ``server`` as its HTTP entry; None: it can."""
    if not (remote == "token" or (remote == "no-token" and server.token_env is None)):
        return "it cannot take its HTTP entry"
    if server.tools is not None and filters(server.tools) is None:
        return "its own tool filter cannot say the provider's tool rule"
    if tokens_by_name and server.chosen_by:
        return (f"it would send an OAuth token it keeps for a server of that name to the URL {server.chosen_by} chose, "
                f"and that file is not trusted (review it, then run `projector trust {server.chosen_by}`)")
    return None


def hook_events(model: Model, projects: tuple[Project, ...] = ()) -> set[str]:
    """The events some workspace has a hook for: each gets one dispatcher entry per client."""
    return hooks.events_used(model.hooks, [b.hooks for b in model.bindings] + [p.hooks for p in projects])


def dispatch_command(projector_path: str, event: str, options: tuple[str, ...], block: str) -> str:
    """The dispatcher's shell command line for ``event`` (clients run hook commands through a shell)."""
    import shlex

    return shlex.join([projector_path, *dispatch_args(event, options, block)])
