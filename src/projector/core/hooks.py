"""Hooks per workspace: the event vocabulary, which hooks apply in a folder, and their matchers.

A hook is named. The model's top level declares hooks for every folder; a binding or a trusted
project file adds its own, replaces an inherited one (a hook of the same name with a
``command``: the new definition, whole), or turns one on or off (``{enabled: false}``). For each
name, the deepest place that says something about it wins, as for providers (core.scope):
places are taken from the shallowest to the deepest, a binding seen through a git worktree
before the folder's own binding, a project file after a binding at the same folder.

The events are projector's own vocabulary (the names most clients share); each descriptor maps
them to its client's names and says which it supports. Only ``os`` (and ``re`` for a matcher
that is a pattern) is used: the dispatcher runs this on every tool call of every client.
"""

from __future__ import annotations

import os
from collections import namedtuple
from collections.abc import Iterable, Mapping

from projector.core.folders import contains, seen_from, worktree

TYPE_CHECKING = False  # typing itself costs the dispatcher more than its whole no-hook path
if TYPE_CHECKING:
    from typing import Any

# projector's events -> the payload field a matcher is tested against (None: the event takes no matcher).
EVENTS: dict[str, str | None] = {
    "PreToolUse": "tool_name",
    "PostToolUse": "tool_name",
    "PostToolUseFailure": "tool_name",
    "PermissionRequest": "tool_name",
    "UserPromptSubmit": None,
    "Stop": None,
    "SubagentStart": "agent_type",
    "SubagentStop": "agent_type",
    "SessionStart": "source",
    "SessionEnd": "reason",
    "PreCompact": "trigger",
    "PostCompact": "trigger",
    "Notification": "notification_type",
}
# Events whose hooks may add context for the model (hookSpecificOutput.additionalContext), and of
# those, the ones where a hook's plain stdout is that context.
CONTEXT_EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "SessionStart")
PLAIN_CONTEXT_EVENTS = ("UserPromptSubmit", "SessionStart")
DEFAULT_TIMEOUT = 60.0  # seconds
MAX_TIMEOUT = 540.0  # seconds: the dispatcher's entry gets 600 in every client, and must end first

Hook = namedtuple("Hook", "name event matcher command timeout enabled env env_files direnv", defaults=(None,) * 8)
"""One hook as a place says it; a field that place does not say is None. Without ``command`` it
only turns an inherited hook on or off (``enabled``)."""


def hook(name: str, spec: Mapping[str, Any]) -> Hook:
    """A hook from its checked spec (the model's YAML, or the same data kept as JSON)."""
    env = spec.get("env")
    files = spec.get("env_files")
    timeout = spec.get("timeout")
    return Hook(
        name=str(name),
        event=spec.get("event"),
        matcher=spec.get("matcher"),
        command=spec.get("command"),
        timeout=None if timeout is None else float(timeout),
        enabled=spec.get("enabled"),
        env=None if env is None else tuple((str(k), None if v is None else str(v)) for k, v in env.items()),
        env_files=None if files is None else tuple(str(f) for f in files),
        direnv=spec.get("direnv"),
    )


def hooks_of(specs: Mapping[str, Any] | None) -> tuple[Hook, ...]:
    return tuple(hook(name, spec) for name, spec in (specs or {}).items())


def specs(said: tuple[Hook, ...]) -> dict[str, dict[str, Any]]:
    """Hooks as their specs again (what ``hooks_of`` reads), to be kept as JSON."""
    return {h.name: {k: dict(v) if k == "env" else v for k, v in h._asdict().items() if v is not None and k != "name"} for h in said}


# --------------------------------------------------------------------------- which hooks apply


Place = namedtuple("Place", "root source hooks")  # a workspace root, how to name it, the hooks it says


def places(
    bindings: Iterable[tuple[str, bool, Any, tuple[Hook, ...]]],
    projects: Iterable[tuple[str, Any, tuple[Hook, ...]]],
    folder: str,
) -> list[Place]:
    """The places that contain canonical ``folder``, from the shallowest to the deepest.
    ``bindings``: (canonical path, worktrees, source, hooks); ``projects``: trusted project files
    (root, source, hooks)."""
    found: list[tuple[int, int, Place]] = []
    tree: Any = False  # looked up once, only if a binding asks for it
    for path, worktrees, source, said in bindings:
        if contains(path, folder):
            found.append((len(path), 1, Place(path, source, said)))
        elif worktrees:
            if tree is False:
                tree = worktree(folder)
            seen = seen_from(path, tree) if tree else None
            if seen is not None and contains(seen, folder):
                found.append((len(seen), 0, Place(seen, source, said)))
    for root, source, said in projects:
        if contains(root, folder):
            found.append((len(root), 2, Place(root, source, said)))
    found.sort(key=lambda item: item[:2])
    return [place for _, _, place in found]


Applied = namedtuple("Applied", "hook defined switched")
"""A hook as it applies in a folder: its definition (enabled as the last word on it says), where
it was defined, and the places that turned it on or off since (source, enabled)."""


def applying(top: tuple[Hook, ...], top_source: Any, here: list[Place]) -> list[Applied]:
    """Every hook that reaches a folder whose places are ``here``, in declaration order (a
    replaced hook keeps its place), turned-off ones included."""
    merged: dict[str, Applied] = {h.name: Applied(h, top_source, ()) for h in top if h.command is not None}
    for place in here:
        for said in place.hooks:
            if said.command is not None:
                merged[said.name] = Applied(said, place.source, ())
            elif said.name in merged and said.enabled is not None:
                known = merged[said.name]
                merged[said.name] = Applied(known.hook._replace(enabled=said.enabled), known.defined,
                                            known.switched + ((place.source, said.enabled),))
    return list(merged.values())


def running(applied: list[Applied], event: str) -> list[Applied]:
    """The hooks of ``event`` that run."""
    return [a for a in applied if a.hook.event == event and a.hook.enabled is not False]


def events_used(top: tuple[Hook, ...], said: Iterable[tuple[Hook, ...]]) -> set[str]:
    """The events a hook may run for somewhere: every definition's event, except a definition
    turned off where it is made that no place turns on."""
    layers = [top, *said]
    switched_on = {h.name for hooks in layers for h in hooks if h.command is None and h.enabled}
    return {h.event for hooks in layers for h in hooks if h.command is not None and (h.enabled is not False or h.name in switched_on)}


# --------------------------------------------------------------------------- matchers


def simple_matcher(matcher: str) -> bool:
    """A matcher of names and ``|`` only: compared whole, one name at a time."""
    return all(c.isascii() and (c.isalnum() or c in "_|") for c in matcher)


def matches(matcher: str | None, event: str, payload: Mapping[str, Any]) -> bool:
    """Whether a hook with ``matcher`` runs for this payload, as the clients that share the
    vocabulary decide:
    none, "" or "*" match all; names joined by "|" are compared whole; anything else is a
    regular expression searched for in the value. An event without a matcher field matches all."""
    field = EVENTS.get(event)
    if not matcher or matcher == "*" or field is None:
        return True
    value = payload.get(field)
    if not isinstance(value, str):
        return False
    if simple_matcher(matcher):
        return value in matcher.split("|")
    import re

    try:
        return re.search(matcher, value) is not None
    except re.error:
        return False  # refused when the model is checked; a project file's may be older


def workspace_root(here: list[Place], folder: str) -> str:
    """Where a folder's hooks run: its deepest workspace's root, else the folder itself."""
    return here[-1].root if here else folder


def absolute(root: str, path: str) -> str:
    return os.path.normpath(os.path.join(root, path))
