"""`projector tools [DIR] [--provider P] [--all]`: the tools a folder is offered, as a client
there sees them.

Each provider is asked the way a client in DIR asks it: through the bridge, started as
``projector mcp --provider P`` with DIR as its folder, over stdio (initialize, then every page
of tools/list). So what it lists is what the folder's rule lets through, whatever the client's
own filter would add. ``--all`` asks the bridge to keep the hidden tools, marked. ``--root`` (any
number) makes it a client that declares those roots, as an editor with several folders does: in
an unbound folder a remote provider follows the roots (core.scope.over_roots).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from projector.commands.common import err, load_model
from projector.core import scope
from projector.core.errors import ProjectorError, display_path
from projector.core.invocation import bridge_args, bridge_options
from projector.core.projects import around
from projector.runtime.toolfilter import HIDDEN

SCHEMA = 1
WAIT = 30.0  # seconds a provider has to answer each request


class Unanswered(Exception):
    """The bridge ended, or did not answer in time."""


def run(folder: str | None, provider: str | None, config: str | None, show_all: bool, as_json: bool,
        roots: tuple[str, ...] = ()) -> int:
    try:
        loaded = load_model(config)
    except ProjectorError as error:
        err(f"error: {error}")
        return 2
    folder = os.path.abspath(folder or os.getcwd())
    if not os.path.isdir(folder):
        err(f"error: {folder} is not a folder")
        return 2
    trusted = around(scope.canonical(folder), os.environ).trusted
    names = [p.name for p in loaded.providers] + sorted({p.name for project in trusted for p in project.providers} - {p.name for p in loaded.providers})
    if provider is not None and provider not in names:
        err(f'error: no provider "{provider}" in {display_path(loaded.source)} (providers: {", ".join(names) or "none"})')
        return 2
    roots = tuple(os.path.abspath(root) for root in roots)
    if missing := [root for root in roots if not os.path.isdir(root)]:
        err(f"error: a root is not a folder: {', '.join(missing)}")
        return 2
    options = bridge_options(loaded.source, os.environ)
    report = []
    for name in [provider] if provider else names:
        rule, source = _rule(loaded, name, scope.canonical(folder), trusted, roots)
        entry: dict[str, Any] = {"provider": name, "rule": rule.shown() if rule else None, "from": _shown(source)}
        try:
            entry["tools"] = listed([*_projector(), *bridge_args(name, options), *(["--show-hidden"] if show_all else [])], folder, roots)
        except Unanswered as why:
            entry["error"] = str(why)
        report.append(entry)
    if as_json:
        print(json.dumps({"schema": SCHEMA, "folder": folder, "providers": report}, indent=2))
    else:
        print("\n".join(lines(report, show_all)))
    return 1 if any("error" in entry for entry in report) else 0


def _rule(loaded: Any, name: str, folder: str, trusted: tuple[Any, ...], roots: tuple[str, ...]) -> tuple[Any, str]:
    """The rule the bridge applies for provider ``name`` in ``folder`` to a client declaring
    ``roots``, and where it came from: the roots' (a remote provider in an unbound folder), else
    the folder's."""
    here = scope.tools(loaded, name, folder, trusted)
    provider = loaded.provider(name)
    if not roots or provider is None or provider.local or scope.resolve(loaded, provider, folder, trusted).bound:
        return here.rule, here.source
    found = scope.over_roots(loaded, provider, [(root, around(root, os.environ).trusted) for root in map(scope.canonical, roots)], here.rule)
    return found.tools, "roots " + ", ".join(roots)


def lines(report: list[dict[str, Any]], show_all: bool) -> list[str]:
    out = []
    for entry in report:
        rule = f" — rule {entry['rule']} from {entry['from']}" if entry["rule"] else " — every tool (no rule)"
        if "error" in entry:
            out.append(f"{entry['provider']}: cannot list its tools: {entry['error']}")
            continue
        offered = [t for t in entry["tools"] if not t["hidden"]]
        out.append(f"{entry['provider']}: {len(offered)} tool{'s' if len(offered) != 1 else ''} offered{rule}")
        for tool in entry["tools"]:
            if tool["hidden"] and show_all:
                out.append(f"  {tool['name']}  (hidden)")
            elif not tool["hidden"]:
                out.append(f"  {tool['name']}")
    return out


def _projector() -> list[str]:
    """This projector, as a client would start it (the same interpreter and package)."""
    return [sys.executable, "-m", "projector"]


def listed(command: list[str], folder: str, roots: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every tool the bridge started with ``command`` in ``folder`` lists, each ``{name, hidden}``;
    ``roots``: the client declares them and answers ``roots/list`` with them."""
    process = subprocess.Popen(command, cwd=folder, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    talk = _Talk(process, roots)
    try:
        capabilities = {"roots": {}} if roots else {}
        talk.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": capabilities, "clientInfo": {"name": "projector-tools", "version": "1"}})
        talk.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools: list[dict[str, Any]] = []
        after = None  # the page marker the last page gave
        while True:
            page = talk.ask("tools/list", {"cursor": after} if after else {})
            tools += [{"name": str(t.get("name")), "hidden": bool((t.get("_meta") or {}).get(HIDDEN))}
                      for t in page.get("tools") or () if isinstance(t, dict)]
            after = page.get("nextCursor")
            if not after:
                return tools
    finally:
        talk.close()


class _Talk:
    def __init__(self, process: subprocess.Popen[bytes], roots: tuple[str, ...] = ()):
        self.process = process
        self.roots = [{"uri": Path(root).as_uri()} for root in roots]
        self.ids = 0
        self.buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message).encode("utf-8") + b"\n")
            self.process.stdin.flush()
        except OSError:
            raise Unanswered(self._why("the bridge ended")) from None

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        deadline = time.monotonic() + WAIT
        while True:
            message = self._next(deadline)
            if message.get("method") == "roots/list" and "id" in message:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": {"roots": self.roots}})
                continue
            if message.get("id") != self.ids or "method" in message:
                continue  # a notification, or the server's own request: not the answer
            if "error" in message:
                raise Unanswered(f"{method}: {message['error'].get('message')}")
            return message.get("result") or {}

    def _next(self, deadline: float) -> dict[str, Any]:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise Unanswered(f"no answer within {WAIT:g} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise Unanswered(self._why("the bridge ended"))
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        try:
            found = json.loads(line)
        except ValueError:
            return {}
        return found if isinstance(found, dict) else {}

    def _why(self, what: str) -> str:
        self.process.kill()
        said = self.process.stderr.read().decode("utf-8", "replace").strip().splitlines() if self.process.stderr else []
        return f"{what}: {said[-1]}" if said else what

    def close(self) -> None:
        try:
            self.process.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()



def _shown(source: str) -> str:
    """A rule's source ("binding /p", "project file /f") with ~ paths."""
    return " ".join(display_path(word) if word.startswith("/") else word for word in source.split(" "))
