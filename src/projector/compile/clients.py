"""Clients as data: ``clients/<id>.yaml`` descriptors, validated by ``schemas/client.schema.json``.

A descriptor says where a client keeps its file, in which format, under which key, and how an
entry is spelled (two small jinja2 templates that render JSON). Nothing here knows a client by
name: a client's quirks live in its descriptor.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from projector.compile.plan import HttpServer, Server, StdioServer
from projector.core.variables import folder_or_none


@dataclass(frozen=True)
class ProjectFile:
    path: str  # relative to a workspace root
    format: str
    servers_key: tuple[str, ...]


@dataclass(frozen=True)
class Client:
    id: str
    name: str
    format: str  # json | jsonc | toml
    dirs: tuple[str, ...]
    files: tuple[str, ...]
    create: str
    servers_key: tuple[str, ...]
    env_reference: str | None
    stdio_env: str  # inherit | listed
    templates: tuple[tuple[str, str], ...]  # (transport, jinja2 source)
    project_files: tuple[ProjectFile, ...]
    local_scopes: tuple[tuple[str, ...], ...]  # key paths with "{workspace}" in the global file
    detect_paths: tuple[str, ...]
    detect_binaries: tuple[str, ...]

    def folder(self, environ: Mapping[str, str]) -> Path | None:
        return next((p for p in (expand(d, environ) for d in self.dirs) if p is not None), None)

    def global_file(self, environ: Mapping[str, str]) -> Path | None:
        """The file this client reads its user-level servers from: the first that exists."""
        folder = self.folder(environ)
        if folder is None:
            return None
        return next((folder / f for f in self.files if (folder / f).exists()), folder / self.create)

    def detected(self, environ: Mapping[str, str], which: Callable[[str], str | None]) -> bool:
        paths = (expand(p, environ) for p in self.detect_paths)
        return any(p is not None and p.exists() for p in paths) or any(which(b) for b in self.detect_binaries)

    def render(self, server: Server) -> dict[str, Any]:
        """The entry for ``server`` in this client's dialect, as a plain (ordered) value."""
        transport = "stdio" if isinstance(server, StdioServer) else "http"
        context: dict[str, Any]
        if isinstance(server, StdioServer):
            context = {"command": server.command, "args": list(server.args), "pass_env": list(server.pass_env)}
        else:
            assert isinstance(server, HttpServer)
            context = {"url": server.url, "token_env": server.token_env}
        text = _template(self.id, transport, dict(self.templates)[transport]).render(
            env_ref=self.env_ref, env_refs=self.env_refs, **context
        )
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise RuntimeError(f"clients/{self.id}.yaml: the {transport} template renders invalid JSON: {exc}\n{text}") from None

    def local_scope_keys(self, workspace: str) -> tuple[tuple[str, ...], ...]:
        return tuple(tuple(workspace if step == "{workspace}" else step for step in s) for s in self.local_scopes)

    def env_ref(self, name: str) -> str:
        if self.env_reference is None:
            raise RuntimeError(f"clients/{self.id}.yaml: {self.name} has no way to reference a variable")
        return self.env_reference.replace("NAME", name)

    def env_refs(self, names: list[str]) -> dict[str, str]:
        return {name: self.env_ref(name) for name in names}


def expand(template: str, environ: Mapping[str, str]) -> Path | None:
    """A descriptor's folder (``~/x`` or ``$VAR/x``); None when the variable is unset or empty."""
    folder = folder_or_none(template, environ)
    return None if folder is None else Path(folder)


@cache
def _template(client_id: str, transport: str, source: str) -> Any:
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
    # jinja2's own tojson escapes <>&' for HTML; a config file wants plain JSON.
    env.filters["json"] = lambda value: json.dumps(value, ensure_ascii=False)
    return env.from_string(source)


@cache
def registry() -> dict[str, Client]:
    """Every descriptor under clients/, by id, validated (checked once per version of them)."""
    from projector.core.resources import data_dir

    files = sorted(data_dir("clients").glob("*.yaml"))
    return {data["id"]: _client(data) for data in _checked_descriptors(files)}


def _checked_descriptors(files: list[Path]) -> list[dict[str, Any]]:
    """The descriptors' data, kept while the files are unchanged (core.cache): every `projector
    sync` needs them, and YAML plus JSON Schema cost more than the sync."""
    from projector import __version__
    from projector.core.cache import kept, stat_key
    from projector.core.locations import state_folder

    cache = Path(state_folder(os.environ)) / "clients-cache.json"
    return kept(cache, [__version__, *stat_key(files)], lambda: [_validated(path) for path in files])


def _validated(path: Path) -> dict[str, Any]:
    import jsonschema
    from ruamel.yaml import YAML

    from projector.core.resources import schema

    data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    errors = sorted(jsonschema.Draft202012Validator(schema("client")).iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        where = ".".join(str(p) for p in errors[0].absolute_path)
        raise RuntimeError(f"{path}: {where}: {errors[0].message}")
    return data


def _client(data: dict[str, Any]) -> Client:
    detect = data.get("detect") or {}
    return Client(
        id=data["id"],
        name=data["name"],
        format=data["format"],
        dirs=tuple(data["global"]["dirs"]),
        files=tuple(data["global"]["files"]),
        create=data["global"].get("create", data["global"]["files"][0]),
        servers_key=tuple(data["servers_key"]),
        env_reference=data["env_reference"],
        stdio_env=data["stdio_env"],
        templates=tuple(sorted(data["templates"].items())),
        project_files=tuple(
            ProjectFile(p["path"], p["format"], tuple(p["servers_key"])) for p in data.get("project_files") or ()
        ),
        local_scopes=tuple(tuple(scope) for scope in data.get("local_scopes") or ()),
        detect_paths=tuple(detect.get("paths") or ()),
        detect_binaries=tuple(detect.get("binaries") or ()),
    )


def selected(
    ids: tuple[str, ...] | None, environ: Mapping[str, str], which: Callable[[str], str | None] | None = None
) -> list[Client]:
    """The clients named (in registry order), or those found on this machine."""
    from projector.core.locations import on_path

    clients = registry()
    if ids is not None:
        return [c for i, c in clients.items() if i in ids]
    finder = which or (lambda binary: on_path(binary, environ))
    return [c for c in clients.values() if c.detected(environ, finder)]
