"""Which of a server's tools a folder is offered: a rule of allow and deny globs.

``tools: {allow: [...], deny: [...]}`` on a provider, on a binding's (or a project file's)
settings for it. The patterns are shell globs (``*``, ``?``, ``[...]``; fnmatch, case-sensitive)
on the server's own tool names. A name is offered when it matches no ``deny`` pattern and, where
there is an ``allow`` list, matches one of it: deny wins, no ``allow`` allows all. The deepest
rule that applies replaces the others whole (a folder's rule replaces the provider's), as a KB
set does.

A session over several folders (a client's ``roots``, in an unbound folder) is offered a tool when
any of its folders' rules offers it: an ``AnyRule``. ``any_of`` gives the one rule itself where
there is one (or None where one folder allows every tool), so one rule costs what it did.

The bridge asks ``offers`` once per listed tool and once per ``tools/call``: the patterns are
compiled into one regular expression per list, so 500 names cost 500 matches.
"""

from __future__ import annotations

import re
from fnmatch import translate

from projector.core.record import Record

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
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


class AnyRule(Record):
    """Several folders' rules together: a tool is offered when any of them offers it (made by
    ``any_of``, which never makes one of fewer than two rules)."""

    rules: tuple[ToolRule, ...]

    def offers(self, name: object) -> bool:
        return judge(self)(name)

    @property
    def exact(self) -> bool:
        return all(rule.exact for rule in self.rules)

    def shown(self) -> str:
        return "any of " + ", ".join(rule.shown() for rule in self.rules)


def any_of(rules: Iterable[ToolRule | None]) -> ToolRule | AnyRule | None:
    """The rule of a session over several folders, from each folder's rule (None: every tool):
    None when one of them allows every tool, the rule itself when they all say the same, else an
    ``AnyRule``. No rule at all offers nothing."""
    distinct: list[ToolRule] = []
    for rule in rules:
        if rule is None:
            return None
        if rule not in distinct:
            distinct.append(rule)
    if not distinct:
        return ToolRule(allow=())
    return distinct[0] if len(distinct) == 1 else AnyRule(tuple(distinct))


_judges: dict[ToolRule | AnyRule, Callable[[object], bool]] = {}


def judge(rule: ToolRule | AnyRule) -> Callable[[object], bool]:
    """``rule.offers`` as one function, made once per rule: the patterns compiled into one
    expression per list, and each name's verdict kept (a session lists the same names again
    after every list_changed; a filtered list asks it once per tool)."""
    found = _judges.get(rule)
    if found is not None:
        return found
    decide = _any(rule) if isinstance(rule, AnyRule) else _decide(rule)
    verdicts: dict[str, bool] = {}

    def offers(name: object) -> bool:
        if type(name) is not str:
            return isinstance(name, str) and offers(str(name))
        verdict = verdicts.get(name)
        if verdict is None:
            verdict = decide(name)
            if len(verdicts) < VERDICTS_KEPT:
                verdicts[name] = verdict
        return verdict

    _judges[rule] = offers
    return offers


def _decide(rule: ToolRule) -> Callable[[str], bool]:
    """One rule's verdict on a name, uncached."""
    allowed = _one(rule.allow) if rule.allow is not None else None
    denied = _one(rule.deny) if rule.deny else None
    return lambda name: (allowed is None or allowed.match(name) is not None) and (denied is None or denied.match(name) is None)


def _any(rules: AnyRule) -> Callable[[str], bool]:
    """Several rules' verdict on a name: offered when one of them offers it."""
    each = tuple(_decide(rule) for rule in rules.rules)
    return lambda name: any(decide(name) for decide in each)


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
