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
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from projector.core import locations, yamltext
from projector.core.errors import ModelError, Problem, display_path
from projector.core.reading import Unreadable, read_regular
from projector.core.resources import validator
from projector.core.variables import expand_folder

if TYPE_CHECKING:
    from projector.core.layers import Places

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

    @property
    def local(self) -> bool:
        return self.url is None

    def launch(self) -> Settings:
        """A local provider's own definition, as the base its bindings are laid over."""
        return Settings(enabled=self.enabled, command=self.command, args=self.args or None, cwd=self.cwd, env=self.env or None,
                        shared=self.shared, linger=self.linger)


@dataclass(frozen=True)
class Binding:
    path: str  # absolute, with ~ and $VAR expanded; made canonical where it is resolved
    uses: tuple[tuple[str, Settings], ...]  # (provider, what this folder says of it), sorted by provider
    worktrees: bool = False  # every git worktree of the repository is bound too
    repo: str | None = None  # a clone of the repository binding of this name (Model.repos)

    def settings(self, provider: str) -> Settings | None:
        return dict(self.uses).get(provider)


# Clone, Repo and Layer are NamedTuples, as immutable as a frozen dataclass: the bridge imports
# this module at every start, and a dataclass costs ~3.7M instructions to define, a NamedTuple ~0.8M.


class Clone(NamedTuple):
    """A clone of a repository binding's repository found on this machine, and why it matched."""

    path: str  # canonical
    remote: str  # the remote that matched: its name and URL as .git/config writes it
    root: str | None  # the root it was found under; None: a folder bound by path


class Repo(NamedTuple):
    """A binding by git remote (``repo: github.com/acme/api``): each clone found is bound."""

    name: str  # its key in the model
    repo: str  # the remote, normalised (core.repos)
    uses: tuple[tuple[str, Settings], ...]
    clones: tuple[Clone, ...]


class Layer(NamedTuple):
    """One file of the model (core.layers): the files it includes come before it; the model's own file is last."""

    path: str  # absolute, as the include named it
    sha256: str
    included_by: tuple[int, int] | None  # (the including layer's index, the include's index in its list); None: the model's file
    local: tuple[str, ...] = ()  # local providers it defines or gives settings to
    distrust: str | None = None  # why those do not run (an included layer not trusted with these bytes); None: they may


@dataclass(frozen=True)
class Model:
    source: Path
    clients: tuple[str, ...] | None  # None: the clients found on this machine
    providers: tuple[Provider, ...]  # sorted by name
    bindings: tuple[Binding, ...]  # sorted by path (a clone of a repository binding is one too)
    layers: tuple[Layer, ...] = ()  # in order; the model's own file last
    repos: tuple[Repo, ...] = ()
    watched: tuple[str, ...] = ()  # what else the model depends on: optional includes, globs' folders, the clones' folders and configs
    variables: tuple[str, ...] = ()  # variables the includes and roots name

    def provider(self, name: str) -> Provider | None:
        return next((p for p in self.providers if p.name == name), None)

    def bindings_of(self, provider: str) -> tuple[Binding, ...]:
        return tuple(b for b in self.bindings if b.settings(provider) is not None)

    def bound(self, provider: str) -> bool:
        """Whether a binding names ``provider``: by folder, or by repository (clones found or not)."""
        return bool(self.bindings_of(provider)) or any(dict(r.uses).get(provider) is not None for r in self.repos)

    def blocked(self, provider: str) -> str | None:
        """Why local provider ``provider`` must not run (an included layer that says something of
        it is not trusted with its current bytes); None: nothing stops it."""
        return next((layer.distrust for layer in self.layers if layer.distrust and provider in layer.local), None)

    def repo(self, name: str) -> Repo | None:
        return next((r for r in self.repos if r.name == name), None)


# --------------------------------------------------------------------------- locating the model


model_path = locations.model_path


# --------------------------------------------------------------------------- loading


def load(path: Path, environ: Mapping[str, str], known_clients: tuple[str, ...]) -> Model:
    from projector.core import layers

    return _build(path, layers.checked(path, environ, known_clients), environ)


def bridge_config(model: Model, environ: Mapping[str, str]) -> str | None:
    """The model's path for bridge entries, when it is not where the bridge looks by default."""
    if not model.source.is_absolute():
        return None  # a model made in code, not read from a file
    plain = {k: v for k, v in environ.items() if k != "PROJECTOR_CONFIG"}  # clients do not pass it on
    return None if model.source == locations.model_path(None, plain) else str(model.source)


def checked_text(text: str, shown: str, environ: Mapping[str, str], known_clients: tuple[str, ...], path: Path | None = None) -> Any:
    """A model's text (the file at ``path``, as it would be with this text), parsed and checked
    with the files it includes; ModelError with every problem's place."""
    from projector.core import layers

    return layers.checked(path or Path(shown), environ, known_clients, text)["data"]


def checked_yaml(text: str, shown: str, schema: str, semantic: Callable[[Any], list[Problem]]) -> Any:
    """Text parsed and checked by ``schema`` and then ``semantic``.

    A good file is read once with the fast (C) parser; the round-trip parser, which knows where
    every key and value stands, reads it again only when there is a problem to point at.
    """
    yamltext.screen(text, shown)
    quick = _quick_yaml(text)
    if quick is not None and not _schema_problems(quick, shown, schema) and not semantic(quick):
        return quick
    data = _parse_yaml(text, shown)
    problems = _schema_problems(data, shown, schema)
    if not problems:
        problems = semantic(data)
    if problems:
        raise ModelError(sorted(problems, key=lambda p: (p.line or 0, p.column or 0)))
    return data


CACHE_SCHEMA = 2


def cached(path: Path, environ: Mapping[str, str], known_clients: Callable[[], tuple[str, ...]], cache: Path,
           rescan: bool = False) -> Model:
    """``load``, answered from ``cache`` while every layer reads the same (see core.layers).

    The bridge starts once per client session; a checked model is kept as plain JSON so a start
    reads it with the standard library instead of validating YAML again. ``known_clients`` is
    only called when the model has to be checked. The clones of repository bindings are found
    when the model is checked, and again with ``rescan`` (the commands: a clone made since is
    bound from the next sync on); a bridge start never looks for them.
    """
    from projector import __version__
    from projector.core.cache import kept_while, store

    def check() -> dict[str, Any]:
        from projector.core import layers

        return layers.checked(path, environ, known_clients())

    version = [__version__, CACHE_SCHEMA]
    entry = kept_while(cache, version, lambda kept: _still(kept, path, environ), check)
    if rescan and any("repo" in b for b in (entry["data"].get("bindings") or {}).values()):
        from projector.core import layers

        found = layers.clones(entry["data"], environ)
        if found != entry["clones"]:
            entry = {**entry, "clones": found}
            store(cache, version, entry)
    try:
        return _build(path, entry, environ)
    except KeyError:  # checked in another environment, where a variable a binding names was set
        return _build(path, check(), environ)


_home = locations.home
MAX_BYTES = 64 * 1024 * 1024  # far beyond any model; a device or a runaway file is not one


def _read_layer(path: str, shown: str) -> str | None:
    """A model file's text; None when there is none."""
    try:
        raw = read_regular(path, MAX_BYTES)
    except Unreadable as reason:
        raise ModelError(Problem(shown, None, None, f"cannot read the model: {reason}")) from None
    return None if raw is None else yamltext.decoded(raw, shown)


def _text_or_none(path: str) -> str | None:
    try:
        raw = read_regular(path, MAX_BYTES)
        return None if raw is None else raw.decode("utf-8")
    except (Unreadable, UnicodeDecodeError):
        return "\0unreadable"  # never equal to a text that was read


def _still(entry: Mapping[str, Any], path: Path, environ: Mapping[str, str]) -> bool:
    """Whether a kept check still holds (the bridge asks at every start): the same model, every
    variable an include names the same, every glob the same matches and every file read (or
    looked for) the same text. core.layers is not imported for it."""
    if entry.get("root") != str(path) or any(environ.get(name) != value for name, value in entry["variables"]):
        return False
    if entry["globs"]:
        import glob

        if any(sorted(m for m in glob.glob(pattern) if os.path.isfile(m)) != matches for pattern, matches in entry["globs"]):
            return False
    return all(_stat_key(file) == stat or _text_or_none(file) == text for file, text, stat in entry["files"])


def _stat_key(path: str) -> list[int] | None:
    """What an edit cannot keep (core.cache): while it is the same, the text is; when it moved
    (a checkout rewriting the file), the text is compared."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_ino, info.st_ctime_ns, info.st_mtime_ns, info.st_size]


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


def _schema_problems(data: Any, shown: str, schema: str = "model") -> list[Problem]:
    return [_schema_problem(data, shown, error) for error in validator(schema).iter_errors(data)]


def _schema_problem(data: Any, shown: str, error: Any) -> Problem:
    path = tuple(error.absolute_path)
    validator, instance = error.validator, error.instance
    if validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extras = sorted(set(instance) - set(allowed))
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        return problem(data, shown, path + (extras[0],), f"unknown key{hint}; remove it or fix its spelling", key=True)
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
        return problem(
            data, shown, path, f"{shown_value} is not a variable name: give the NAME of the variable that holds the token"
        )
    return problem(
        data, shown, path, f'{shown_value} is not a usable KB name: use letters, digits, ".", "-" and "_" (no commas)'
    )


def _quoted(value: Any) -> str:
    """A value in a message: quoted, with a newline or a control character shown as an escape."""
    import json

    return json.dumps(value, ensure_ascii=False)


# --------------------------------------------------------------------------- semantic pass

expand_path = expand_folder


REMOTE_KEYS = ("url", "token_env", "oauth", "kbs", "default")
LOCAL_KEYS = ("command", "args", "cwd", "env", "shared", "linger")
REMOTE_SETTINGS = ("kbs", "enabled")  # what a workspace may change of a remote provider
RESERVED = ("worktrees", "providers", "repo", "remove")  # keys of a binding or project file that are not providers


def _semantic_problems(
    data: Mapping[str, Any], places: Places, environ: Mapping[str, str], known_clients: tuple[str, ...]
) -> list[Problem]:
    problems: list[Problem] = []
    for index, client in enumerate(data.get("clients") or []):
        if client not in known_clients:
            problems.append(places.problem(("clients", index), f'unknown client "{client}" (known: {", ".join(known_clients)})'))
    for index, raw in enumerate(data.get("roots") or []):
        problems += _folder_problems(places, ("roots", index), str(raw), environ, "a root is a folder", key=False)
    providers = data.get("providers") or {}
    problems += _provider_problems(places, providers)
    seen_paths: dict[str, str] = {}
    seen_repos: dict[str, str] = {}
    for raw_path, binding in (data.get("bindings") or {}).items():
        if "repo" in binding:
            problems += _repo_problems(places, str(raw_path), binding, seen_repos)
        else:
            problems += _binding_path_problems(places, str(raw_path), environ, seen_paths)
        problems += use_problems(places, ("bindings", raw_path), binding, providers)
    return problems


def _provider_problems(places: Places, providers: Mapping[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    for name, provider in providers.items():
        at = ("providers", name)
        if name in RESERVED:
            problems.append(places.problem(at, f'"{name}" is a reserved word in bindings; give the provider another name', key=True))
        if ("url" in provider) == ("command" in provider):
            problems.append(places.problem(at, 'give either "url" (a remote provider) or "command" (a local one)', key=True))
            continue
        kind, foreign = ("remote", LOCAL_KEYS) if "url" in provider else ("local", REMOTE_KEYS)
        problems += _url_problems(places, at, provider.get("url"))
        for key in (k for k in provider if k in foreign):
            problems.append(places.problem(at + (key,), f'"{key}" is not a setting of a {kind} provider; remove it', key=True))
        if provider.get("oauth") and "token_env" in provider:
            problems.append(places.problem(at + ("oauth",), 'give either "token_env" (a token variable) or "oauth: true" (the client signs in), not both', key=True))
        mounted = provider.get("kbs")
        for index, kb in enumerate(provider.get("default") or []):
            if mounted is not None and kb not in mounted:
                problems.append(_unmounted(places, at + ("default", index), kb, name, mounted))
    return problems


def _url_problems(places: Places, at: tuple[Any, ...], url: Any) -> list[Problem]:
    from projector.core.scope import kbs_in_url

    own = kbs_in_url(url) if isinstance(url, str) else None
    if own is None:
        return []
    return [places.problem(at + ("url",), f'the URL sets "{own}" itself, but projector sets kbs for each folder: '
                           "take it out of the URL and say default: [...] (what folders under no binding see)")]


def use_problems(places: Places, where: tuple[Any, ...], binding: Mapping[str, Any], providers: Mapping[str, Any],
                 reserved: tuple[str, ...] = RESERVED) -> list[Problem]:
    """What one binding (or project file) says of each provider, checked against the providers;
    ``reserved``: its keys that are not providers."""
    problems: list[Problem] = []
    for provider_name, value in binding.items():
        at = where + (provider_name,)
        if provider_name in reserved:
            continue
        if provider_name not in providers:
            known = ", ".join(sorted(providers)) or "none"
            problems.append(places.problem(at, f'no provider named "{provider_name}" (providers: {known})', key=True))
            continue
        spec = providers[provider_name]
        local = "command" in spec
        if local and isinstance(value, list):
            problems.append(places.problem(at, f'"{provider_name}" is a local provider: give settings (a mapping such as {{enabled: true}}), not a KB list'))
            continue
        settings = value if isinstance(value, Mapping) else {"kbs": value}
        for key in settings:
            if (local and key == "kbs") or (not local and key not in REMOTE_SETTINGS):
                kind, allowed = ("local", "everything but kbs") if local else ("remote", "kbs and enabled")
                problems.append(places.problem(at + (key,), f'"{key}" is not a setting of {kind} provider "{provider_name}" (it takes {allowed})', key=True))
        mounted = spec.get("kbs")
        for index, kb in enumerate(settings.get("kbs") or []):
            if mounted is not None and kb not in mounted:
                path = at + (index,) if isinstance(value, list) else at + ("kbs", index)
                problems.append(_unmounted(places, path, kb, provider_name, mounted))
    return problems


def _unmounted(places: Places, path: tuple[Any, ...], kb: str, provider: str, mounted: list[str]) -> Problem:
    mounts = ", ".join(sorted(mounted)) or "nothing"
    return places.problem(path, f'"{kb}" is not a KB of provider "{provider}" (it mounts: {mounts})')


def _folder_problems(places: Places, where: tuple[Any, ...], raw: str, environ: Mapping[str, str], what: str, key: bool) -> list[Problem]:
    try:
        path = expand_path(raw, environ)
    except KeyError as unset:
        return [places.problem(where, f"${unset.args[0]} is not set in this environment; set it or write the folder out", key=key)]
    if not path.startswith("/"):
        return [places.problem(where, f"{what} given as an absolute path or one under ~", key=key)]
    return []


def _binding_path_problems(places: Places, raw: str, environ: Mapping[str, str], seen: dict[str, str]) -> list[Problem]:
    from projector.core import layers

    where = ("bindings", raw)
    if not layers.is_folder(raw):
        return [places.problem(where, "a binding is a folder given as an absolute path or one under ~, or a repository "
                               "binding: a name with repo: <its git remote>", key=True)]
    problems = _folder_problems(places, where, raw, environ, "a binding is a folder", key=True)
    if problems:
        return problems
    path = expand_path(raw, environ)
    if path in seen:
        return [places.problem(where, f'the same folder as "{seen[path]}"{_elsewhere(places, where, seen[path])}; merge the two bindings', key=True)]
    real = os.path.realpath(path)  # where a session's folder is compared with it
    if real in seen:
        return [places.problem(where, f'the same folder as "{seen[real]}"{_elsewhere(places, where, seen[real])} (through a symlink: '
                               f"both are {real}); merge the two bindings", key=True)]
    seen[path] = seen[real] = raw
    return []


def _elsewhere(places: Places, where: tuple[Any, ...], other: str) -> str:
    """`` (file:line:col)`` of binding ``other`` when it is in another layer than ``where``'s."""
    here, there = places.at(where, key=True), places.at(("bindings", other), key=True)
    return "" if here.rsplit(":", 2)[0] == there.rsplit(":", 2)[0] else f" ({there})"


def _repo_problems(places: Places, raw: str, binding: Mapping[str, Any], seen: dict[str, str]) -> list[Problem]:
    from projector.core import layers

    from projector.core.repos import normalise

    where = ("bindings", raw)
    if layers.is_folder(raw):
        return [places.problem(where, "a repository binding is named, not placed: give it a name (its clones are found "
                               "under your roots), or bind the folder without repo:", key=True)]
    repo = normalise(str(binding["repo"]))
    if repo is None:
        return [places.problem(where + ("repo",), f'{_quoted(binding["repo"])} is not a git remote: write it as '
                               "host/owner/name (github.com/acme/api) or as git prints it (git@github.com:acme/api.git)")]
    if repo in seen:
        return [places.problem(where + ("repo",), f'the same repository as binding "{seen[repo]}" ({places.at(("bindings", seen[repo]), key=True)}); '
                               "merge the two bindings")]
    seen[repo] = raw
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
    )


def uses(binding: Mapping[str, Any]) -> tuple[tuple[str, Settings], ...]:
    return tuple(sorted((str(p), settings(v)) for p, v in binding.items() if p not in RESERVED))


def _build(path: Path, entry: Mapping[str, Any], environ: Mapping[str, str]) -> Model:
    """The Model of a checked entry (core.layers.checked); KeyError when a variable a binding names is unset here."""
    data = entry["data"]
    providers = tuple(provider(name, spec) for name, spec in sorted((data.get("providers") or {}).items()))
    found = entry["clones"]["found"]
    folders: list[Binding] = []
    repos: list[Repo] = []
    for raw, binding in (data.get("bindings") or {}).items():
        if "repo" not in binding:
            folders.append(Binding(path=expand_path(str(raw), environ), uses=uses(binding), worktrees=bool(binding.get("worktrees"))))
            continue
        from projector.core.repos import normalise

        clones = tuple(Clone(*clone) for clone in found.get(raw, ()))
        repos.append(Repo(str(raw), normalise(binding["repo"]) or "", uses(binding), clones))
    bindings = _with_clones(folders, repos, data.get("bindings") or {})
    clients = data.get("clients")
    kept = entry["layers"]
    needing = [layer for layer in kept[:-1] if layer["local"]]
    standing = _layer_trust(needing, environ) if needing else {}
    return Model(
        source=path.absolute(),
        clients=tuple(str(c) for c in clients) if clients is not None else None,
        providers=providers,
        bindings=bindings,
        layers=tuple(Layer(k["path"], k["sha256"], tuple(k["by"]) if k["by"] else None, tuple(k["local"]), standing.get(k["path"]))
                     for k in kept),
        repos=tuple(repos),
        watched=tuple(sorted({file for file, text, _ in entry["files"] if text is None}
                             | {os.path.dirname(_fixed_part(pattern)) for pattern, _ in entry["globs"]}
                             | set(entry["clones"]["watched"]))),
        variables=tuple(sorted({name for name, _ in entry["variables"]} | _named_variables(data.get("roots") or []))),
    )


def _with_clones(folders: list[Binding], repos: list[Repo], raw: Mapping[str, Any]) -> tuple[Binding, ...]:
    """The folder bindings, and one binding at each clone of a repository binding (worktrees
    included unless it says ``worktrees: false``); a folder binding at a clone is laid over it."""
    clones: dict[str, Binding] = {}
    for repo in repos:
        worktrees = raw[repo.name].get("worktrees", True)
        for clone in repo.clones:
            earlier = clones.get(clone.path)
            said = dict(earlier.uses) if earlier else {}
            said.update(repo.uses)  # two repositories matching one clone: the later name's settings win
            clones[clone.path] = Binding(clone.path, tuple(sorted(said.items())), bool(worktrees), repo.name)
    if not clones:
        return tuple(sorted(folders, key=lambda b: b.path))
    bindings = []
    for binding in folders:
        clone = clones.pop(os.path.realpath(binding.path), None)
        if clone is not None:
            merged = {name: settings.over(clone.settings(name) or Settings()) for name, settings in binding.uses}
            binding = replace(binding, uses=tuple(sorted({**dict(clone.uses), **merged}.items())),
                              worktrees=binding.worktrees or clone.worktrees, repo=clone.repo)
        bindings.append(binding)
    return tuple(sorted(bindings + list(clones.values()), key=lambda b: b.path))


def _fixed_part(pattern: str) -> str:
    """The part of a glob before its first wildcard (its folder is what changes when a match comes or goes)."""
    found = re.search(r"[*?[]", pattern)
    return pattern if found is None else pattern[: found.start()]


def _named_variables(raws: Any) -> set[str]:
    return {m.group(1) or m.group(2) for raw in raws for m in re.finditer(r"\$(\w+)|\$\{(\w+)\}", str(raw))}


def _layer_trust(needing: list[Mapping[str, Any]], environ: Mapping[str, str]) -> dict[str, str]:
    """Why each included layer that declares local servers is not trusted with its bytes (absent: it is)."""
    from projector.core.projects import layers_distrust

    return layers_distrust([(layer["path"], layer["sha256"], layer["local"]) for layer in needing], environ)
