"""Client quirks that data cannot say: one named function each, which a descriptor names.

``trusted-hash``: a client that runs a hook from its user files only when its global file says
it trusts that very hook: ``[<key>."<hook file>:<event_label>:<group>:<handler>"]`` with
``trusted_hash = "sha256:<hex>"``, the hash of the hook's identity as canonical JSON (sorted
keys, no spaces). The event label is the client's event name in snake_case; the indices are the
group's place in that event's list and the handler's in the group, so the entries follow the
groups wherever they stand. Without the entry, or with a wrong hash, the client skips the hook
(its headless run silently; its interactive one lists it for review as untrusted, or changed
since trusted: the client's ``hook_trust_status``). Checked against the client's own
``hooks/list`` (tests/compile/test_hook_sync.py). Only the group projector wants is hashed: a
group changed by hand is left to the client's own review, never approved here. Of the entry's
table only ``trusted_hash`` is projector's (the descriptor's ``trust.fields``): the ``enabled``
the client's review writes beside it is its user's (compile/engine.py keeps it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from projector.core.digest import sha256

# Events whose timeout the client clamps to 1..3 seconds (default 1), and events whose matcher
# it ignores (and leaves out of the hash).
_SHORT = ("session_end", "interrupt")
_NO_MATCHER = ("user_prompt_submit", "stop", "pre_model_request", "post_model_request")


def snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def hook_hash(label: str, group: Mapping[str, Any], handler: Mapping[str, Any]) -> str:
    timeout = handler.get("timeout")
    if label in _SHORT:
        seconds = min(max(timeout if timeout is not None else 1, 1), 3)
    else:
        seconds = max(timeout if timeout is not None else 600, 1)
    identity: dict[str, Any] = {"type": "command", "command": handler.get("command"), "timeout": seconds, "async": bool(handler.get("async", False))}
    if handler.get("statusMessage") is not None:
        identity["statusMessage"] = handler["statusMessage"]
    hashed: dict[str, Any] = {"event_name": label, "hooks": [identity]}
    if group.get("matcher") is not None and label not in _NO_MATCHER:
        hashed["matcher"] = group["matcher"]
    text = json.dumps(hashed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + sha256(text.encode("utf-8"))


def trusted_hash(hook_file: str, lists: Mapping[str, Any], place: Callable[[str, list[Any]], int | None],
                 wanted: Mapping[str, Any]) -> dict[str, Any]:
    """The trust entries for the groups projector writes (``wanted``: event -> group), each at
    the place of projector's group (``place(event, groups)``: the first that runs the
    dispatcher, else where the ledger's lineup puts it) in ``lists`` (event -> groups) of
    ``hook_file`` as the sync leaves it. The hash is the wanted group's, never what stands
    there: a group changed by hand (kept as drift) is one projector did not write, so it stays
    unapproved and the client asks its user (Codex: "changed since trusted", skipped until
    reviewed); another group that runs the dispatcher is not projector's either."""
    entries: dict[str, Any] = {}
    for event, group in sorted(wanted.items()):
        groups = lists.get(event)
        index = place(event, groups) if isinstance(groups, list) else None
        if index is None:
            continue
        label = snake(event)
        for position, handler in enumerate(group.get("hooks") or ()):
            entries[f"{hook_file}:{label}:{index}:{position}"] = {"trusted_hash": hook_hash(label, group, handler)}
    return entries


TRUST: dict[str, Callable[[str, Mapping[str, Any], Callable[[str, list[Any]], int | None], Mapping[str, Any]], dict[str, Any]]] = {
    "trusted-hash": trusted_hash}
