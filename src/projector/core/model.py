"""The user's model (``projector.yaml``): load, validate, and turn into frozen dataclasses.

Validation happens in two passes. The JSON Schema (``schemas/model.schema.json``, also usable by
editors) checks shapes; the semantic pass checks what a schema cannot: binding paths, references
to providers, KBs a provider does not mount. Every problem carries the file, line and column of
the offending key or value, found through ruamel.yaml's round-trip positions.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from functools import cached_property
from pathlib import Path

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from typing import Any

from projector.core import hooks as hook_rules
from projector.core import locations
from projector.core.errors import ModelError, Problem, did_you_mean, display_path
from projector.core.resources import validator
from projector.core.variables import expand_folder

KbSet = tuple[str, ...] | None
"""Which knowledge bases a session sees: None = all (no ``kbs`` parameter), () = none."""

Env = tuple[tuple[str, str | None], ...]
"""Variables in order: a value (``${VAR}`` expanded when the server starts) or None (unset)."""


@dataclass(frozen=True)
class Settings:
    """What a binding (or a project file) says about one provider; None: it does not say."""

    kbs: tuple[str, ...] | None = None
    enabled: bool | None = None
    command: str | None = None
    args: tuple[str, ...] | None = None
    cwd: str | None = None
    env: Env | None = None
    env_files: tuple[str, ...] | None = None
    direnv: bool | None = None
    shared: bool | None = None  # local: the workspace's sessions share one server
    linger: float | None = None  # local, shared: seconds the server outlives its last session

    def said(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self) if getattr(self, f.name) is not None)

    def over(self, base: Settings) -> Settings:
        """These settings laid over ``base``: each said value replaces, ``env`` merges by name."""
        merged = {name: getattr(self, name) for name in self.said()}
        if self.env is not None and base.env is not None:
            merged["env"] = tuple(dict(base.env, **dict(self.env)).items())
        return replace(base, **merged)


@dataclass(frozen=True)
class Provider:
    """A named MCP server: remote (url) or local (command)."""

    name: str
    url: str | None  # remote: the MCP endpoint; None for a local provider
    token_env: str | None
    kbs: tuple[str, ...] | None  # what the server mounts, when the model says
    default: KbSet  # the set for folders under no binding
    command: str | None = None  # local: the server's command
    args: tuple[str, ...] = ()
    cwd: str | None = None
    env: Env = ()
    enabled: bool = True
    oauth: bool = False  # remote: it signs users in with OAuth (the client does), not with a token variable
    shared: bool | None = None
    linger: float | None = None
    listen: bool = False  # remote: the bridge opens the GET stream for the server's own requests
    timeout: float = 120.0  # remote: seconds a request through the bridge may take

    @property
    def local(self) -> bool:
        return self.url is None

    def launch(self) -> Settings:
        """A local provider's own definition, as the base its bindings are laid over."""
        return Settings(enabled=self.enabled, command=self.command, args=self.args or None, cwd=self.cwd, env=self.env or None,
                        shared=self.shared, linger=self.linger)


@dataclass(frozen=True)
class Binding:
    """A folder and what it says of each provider there."""

    path: str  # absolute, with ~ and $VAR expanded; made canonical where it is resolved
    uses: tuple[tuple[str, Settings], ...]  # (provider, what this folder says of it), sorted by provider
    worktrees: bool = False  # every git worktree of the repository is bound too
    hooks: tuple[hook_rules.Hook, ...] = ()  # what this folder says of hooks (core.hooks)

    def settings(self, provider: str) -> Settings | None:
        return dict(self.uses).get(provider)


@dataclass(frozen=True)
class Model:
    """The checked model."""

    source: Path
    clients: tuple[str, ...] | None  # None: the clients found on this machine
    providers: tuple[Provider, ...]  # sorted by name
    bindings: tuple[Binding, ...]  # sorted by path
    hooks: tuple[hook_rules.Hook, ...] = ()  # for every folder, in the model's order (core.hooks)

    def provider(self, name: str) -> Provider | None:
        return next((p for p in self.providers if p.name == name), None)

    def bindings_of(self, provider: str) -> tuple[Binding, ...]:
        return self._bindings_by_provider.get(provider, ())

    @cached_property
    def _bindings_by_provider(self) -> dict[str, tuple[Binding, ...]]:
        """One pass over the bindings, not one per provider (50 × 1,000 at scale)."""
        found: dict[str, list[Binding]] = {}
        for binding in self.bindings:
            for name, _ in binding.uses:
                found.setdefault(name, []).append(binding)
        return {name: tuple(bindings) for name, bindings in found.items()}


# --------------------------------------------------------------------------- locating the model


model_path = locations.model_path


# --------------------------------------------------------------------------- loading


def load(path: Path, environ: Mapping[str, str], known_clients: tuple[str, ...]) -> Model:
    return _build(path, validated(path, environ, known_clients), environ)


def validated(path: Path, environ: Mapping[str, str], known_clients: tuple[str, ...]) -> Any:
    """The model file's data, checked by the schema and the semantic pass."""
    shown = display_path(path, _home(environ))
    return checked_text(_read_text(path, shown), shown, environ, known_clients)


def checked_text(text: str, shown: str, environ: Mapping[str, str], known_clients: tuple[str, ...]) -> Any:
    """A model's text, parsed and checked; ModelError with every problem's place."""
    return checked_yaml(text, shown, "model", lambda data: _semantic_problems(data, shown, environ, known_clients))


def checked_yaml(text: str, shown: str, schema: str, semantic: Callable[[Any], list[Problem]]) -> Any:
    """Text parsed and checked by ``schema`` and then ``semantic``.

    A good file is read once with the fast (C) parser; the round-trip parser, which knows where
    every key and value stands, reads it again only when there is a problem to point at.
    """
    from projector.core import yamltext  # here: a bridge start with a valid cache reads no YAML

    yamltext.screen(text, shown)
    quick = _quick_yaml(text)
    if quick is not None and _conforms(quick, shown, schema) and not semantic(quick):
        return quick
    data = _parse_yaml(text, shown)
    problems = _schema_problems(data, shown, schema)
    if not problems:
        problems = semantic(data)
    if problems:
        raise ModelError(sorted(problems, key=lambda p: (p.line or 0, p.column or 0)))
    return data


def cached(path: Path, environ: Mapping[str, str], known_clients: Callable[[], tuple[str, ...]], cache: Path) -> Model:
    """``load``, answered from ``cache`` while the model file is the same (see core.cache: the
    file's stat, or failing that its bytes) and the clients it names are still known.

    The bridge starts once per client session and a sync follows every edit the shell hook sees;
    a checked model is kept as plain JSON (a checkout or an editor that rewrites it unchanged
    costs nothing), so they read it with the standard library instead of parsing and validating
    YAML again.
    """
    from projector import __version__
    from projector.core.cache import kept, stat_key

    data = kept(cache, [__version__, *stat_key([path])], lambda: validated(path, environ, known_clients()), contents=[path])
    named = data.get("clients") if isinstance(data, dict) else None
    if named and not set(named) <= set(known_clients()):
        data = validated(path, environ, known_clients())  # a descriptor it names was removed since: that error, at its place
    try:
        return _build(path, data, environ)
    except KeyError:  # checked in another environment, where a variable a binding names was set
        return _build(path, validated(path, environ, known_clients()), environ)


_home = locations.home


def _read_text(path: Path, shown: str) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ModelError(
            Problem(shown, None, None, "no model here: run `projector init` to write a starter, or pass --config")
        ) from None
    except OSError as exc:
        raise ModelError(Problem(shown, None, None, f"cannot read the model: {exc}")) from None
    from projector.core import yamltext

    return yamltext.decoded(raw, shown)


def _quick_yaml(text: str) -> Any:
    """The data, or None when the text needs the careful parser (an error, or it is empty)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        return YAML(typ="safe").load(text)
    except (YAMLError, ValueError):
        return None


def _parse_yaml(text: str, shown: str) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import DuplicateKeyError
    from ruamel.yaml.error import MarkedYAMLError

    try:
        data = YAML(typ="rt").load(text)
    except DuplicateKeyError as exc:
        mark = exc.problem_mark
        key = re.search(r'duplicate key "([^"]*)"', str(exc.problem))
        name = f'"{key.group(1)}"' if key else "a key"
        raise ModelError(
            Problem(shown, mark.line + 1, mark.column + 1, f"duplicate key {name}: a key may appear once; merge the two")
        ) from None
    except MarkedYAMLError as exc:
        from projector.core import yamltext

        raise ModelError(yamltext.syntax_problem(exc, text, shown)) from None
    if data is None:
        raise ModelError(Problem(shown, None, None, "the model is empty: run `projector init` to write a starter"))
    return data


# --------------------------------------------------------------------------- positions


def _position(data: Any, path: tuple[Any, ...], *, key: bool = False) -> tuple[int | None, int | None]:
    """1-based line and column of the value at ``path`` (or of its key, with ``key=True``)."""
    node, position = data, None
    for index, step in enumerate(path):
        lc = getattr(node, "lc", None)
        last = index == len(path) - 1
        try:
            if isinstance(step, int):
                position = lc.item(step) if lc else position
            else:
                position = (lc.key(step) if key and last else lc.value(step)) if lc else position
            node = node[step]
        except (KeyError, IndexError, TypeError, AttributeError):
            break
    if position is None:
        lc = getattr(data, "lc", None)
        position = (lc.line, lc.col) if lc else (0, 0)
    return position[0] + 1, position[1] + 1


def _dotted(path: tuple[Any, ...]) -> str:
    text = ""
    for step in path:
        name = str(step) if str(step).isprintable() else _quoted(str(step))
        text += f"[{step}]" if isinstance(step, int) else (f".{name}" if text else name)
    return text


def problem(data: Any, shown: str, path: tuple[Any, ...], message: str, *, key: bool = False) -> Problem:
    line, col = _position(data, path, key=key)
    prefix = f"{_dotted(path)}: " if path else ""
    return Problem(shown, line, col, prefix + message)


# --------------------------------------------------------------------------- schema pass

_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "null": "nothing",
    "boolean": "true or false",
}


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "nothing"
    return "a string"


def _conforms(data: Any, shown: str, schema: str) -> bool:
    """A yes without importing jsonschema where core.quickschema can tell (a bridge start after a
    model edit); jsonschema otherwise."""
    from projector.core.quickschema import conforms

    verdict = conforms(data, schema)
    return verdict if verdict is not None else not _schema_problems(data, shown, schema)


def _schema_problems(data: Any, shown: str, schema: str = "model") -> list[Problem]:
    return [_schema_problem(data, shown, error) for error in validator(schema).iter_errors(data)]


def _schema_problem(data: Any, shown: str, error: Any) -> Problem:
    path = tuple(error.absolute_path)
    validator, instance = error.validator, error.instance
    if validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extras = sorted(set(instance) - set(allowed))
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        guess = did_you_mean(extras[0], allowed)
        return problem(data, shown, path + (extras[0],), f"unknown key{guess}{hint}; remove it or fix its spelling", key=True)
    if validator == "required":
        missing = re.search(r"'([^']+)' is a required property", error.message)
        name = missing.group(1) if missing else "a key"
        return problem(data, shown, path, f'missing "{name}"')
    if validator == "type":
        expected = error.validator_value
        words = " or ".join(_TYPE_WORDS.get(t, t) for t in (expected if isinstance(expected, list) else [expected]))
        return problem(data, shown, path, f"expected {words}, got {_kind(instance)}")
    if validator == "const" and path == ("version",):
        return problem(data, shown, path, f"unsupported version {instance!r}: this projector reads version 1")
    if validator == "uniqueItems":
        return problem(data, shown, path, "an item is listed twice; list each once")
    if validator == "pattern":
        return _pattern_problem(data, shown, path, error)
    return problem(data, shown, path, error.message)


def _pattern_problem(data: Any, shown: str, path: tuple[Any, ...], error: Any) -> Problem:
    value = error.instance
    shown_value = _quoted(value)
    if "propertyNames" in error.schema_path and path and path[-1] == "env":
        return problem(data, shown, path + (value,), f'{shown_value} is not a variable name: use letters, digits and "_"', key=True)
    if "propertyNames" in error.schema_path:  # a bad key: the error's path is the mapping's
        return problem(
            data,
            shown,
            path + (value,),
            f'{shown_value} is not a usable name: use letters, digits, "-" and "_" (at most 64), '
            "the names every client accepts",
            key=True,
        )
    field = path[-1] if path else ""
    if len(path) > 1 and path[-2] == "env":
        return problem(
            data, shown, path, f"{shown_value}: each ${{ starts a reference ${{NAME}} or ${{NAME:-default}}, where NAME is "
            'a variable name (letters, digits and "_")'
        )
    if field == "url":
        return problem(data, shown, path, f"{shown_value} is not an http(s) URL")
    if field == "token_env":
        pasted = pasted_token(str(value), str(path[-2]) if len(path) > 1 else "")
        return problem(data, shown, path, pasted or f"{shown_value} is not a variable name: give the NAME of the variable that holds the token")
    return problem(
        data, shown, path, f'{shown_value} is not a usable KB name: use letters, digits, ".", "-" and "_" (no commas)'
    )


def _quoted(value: Any) -> str:
    """A value in a message: quoted, with a newline or a control character shown as an escape."""
    import json

    return json.dumps(value, ensure_ascii=False)


# --------------------------------------------------------------------------- semantic pass

expand_path = expand_folder


REMOTE_KEYS = ("url", "token_env", "oauth", "kbs", "default", "listen", "timeout")
LOCAL_KEYS = ("command", "args", "cwd", "env", "enabled", "shared", "linger")
REMOTE_SETTINGS = ("kbs", "enabled")  # what a workspace may change of a remote provider
RESERVED = ("worktrees", "providers", "hooks")  # keys of a binding or project file that are not providers


def _semantic_problems(
    data: Mapping[str, Any], shown: str, environ: Mapping[str, str], known_clients: tuple[str, ...]
) -> list[Problem]:
    problems: list[Problem] = []
    for index, client in enumerate(data.get("clients") or []):
        if client not in known_clients:
            problems.append(
                problem(data, shown, ("clients", index),
                        f'unknown client "{client}"{did_you_mean(client, known_clients)} (known: {", ".join(known_clients)})')
            )
    providers = data["providers"]
    problems += _provider_problems(data, shown, providers)
    problems += [
        problem(data, shown, ("providers", name, "token_env"), message)
        for name, spec in providers.items()
        if (message := pasted_token(str(spec.get("token_env") or ""), str(name)))
    ]
    seen_paths: dict[str, str] = {}
    bindings = data.get("bindings") or {}
    defined = defined_hooks([data.get("hooks"), *(b.get("hooks") for b in bindings.values())])
    problems += hook_problems(data, shown, ("hooks",), data.get("hooks"), defined)
    for raw_path, binding in bindings.items():
        problems += _binding_path_problems(data, shown, str(raw_path), environ, seen_paths)
        problems += use_problems(data, shown, ("bindings", raw_path), binding, providers)
        problems += hook_problems(data, shown, ("bindings", raw_path, "hooks"), binding.get("hooks"), defined)
    return problems


def defined_hooks(places: list[Any]) -> set[str]:
    """The names of the hooks defined (with a command) in these places' ``hooks``."""
    return {str(name) for hooks in places for name, spec in (hooks or {}).items() if "command" in spec}


def hook_problems(data: Any, shown: str, where: tuple[Any, ...], hooks: Mapping[str, Any] | None, defined: set[str]) -> list[Problem]:
    """What the schema cannot say of the hooks at ``where``: events, matchers, and switches that
    name a hook defined somewhere (``defined``)."""
    problems: list[Problem] = []
    for name, spec in (hooks or {}).items():
        at = where + (name,)
        if "command" not in spec:
            extra = [key for key in spec if key != "enabled"]
            if extra:
                problems.append(problem(data, shown, at + (extra[0],), f'"{extra[0]}" needs a command here: a hook without one only '
                                        "turns an inherited hook off or on (enabled: false / true)", key=True))
            elif "enabled" not in spec:
                problems.append(problem(data, shown, at, "an empty hook: give it a command (a new definition), or enabled: false / true "
                                        "(turn an inherited hook off or on)"))
            elif name not in defined:
                problems.append(problem(data, shown, at, f'no hook named "{name}" to turn on or off (hooks: {", ".join(sorted(defined)) or "none"})', key=True))
            continue
        event = spec["event"]
        if event not in hook_rules.EVENTS:
            problems.append(problem(data, shown, at + ("event",), f'unknown event "{event}" (events: {", ".join(hook_rules.EVENTS)})'))
            continue
        matcher = spec.get("matcher")
        if matcher is not None and hook_rules.EVENTS[event] is None:
            problems.append(problem(data, shown, at + ("matcher",), f"{event} hooks take no matcher (they run on every {event}); remove it", key=True))
        elif matcher and matcher != "*" and not hook_rules.simple_matcher(matcher):
            try:
                re.compile(matcher)
            except re.error as exc:
                problems.append(problem(data, shown, at + ("matcher",), f"{_quoted(matcher)} is not a regular expression ({exc}); "
                                        'give tool names joined by "|", or a valid pattern'))
    return problems


_TOKEN_PREFIXES = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "sk-", "sk_live_", "sk_test_", "xoxb-", "xoxp-",
                   "glpat-", "AKIA", "eyJ", "Bearer ")


def pasted_token(value: str, provider: str) -> str | None:
    """What to say when ``token_env`` holds what looks like a token itself (a known token prefix,
    or a long mixed-case string of letters and digits no one names a variable by); None when it
    reads as a variable's name. The message never repeats the value: it may be a secret."""
    import math

    long_and_random = (
        len(value) >= 24
        and not re.fullmatch(r"[A-Z][A-Z0-9_]*", value)  # UPPER_SNAKE is how variables are named
        and all(re.search(kind, value) for kind in ("[a-z]", "[A-Z]", "[0-9]"))
        and -sum(n / len(value) * math.log2(n / len(value)) for n in map(value.count, set(value))) >= 3.5
    )
    if not (value.startswith(_TOKEN_PREFIXES) or long_and_random):
        return None
    name = re.sub(r"\W", "_", provider).upper() + "_TOKEN"
    return (f"this looks like a token itself, not the NAME of a variable: keep the token out of this file (export "
            f"{name}=... in your shell's profile, or your secret manager) and write token_env: {name}; if it is a real "
            "token, treat it as exposed and replace it")


def _provider_problems(data: Any, shown: str, providers: Mapping[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    for name, provider in providers.items():
        at = ("providers", name)
        if name in RESERVED:
            problems.append(problem(data, shown, at, f'"{name}" is a reserved word in bindings; give the provider another name', key=True))
        if ("url" in provider) == ("command" in provider):
            problems.append(problem(data, shown, at, 'give either "url" (a remote provider) or "command" (a local one)', key=True))
            continue
        kind, foreign = ("remote", LOCAL_KEYS) if "url" in provider else ("local", REMOTE_KEYS)
        problems += _url_problems(data, shown, at, provider.get("url"))
        for key in (k for k in provider if k in foreign):
            problems.append(problem(data, shown, at + (key,), f'"{key}" is not a setting of a {kind} provider; remove it', key=True))
        if provider.get("oauth") and "token_env" in provider:
            problems.append(problem(data, shown, at + ("oauth",), 'give either "token_env" (a token variable) or "oauth: true" (the client signs in), not both', key=True))
        mounted = provider.get("kbs")
        for index, kb in enumerate(provider.get("default") or []):
            if mounted is not None and kb not in mounted:
                problems.append(_unmounted(data, shown, at + ("default", index), kb, name, mounted))
    return problems


def _url_problems(data: Any, shown: str, at: tuple[Any, ...], url: Any) -> list[Problem]:
    from projector.core.scope import kbs_in_url

    own = kbs_in_url(url) if isinstance(url, str) else None
    if own is None:
        return []
    return [problem(data, shown, at + ("url",), f'the URL sets "{own}" itself, but projector sets kbs for each folder: '
                    "take it out of the URL and say default: [...] (what folders under no binding see)")]


def use_problems(data: Any, shown: str, where: tuple[Any, ...], binding: Mapping[str, Any], providers: Mapping[str, Any]) -> list[Problem]:
    """What one binding (or project file) says of each provider, checked against the providers."""
    problems: list[Problem] = []
    for provider_name, value in binding.items():
        at = where + (provider_name,)
        if provider_name in RESERVED:
            continue
        if provider_name not in providers:
            known = ", ".join(sorted(providers)) or "none"
            guess = did_you_mean(provider_name, providers)
            problems.append(problem(data, shown, at, f'no provider named "{provider_name}"{guess} (providers: {known})', key=True))
            continue
        spec = providers[provider_name]
        local = "command" in spec
        if local and isinstance(value, list):
            problems.append(problem(data, shown, at, f'"{provider_name}" is a local provider: give settings (a mapping such as {{enabled: true}}), not a KB list'))
            continue
        settings = value if isinstance(value, Mapping) else {"kbs": value}
        for key in settings:
            if (local and key == "kbs") or (not local and key not in REMOTE_SETTINGS):
                kind, allowed = ("local", "everything but kbs") if local else ("remote", "kbs and enabled")
                problems.append(problem(data, shown, at + (key,), f'"{key}" is not a setting of {kind} provider "{provider_name}" (it takes {allowed})', key=True))
        mounted = spec.get("kbs")
        for index, kb in enumerate(settings.get("kbs") or []):
            if mounted is not None and kb not in mounted:
                path = at + (index,) if isinstance(value, list) else at + ("kbs", index)
                problems.append(_unmounted(data, shown, path, kb, provider_name, mounted))
    return problems


def _unmounted(data: Any, shown: str, path: tuple[Any, ...], kb: str, provider: str, mounted: list[str]) -> Problem:
    mounts = ", ".join(sorted(mounted)) or "nothing"
    return problem(data, shown, path, f'"{kb}" is not a KB of provider "{provider}"{did_you_mean(kb, mounted)} (it mounts: {mounts})')


def _binding_path_problems(
    data: Any, shown: str, raw: str, environ: Mapping[str, str], seen: dict[str, str]
) -> list[Problem]:
    where = ("bindings", raw)
    try:
        path = expand_path(raw, environ)
    except KeyError as unset:
        return [problem(data, shown, where, f"${unset.args[0]} is not set in this environment; set it or write the folder out", key=True)]
    if not path.startswith("/"):
        return [problem(data, shown, where, "a binding is a folder given as an absolute path or one under ~", key=True)]
    if path in seen:
        return [problem(data, shown, where, f'the same folder as "{seen[path]}"; merge the two bindings', key=True)]
    real = os.path.realpath(path)  # where a session's folder is compared with it
    if real in seen:
        return [problem(data, shown, where, f'the same folder as "{seen[real]}" (through a symlink: both are {real}); '
                        "merge the two bindings", key=True)]
    seen[path] = seen[real] = raw
    return []


# --------------------------------------------------------------------------- building


def _kb_set(value: Any) -> KbSet:
    return None if value is None else tuple(str(kb) for kb in value)


def _strings(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(str(item) for item in value)


def _env(value: Any) -> Env | None:
    return None if value is None else tuple((str(k), None if v is None else str(v)) for k, v in value.items())


def settings(value: Any) -> Settings:
    """A binding's value for one provider: a KB list, or a mapping of settings."""
    if not isinstance(value, Mapping):
        return Settings(kbs=_kb_set(value))
    return Settings(
        kbs=_kb_set(value.get("kbs")),
        enabled=value.get("enabled"),
        command=value.get("command"),
        args=_strings(value.get("args")),
        cwd=value.get("cwd"),
        env=_env(value.get("env")),
        env_files=_strings(value.get("env_files")),
        direnv=value.get("direnv"),
        shared=value.get("shared"),
        linger=value.get("linger"),
    )


def provider(name: str, spec: Mapping[str, Any]) -> Provider:
    return Provider(
        name=str(name),
        url=spec.get("url"),
        token_env=spec.get("token_env"),
        kbs=_kb_set(spec.get("kbs")),
        default=_kb_set(spec.get("default")),
        command=spec.get("command"),
        args=_strings(spec.get("args")) or (),
        cwd=spec.get("cwd"),
        env=_env(spec.get("env")) or (),
        enabled=spec.get("enabled", True),
        oauth=bool(spec.get("oauth", False)),
        shared=spec.get("shared"),
        linger=spec.get("linger"),
        listen=bool(spec.get("listen", False)),
        timeout=float(spec.get("timeout", Provider.timeout)),
    )


def uses(binding: Mapping[str, Any]) -> tuple[tuple[str, Settings], ...]:
    return tuple(sorted((str(p), settings(v)) for p, v in binding.items() if p not in RESERVED))


def _build(path: Path, data: Mapping[str, Any], environ: Mapping[str, str]) -> Model:
    providers = tuple(provider(name, spec) for name, spec in sorted(data["providers"].items()))
    bindings = tuple(
        sorted(
            (
                Binding(path=expand_path(str(raw), environ), uses=uses(binding), worktrees=bool(binding.get("worktrees")),
                        hooks=hook_rules.hooks_of(binding.get("hooks")))
                for raw, binding in (data.get("bindings") or {}).items()
            ),
            key=lambda b: b.path,
        )
    )
    clients = data.get("clients")
    return Model(
        source=path.absolute(),
        clients=tuple(str(c) for c in clients) if clients is not None else None,
        providers=providers,
        bindings=bindings,
        hooks=hook_rules.hooks_of(data.get("hooks")),
    )
