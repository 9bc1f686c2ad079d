"""``projector mcp --provider P``: the stdio server every client spawns for a bound provider.

It reads the folder it runs in (``os.getcwd()``, never ``$PWD``) and resolves its workspace
once. A remote provider's session is answered here with no tools (empty KB set), proxied to the
provider's URL with ``?kbs=<set>``, or first asks the client for its roots (unbound folder). A
local provider enabled here replaces the bridge (exec) with its command, in the workspace's
folder and environment, so the client talks to the server itself from the first byte; a shared
one (``shared: true``) hands the session to the workspace's host instead (runtime/host); where
it is disabled or not declared, the session is answered here with no tools and nothing is
started.
Stdout carries only JSON-RPC; everything else goes to stderr (and ``--log-file``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from projector.core.record import Record

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from typing import Any

USAGE = "usage: projector mcp --provider NAME [--no-kb] [--config FILE] [--state DIR] [--log-file FILE] [--check] [--show-hidden]"


class Options(Record):
    """The command line."""

    provider: str
    no_kb: bool = False  # show no knowledge base: a server with no tools
    config: str | None = None  # the model file
    state: str | None = None  # projector's state folder (the trust store), for clients that clear XDG_STATE_HOME
    log_file: str | None = None  # also log to this file
    check: bool = False  # find the model and the provider as a session would, say where, start nothing (doctor)
    show_hidden: bool = False  # tools/list keeps the tools the folder's rule hides, marked (`projector tools --all`)


def parse(argv: list[str]) -> Options:
    """A few flags, read by hand: argparse alone costs a fifth of the bridge's start-up, and
    clients start the bridge for every session."""
    values: dict[str, Any] = {}
    names = {"--provider": "provider", "--config": "config", "--state": "state", "--log-file": "log_file"}
    rest = list(argv)
    while rest:
        flag = rest.pop(0)
        name, _, inline = flag.partition("=")
        if flag in ("--no-kb", "--check", "--show-hidden"):
            values[flag[2:].replace("-", "_")] = True
        elif name in names and (inline or rest):
            values[names[name]] = inline or rest.pop(0)
        elif flag in ("-h", "--help"):
            raise SystemExit(0)
        else:
            raise SystemExit(f"projector mcp: unexpected {flag!r}\n{USAGE}")
    if "provider" not in values:
        raise SystemExit(f"projector mcp: --provider is required\n{USAGE}")
    return Options(**values)


def main(argv: list[str]) -> None:
    try:
        options = parse(argv)
    except SystemExit as problem:
        if problem.code == 0:  # --help: the usage is the answer
            print(USAGE, flush=True)
            os._exit(0)
        print(problem, file=sys.stderr)
        os._exit(2)
    log = _logger(options.provider, options.log_file)
    if options.state:  # for a client that clears the environment: trust store, caches and shared hosts are found there
        os.environ["PROJECTOR_STATE"] = options.state

    from projector.core.errors import ProjectorError

    try:
        where = _locate(options, log)
        if options.check:
            _report(where)
        if where.provider is None or where.provider.local:
            prepared = _local(options, where, log)  # execs the server where it runs here
        else:
            prepared = _remote(options, where, log)
    except (SystemExit, ProjectorError) as failure:  # the model is missing or wrong: say where
        log(str(failure))
        os._exit(2)
    _serve(prepared)


def _report(where: Any) -> None:
    """--check: the files this start found, on stdout; then exit without serving."""
    from projector.core.locations import state_folder

    print(f"model: {where.model.source}\nstate: {state_folder(os.environ)}", flush=True)
    os._exit(0)


def _serve(session_for: Any) -> None:
    """Answer the session on stdio; ``session_for``: (stdout writer, loop) -> the Session."""
    from projector.runtime.bridge.loop import Loop
    from projector.runtime.bridge.session import run
    from projector.runtime.bridge.stdio import Reader, claim_stdout

    loop = Loop()
    loop.catch_signals()
    session = session_for(claim_stdout(), loop)
    run(session, Reader(session.receive), loop)
    os._exit(0)  # nothing is buffered: skip the interpreter's teardown


def _logger(provider: str, log_file: str | None):
    handle = None
    if log_file:
        try:
            # 0600 when it is made here: no token, but the URLs, folders and errors of a person's sessions
            created = os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            handle = os.fdopen(created, "a", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115 - lives as long as the process
        except OSError as exc:
            sys.stderr.write(f"projector mcp[{provider}]: cannot write the log file {log_file} ({exc.strerror}); "
                             "logging to stderr only\n")

    def log(message: str) -> None:
        line = f"projector mcp[{provider}]: {message}\n"
        try:
            sys.stderr.write(line)
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        if handle is not None:
            try:
                handle.write(line)
                handle.flush()
            except (OSError, ValueError):
                pass

    return log


class Where(Record):
    """The session's folder and the model that applies there."""

    model: Any  # the checked model
    provider: Any  # the model's provider of that name; None: only project files declare it
    folder: str  # canonical
    projects: tuple[Any, ...]  # trusted project files around the folder


def _locate(options: Options, log: Any) -> Where:
    from projector.core import model, projects
    from projector.core.errors import display_path
    from projector.core.locations import state_dir

    def client_ids() -> tuple[str, ...]:  # asked only when the kept check does not hold: core.resources is not imported before
        from projector.core import resources

        return resources.client_ids()

    environ = os.environ
    path = model.model_path(options.config, environ)
    loaded = model.cached(path, environ, client_ids, state_dir(environ) / "model-cache.json")
    try:
        folder = os.path.realpath(os.getcwd())
    except OSError:  # the client started us in a folder that has since been removed
        raise SystemExit("the session's folder no longer exists; start the session in an existing folder") from None
    here = projects.around(folder, environ)
    for notice in here.notices:
        log(notice)
    provider = loaded.provider(options.provider)
    if provider is None and (withheld := loaded.left_out(options.provider)):
        raise SystemExit(f"provider {options.provider} is left out: {withheld}")
    if provider is None and not projects.declares_anywhere(options.provider, environ):
        raise SystemExit(f'no provider "{options.provider}" in {display_path(loaded.source)}; run `projector sync`')
    return Where(loaded, provider, folder, here.trusted)


def _session(kbs: Any, upstream_for: Any, roots_scope: Any, instructions: str, log: Any, tools: Any = None,
             show_hidden: bool = False, sign_in: Any = None) -> Any:
    """The session, once stdout is claimed for it and the loop made (see bridge.session.Session);
    ``tools``: the folder's tool rule (core.tools)."""
    from functools import partial

    from projector.runtime.bridge.session import Session

    return partial(Session, kbs=kbs, upstream_for=upstream_for, roots_scope=roots_scope, instructions=instructions, log=log,
                   tools=tools, show_hidden=show_hidden, sign_in=sign_in)


def _no_tools(why: str, log: Any) -> Any:
    """A session answered here with no tools; ``why`` is its instructions."""
    return _session((), None, None, why, log)


def _local(options: Options, where: Where, log: Any) -> Any:
    from projector.core.errors import display_path
    from projector.core.variables import unset_references
    from projector.runtime import launch, overlay

    shown = display_path(where.folder)
    plan = launch.resolve(where.model, where.projects, options.provider, where.folder)
    if not plan.declared:
        return _no_tools(f"projector: provider {plan.provider} is not declared in {shown}; no tools here.", log)
    if plan.blocked:
        log(plan.blocked)
        return _no_tools(f"projector: provider {plan.provider} does not run: {plan.blocked}; no tools here.", log)
    if not plan.enabled or options.no_kb:
        place = f"the workspace {display_path(plan.root)}" if plan.root else shown
        return _no_tools(f"projector: provider {plan.provider} is turned off in {place}; no tools here.", log)
    if not plan.command:
        raise SystemExit(f"provider {plan.provider} has no command in {shown}: give it one in the model or the project file")
    built = overlay.build(plan, os.environ)
    for notice in built.notices:
        log(notice)
    for name in unset_references(plan.env_values, built.environ):
        log(f"${name} is not set: it expands to nothing in the env of {plan.provider}")
    program = overlay.program(plan, built.environ)
    if plan.shared and program is not None:
        from projector.runtime.host import address, attach

        try:
            attach.serve(plan, where.folder, program, built.environ, built.names)  # hands the session over
        except address.Unavailable as why:
            log(f"{plan.provider} runs unshared in this session: {why}")
    if plan.tools is not None and program is not None:
        return _child(plan, program, built.environ, options, log)  # the bridge must see the messages to filter them
    _exec(plan, program, built.environ, log)
    raise AssertionError("unreachable")  # _exec replaces the process or exits


def _child(plan: Any, program: str, environ: dict[str, str], options: Options, log: Any) -> Any:
    """A session under a tool rule: the server runs as the bridge's child, its messages filtered
    by the session (bridge.child)."""
    try:
        os.chdir(plan.cwd)
    except OSError as exc:
        log(f"cannot start {plan.provider}: its folder {plan.cwd} is not usable ({exc.strerror})")
        os._exit(1)

    def upstream_for(_kbs: Any, loop: Any, deliver: Any) -> Any:
        from projector.runtime.bridge.child import Child

        try:
            return Child(loop, program, [plan.command, *plan.args], plan.cwd, environ, log, deliver)
        except OSError as exc:
            log(f"cannot start {plan.provider}: {exc.strerror} ({plan.command})")
            os._exit(126)

    return _session(None, upstream_for, None, "", log, plan.tools, options.show_hidden)


def _exec(plan: Any, program: str | None, environ: dict[str, str], log: Any) -> None:
    """Become the provider's server: its folder, its environment, the client's stdin and stdout."""
    command = plan.command
    if program is None:
        log(f"cannot start {plan.provider}: {command!r} is not an executable (PATH of its workspace, or from {plan.cwd})")
        os._exit(127)
    try:
        os.chdir(plan.cwd)
    except OSError as exc:
        log(f"cannot start {plan.provider}: its folder {plan.cwd} is not usable ({exc.strerror})")
        os._exit(1)
    import signal

    for name in ("SIGPIPE", "SIGXFSZ"):  # Python ignores these; an exec'd program must not inherit that
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execve(program, [command, *plan.args], environ)
    except OSError as exc:
        log(f"cannot start {plan.provider}: {exc.strerror} ({command})")
        os._exit(126)


def _token(variable: str | None, environ: Any) -> tuple[str | None, str | None]:
    """The bearer token from ``variable``, and what is wrong with it (naming the variable, never
    the value: a value that cannot be a header would otherwise end up quoted in an error)."""
    if not variable:
        return None, None
    token = (environ.get(variable) or "").strip()
    if not token:
        return None, f"${variable} is not set: the provider will likely refuse the session"
    if not all(" " <= character <= "~" for character in token):
        return None, (f"${variable} holds a character a header cannot carry (a line break, a control or a non-ASCII "
                      "character): set it to the token alone")
    return token, None


def _remote(options: Options, where: Where, log: Any) -> Any:
    from projector.core import scope
    from projector.core.errors import display_path

    environ = os.environ
    loaded, provider, folder = where.model, where.provider, where.folder
    renewer = sign_in = None
    if provider.oauth is not None and not provider.oauth.by_client:  # projector signs in: `projector login`
        from projector.runtime.bridge.renew import Renewer
        from projector.runtime.bridge.signing import SignIn

        machine = not provider.oauth.by_person
        renewer = Renewer(provider.name, environ, log, config=str(loaded.source), machine=machine, url=provider.url,
                          insecure=provider.insecure)
        # With no usable token the session is answered here and starts a sign-in (bridge.session):
        # a failed initialize made clients drop the server silently.
        sign_in = SignIn(renewer, log, options.log_file, person=not machine, fixed=provider.oauth.scopes)
    placed = scope.place(loaded, where.projects, provider.name, folder)  # once: the KB set and the tool rule are read from it
    here = scope.scope_at(provider, placed)
    if here.dropped:
        log(f"not mounted by the provider, left out: {', '.join(here.dropped)}")
    kbs = () if options.no_kb else here.kbs

    def upstream_for(kbs: Any, loop: Any, deliver: Any) -> Any:
        """The provider's session, opened when the client's session first needs it."""
        from projector.runtime.bridge.upstream import Settings, Upstream

        if renewer is not None:
            token, problem = renewer.current()
        else:
            token, problem = _token(provider.token_env, environ)
        if problem:
            log(problem)
        refusal = problem if token is None and environ.get(provider.token_env or "", "").strip() else None
        settings = Settings(provider.name, provider.token_env, provider.listen, provider.timeout, refusal)
        return Upstream(loop, scope.with_kbs(provider.url, kbs), token, settings, environ, log, deliver,
                        renew=renewer.renewed if renewer else None, sign_in=sign_in)

    rule = scope.tools_at(loaded, placed, provider.name).rule

    def roots_scope(paths: list[str]) -> Any:
        from projector.core import projects

        roots = [(root, projects.around(root, environ).trusted) for root in map(scope.canonical, paths)]
        return scope.over_roots(loaded, provider, roots, rule)

    shown = display_path(Path(folder))
    if kbs == ():
        if here.binding is not None:
            where_from = f"the binding of {display_path(Path(here.binding.path))}"
        else:
            where_from = f"{display_path(here.project.file)}" if here.project else "its default"
        instructions = f"projector: provider {provider.name} shows no knowledge base in {shown} ({where_from}); no tools here."
    else:
        instructions = f"projector: provider {provider.name}; its knowledge bases follow the folders of this session."
    unbound = not here.bound and not options.no_kb
    return _session(kbs, upstream_for, roots_scope if unbound else None, instructions, log, rule, options.show_hidden, sign_in)
