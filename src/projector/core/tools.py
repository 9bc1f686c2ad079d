"""Which of a server's tools a folder is offered: a rule of allow and deny globs.

``tools: {allow: [...], deny: [...]}`` on a provider, on a binding's (or a project file's)
settings for it. The patterns are shell globs (``*``, ``?``, ``[...]``; fnmatch, case-sensitive)
on the server's own tool names. A name is offered when it matches no ``deny`` pattern and, where
there is an ``allow`` list, matches one of it: deny wins, no ``allow`` allows all. The deepest
rule that applies replaces the others whole (a folder's rule replaces the provider's), as a KB
set does.

The bridge asks ``offers`` once per listed tool and once per ``tools/call``: the patterns are
compiled into one regular expression per list, so 500 names cost 500 matches.
"""

from __future__ import annotations

import re
from fnmatch import translate

from projector.core.record import Record

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from typing import Any

GLOB_CHARACTERS = "*?["


class ToolRule(Record):
    """The tools a folder is offered of one provider's server."""

    allow: tuple[str, ...] | None = None  # None: every tool not denied
    deny: tuple[str, ...] = ()

    def offers(self, name: object) -> bool:
        """Whether tool ``name`` is offered (a name that is not a string never is)."""
        if not isinstance(name, str):
            return False
        allowed, denied = _compiled(self)
        return (allowed is None or allowed.match(name) is not None) and (denied is None or denied.match(name) is None)

    @property
    def exact(self) -> bool:
        """Whether every pattern is a plain name (no glob character): a client that filters by
        exact names can be given it."""
        return not any(c in pattern for pattern in (self.allow or ()) + self.deny for c in GLOB_CHARACTERS)

    def shown(self) -> str:
        """The rule as the model spells it, for `explain`."""
        parts = ([f"allow: [{', '.join(self.allow)}]"] if self.allow is not None else []) + (
            [f"deny: [{', '.join(self.deny)}]"] if self.deny else [])
        return "{" + ", ".join(parts) + "}" if parts else "{} (every tool)"


_patterns: dict[ToolRule, tuple[re.Pattern[str] | None, re.Pattern[str] | None]] = {}


def _compiled(rule: ToolRule) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    found = _patterns.get(rule)
    if found is None:
        found = _patterns[rule] = (_one(rule.allow) if rule.allow is not None else None, _one(rule.deny) if rule.deny else None)
    return found


def _one(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """The globs as one expression (each of fnmatch's translations is anchored at the end)."""
    if not patterns:
        return re.compile(r"(?!)")  # an empty allow list: nothing matches
    return re.compile("|".join(f"(?:{translate(p)})" for p in patterns))


def rule(value: Any) -> ToolRule | None:
    """The rule of a model's ``tools`` mapping; None where there is none."""
    if not isinstance(value, dict):
        return None
    allow = value.get("allow")
    return ToolRule(allow=None if allow is None else tuple(str(p) for p in allow),
                    deny=tuple(str(p) for p in value.get("deny") or ()))
