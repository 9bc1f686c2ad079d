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
    from collections.abc import Callable
    from typing import Any

GLOB_CHARACTERS = "*?["
VERDICTS_KEPT = 100_000  # names whose verdict a rule keeps (a server that names its tools anew each list cannot grow it for ever)


class ToolRule(Record):
    """The tools a folder is offered of one provider's server."""

    allow: tuple[str, ...] | None = None  # None: every tool not denied
    deny: tuple[str, ...] = ()

    def offers(self, name: object) -> bool:
        """Whether tool ``name`` is offered (a name that is not a string never is)."""
        return judge(self)(name)

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


_judges: dict[ToolRule, Callable[[object], bool]] = {}


def judge(rule: ToolRule) -> Callable[[object], bool]:
    """``rule.offers`` as one function, made once per rule: the patterns compiled into one
    expression per list, and each name's verdict kept (a session lists the same names again
    after every list_changed; a filtered list asks it once per tool)."""
    found = _judges.get(rule)
    if found is not None:
        return found
    allowed = _one(rule.allow) if rule.allow is not None else None
    denied = _one(rule.deny) if rule.deny else None
    verdicts: dict[str, bool] = {}

    def offers(name: object) -> bool:
        if type(name) is not str:
            return isinstance(name, str) and offers(str(name))
        verdict = verdicts.get(name)
        if verdict is None:
            verdict = (allowed is None or allowed.match(name) is not None) and (denied is None or denied.match(name) is None)
            if len(verdicts) < VERDICTS_KEPT:
                verdicts[name] = verdict
        return verdict

    _judges[rule] = offers
    return offers


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
