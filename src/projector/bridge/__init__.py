"""``projector mcp --provider P``: the stdio server every client spawns for a bound provider.

It reads the folder it runs in (``os.getcwd()``, never ``$PWD``), resolves the deepest binding
once, and either answers the session itself with no tools (empty KB set), or proxies it to the
provider's URL with ``?kbs=<set>``, or first asks the client for its roots (unbound folder).
Stdout carries only JSON-RPC; everything else goes to stderr (and ``--log-file``).
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

USAGE = "usage: projector mcp --provider NAME [--no-kb] [--config FILE] [--log-file FILE]"


@dataclass(frozen=True)
class Options:
    provider: str
    no_kb: bool = False  # show no knowledge base: a server with no tools
    config: str | None = None  # the model file
    log_file: str | None = None  # also log to this file


def parse(argv: list[str]) -> Options:
    """Four flags, read by hand: argparse alone costs a fifth of the bridge's start-up, and
    clients start the bridge for every session."""
    values: dict[str, Any] = {}
    names = {"--provider": "provider", "--config": "config", "--log-file": "log_file"}
    rest = list(argv)
    while rest:
        flag = rest.pop(0)
        name, _, inline = flag.partition("=")
        if flag == "--no-kb":
            values["no_kb"] = True
        elif name in names and (inline or rest):
            values[names[name]] = inline or rest.pop(0)
        elif flag in ("-h", "--help"):
            raise SystemExit(USAGE)
        else:
            raise SystemExit(f"projector mcp: unexpected {flag!r}\n{USAGE}")
    if "provider" not in values:
        raise SystemExit(f"projector mcp: --provider is required\n{USAGE}")
    return Options(**values)


def main(argv: list[str]) -> None:
    try:
        options = parse(argv)
    except SystemExit as problem:
        print(problem, file=sys.stderr)
        os._exit(2)
    log = _logger(options.provider, options.log_file)

    from projector.bridge.stdio import claim_stdout, read_lines
    from projector.errors import ProjectorError

    writer = claim_stdout()
    try:
        session = _session(options, writer, log)
    except (SystemExit, ProjectorError) as failure:  # the model is missing or wrong: say where
        log(str(failure))
        os._exit(2)

    from projector.bridge.session import run

    lines: queue.Queue[Any] = queue.Queue()
    stopping = threading.Event()

    def stop(signum: int, _frame: Any) -> None:
        stopping.set()
        lines.put(None)

    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        signal.signal(getattr(signal, name), stop)
    sys.setswitchinterval(0.0005)  # hand-offs between the stdin, worker and writer threads
    read_lines(0, lines.put)
    run(session, lines, stopping)
    session.finish(drain=1.0 if stopping.is_set() else 5.0)
    os._exit(0)  # no interpreter shutdown while the stdin thread sits in a read


def _known_clients() -> tuple[str, ...]:
    from projector import clients

    return tuple(clients.registry())


def _preload_http() -> None:
    def load() -> None:
        import projector.bridge.upstream  # noqa: F401 - httpx is the slowest import of a start

    threading.Thread(target=load, daemon=True).start()


def _logger(provider: str, log_file: str | None):
    handle = open(log_file, "a", encoding="utf-8") if log_file else None  # noqa: SIM115 - lives as long as the process

    def log(message: str) -> None:
        line = f"projector mcp[{provider}]: {message}\n"
        try:
            sys.stderr.write(line)
            sys.stderr.flush()
        except OSError:
            pass
        if handle is not None:
            handle.write(line)
            handle.flush()

    return log


def _session(options: Options, writer: Any, log: Any) -> Any:
    from projector import model, scope
    from projector.bridge.session import Session
    from projector.errors import display_path
    from projector.ledger import state_dir
    from projector.plan import with_kbs

    environ = os.environ
    path = model.model_path(options.config, environ)
    loaded = model.cached(path, environ, _known_clients, state_dir(environ) / "model-cache.json")
    provider = loaded.provider(options.provider)
    if provider is None:
        raise SystemExit(f'no provider "{options.provider}" in {display_path(loaded.source)}; run `projector sync`')
    folder = os.getcwd()
    here = scope.resolve(loaded, provider, folder)
    if here.dropped:
        log(f"not mounted by the provider, left out: {', '.join(here.dropped)}")
    kbs = () if options.no_kb else here.kbs
    if kbs != () or here.binding is None:
        _preload_http()  # the session will (or may) go upstream: overlap the import with the start
    token = (environ.get(provider.token_env) or "").strip() if provider.token_env else None
    if provider.token_env and not token:
        log(f"${provider.token_env} is not set: the provider will likely refuse the session")

    def upstream_for(kbs: Any) -> Any:
        from projector.bridge.upstream import Upstream

        return Upstream(with_kbs(provider.url, kbs), token, provider.token_env, log)

    def roots_scope(paths: list[str]) -> Any:
        bound = [s for s in (scope.resolve(loaded, provider, p) for p in paths) if s.binding is not None]
        return scope.union(bound) if bound else provider.default

    shown = display_path(Path(folder))
    if kbs == ():
        where = f"the binding of {display_path(Path(here.binding.path))}" if here.binding else "its default"
        instructions = f"projector: provider {provider.name} shows no knowledge base in {shown} ({where}); no tools here."
    else:
        instructions = f"projector: provider {provider.name}; its knowledge bases follow the folders of this session."
    unbound = here.binding is None and not options.no_kb
    return Session(writer, kbs, upstream_for, roots_scope if unbound else None, instructions, log)
