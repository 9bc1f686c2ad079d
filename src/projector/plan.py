"""Model × where projector is on PATH → one client-neutral server per provider (pure).

A provider with at least one binding becomes the stdio bridge ``<projector> mcp --provider P``,
which narrows the KB set per folder at run time. Without projector on PATH (a hook with a
minimal PATH) or without bindings it becomes the plain HTTP entry, narrowed by its ``default``.
"""

from __future__ import annotations

from dataclasses import dataclass

from projector.model import KbSet, Model, Provider


@dataclass(frozen=True)
class StdioServer:
    command: str
    args: tuple[str, ...]
    pass_env: tuple[str, ...]  # variables the server needs from the client's environment


@dataclass(frozen=True)
class HttpServer:
    url: str
    token_env: str | None


Server = StdioServer | HttpServer


@dataclass(frozen=True)
class Plan:
    servers: tuple[tuple[str, Server], ...]  # (provider name, server), sorted by name
    warnings: tuple[str, ...]


def with_kbs(url: str, kbs: KbSet) -> str:
    """``url`` with ``kbs=a,b`` (commas literal), keeping the rest of its query and any fragment.

    None (all KBs) sends no parameter at all. An empty set must never reach this function:
    the server reads an empty ``kbs=`` as "all".
    """
    base, hash_mark, fragment = url.partition("#")
    head, question, query = base.partition("?")
    kept = [part for part in query.split("&") if part and not part.startswith("kbs=")] if question else []
    if kbs is not None:
        if not kbs:
            raise ValueError("an empty KB set has no URL: it must not be sent")
        kept.append("kbs=" + ",".join(kbs))
    result = head + ("?" + "&".join(kept) if kept else "")
    return result + hash_mark + fragment


def bridge_args(provider: str) -> tuple[str, ...]:
    return ("mcp", "--provider", provider)


def _direct(provider: Provider) -> HttpServer | None:
    if provider.default == ():
        return None  # an entry without kbs would widen access to every KB
    return HttpServer(url=with_kbs(provider.url, provider.default), token_env=provider.token_env)


def plan(model: Model, projector_path: str | None, config: str | None = None) -> Plan:
    """``config``: the model's path when the bridge cannot find it by itself (it is not at the
    default place; clients start the bridge without the shell's PROJECTOR_CONFIG)."""
    servers: list[tuple[str, Server]] = []
    warnings: list[str] = []
    for provider in model.providers:
        bound = bool(model.bindings_of(provider.name))
        if bound and projector_path:
            pass_env = (provider.token_env,) if provider.token_env else ()
            args = bridge_args(provider.name) + (("--config", config) if config else ())
            servers.append((provider.name, StdioServer(projector_path, args, pass_env)))
            continue
        if bound:
            warnings.append(
                f'provider "{provider.name}" has bindings but projector is not on PATH: its plain HTTP entry was '
                "written, so its bindings will not narrow the tools until a sync finds projector on PATH"
            )
        server = _direct(provider)
        if server is not None:
            servers.append((provider.name, server))
    return Plan(servers=tuple(servers), warnings=tuple(warnings))
