"""The user's model (``projector.yaml``): load, validate, and turn into frozen records (core.record).

Validation happens in two passes. The JSON Schema (``schemas/model.schema.json``, also usable by
editors) checks shapes; the semantic pass checks what a schema cannot: binding paths, references
to providers, KBs a provider does not mount. Every problem carries the file, line and column of
the offending key or value, found through ruamel.yaml's round-trip positions.
"""

from __future__ import annotations

import os
import re
from collections import namedtuple
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path

from projector.core.record import Record, fields, replace

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from typing import Any

    from projector.core.layers import Places

from projector.core import hooks as hook_rules
from projector.core import locations
from projector.core.cache import stat_key
from projector.core.errors import ModelError, Problem, did_you_mean, display_path
from projector.core.reading import Unreadable, read_regular
from projector.core.resources import validator
from projector.core.variables import expand_folder

KbSet = tuple[str, ...] | None
"""Which knowledge bases a session sees: None = all (no ``kbs`` parameter), () = none."""

Env = tuple[tuple[str, str | None], ...]
"""Variables in order: a value (``${VAR}`` expanded when the server starts) or None (unset)."""


class Settings(Record):
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
        return tuple(name for name in fields(self) if getattr(self, name) is not None)

    def over(self, base: Settings) -> Settings:
        """These settings laid over ``base``: each said value replaces, ``env`` merges by name."""
        merged = {name: getattr(self, name) for name in self.said()}
        if self.env is not None and base.env is not None:
            merged["env"] = tuple(dict(base.env, **dict(self.env)).items())
        return replace(base, **merged)


class Provider(Record):
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
    insecure: bool = False  # remote: its token may go over plain http:// to a host that is not this machine

    @property
    def local(self) -> bool:
        return self.url is None

    def launch(self) -> Settings:
        """A local provider's own definition, as the base its bindings are laid over."""
        return Settings(enabled=self.enabled, command=self.command, args=self.args or None, cwd=self.cwd, env=self.env or None,
                        shared=self.shared, linger=self.linger)


class Binding(Record):
    """A folder and what it says of each provider there."""

    path: str  # absolute, with ~ and $VAR expanded; made canonical where it is resolved
    uses: tuple[tuple[str, Settings], ...]  # (provider, what this folder says of it), sorted by provider
    worktrees: bool = False  # every git worktree of the repository is bound too
    hooks: tuple[hook_rules.Hook, ...] = ()  # what this folder says of hooks (core.hooks)
    repo: str | None = None  # a clone of the repository binding of this name (Model.repos)
    distrust: str | None = None  # a clone not trusted (by its folder, as a clone of that repository): why what the binding runs does not run there

    def settings(self, provider: str) -> Settings | None:
        return dict(self.uses).get(provider)


# Clone, Repo and Layer are named tuples (collections.namedtuple: typing.NamedTuple would import
# typing): as immutable as a record, and the model's cache holds them as JSON arrays.

Clone = namedtuple("Clone", "path remote root")
"""A clone of a repository binding's repository found on this machine, and why it matched:
``path`` canonical; ``remote`` the remote that matched, its name and URL as .git/config writes
it; ``root`` the root it was found under (None: a folder bound by path)."""

Repo = namedtuple("Repo", "name repo uses clones hooks", defaults=((),))
"""A binding by git remote (``repo: github.com/acme/api``): each clone found is bound. ``name``
its key in the model; ``repo`` the remote, normalised (core.repos); ``uses`` and ``hooks`` what
it says; ``clones`` the Clones found."""

Layer = namedtuple("Layer", "path sha256 included_by local hooks distrust remote", defaults=((), (), None, ()))
"""One file of the model (core.layers): the files it includes come before it; the model's own
file is last. ``path`` absolute, as the include named it; ``included_by`` (the including
layer's index, the include's index in its list), None for the model's file; ``local`` the local
providers and ``hooks`` the hooks it defines or gives settings to; ``remote`` the token-carrying
remote providers whose url or token it gives; ``distrust`` why those do not run (and those
remote ones are left out: an included layer not trusted with these bytes), None: they may."""


class Model(Record):
    """The checked model."""

    source: Path
    clients: tuple[str, ...] | None  # None: the clients found on this machine
    providers: tuple[Provider, ...]  # sorted by name
    bindings: tuple[Binding, ...]  # sorted by path (a clone of a repository binding is one too)
    hooks: tuple[hook_rules.Hook, ...] = ()  # for every folder, in the model's order (core.hooks)
    layers: tuple[Layer, ...] = ()  # in order; the model's own file last
    repos: tuple[Repo, ...] = ()
    watched: tuple[str, ...] = ()  # what else the model depends on: optional includes, globs' folders, the clones' folders and configs
    variables: tuple[str, ...] = ()  # variables the includes and roots name
    withheld: tuple[Provider, ...] = ()  # token-carrying remote providers left out: a layer that placed their url or token is not trusted

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

    def bound(self, provider: str) -> bool:
        """Whether a binding names ``provider``: by folder, or by repository (clones found or not)."""
        return bool(self.bindings_of(provider)) or any(dict(r.uses).get(provider) is not None for r in self.repos)

    def blocked(self, provider: str) -> str | None:
        """Why local provider ``provider`` must not run (an included layer that says something of
        it is not trusted with its current bytes); None: nothing stops it."""
        return next((layer.distrust for layer in self.layers if layer.distrust and provider in layer.local), None)

    def hook_blocked(self, name: str) -> str | None:
        """Why hook ``name`` must not run, in any folder (an included layer that defines it, or
        says something of it, is not trusted with its current bytes); None: nothing stops it."""
        return next((layer.distrust for layer in self.layers if layer.distrust and name in layer.hooks), None)

    def left_out(self, name: str) -> str | None:
        """Why remote provider ``name`` is left out (a layer that decides where its token goes is
        not trusted with its current bytes); None: it is not."""
        return next((layer.distrust for layer in self.layers if layer.distrust and name in layer.remote), None)

    def repo(self, name: str) -> Repo | None:
        return next((r for r in self.repos if r.name == name), None)


# --------------------------------------------------------------------------- locating the model


model_path = locations.model_path


# --------------------------------------------------------------------------- loading


def load(path: Path, environ: Mapping[str, str], known_clients: tuple[str, ...]) -> Model:
    from projector.core import layers

    return _build(path, layers.checked(path, environ, known_clients), environ)


def checked_text(text: str, path: Path, environ: Mapping[str, str], known_clients: tuple[str, ...]) -> Any:
    """A model's text (the file at ``path``, as it would be with this text: its includes are
    found from there), parsed and checked with the files it includes; ModelError with every
    problem's place."""
    from projector.core import layers

    return layers.checked(path, environ, known_clients, text)["data"]


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


CACHE_SCHEMA = 4  # what a kept check holds (core.layers.checked): 3 adds each layer's hooks, 4 its token-carrying providers


def cached(path: Path, environ: Mapping[str, str], known_clients: Callable[[], tuple[str, ...]], cache: Path,
           rescan: bool = False) -> Model:
    """``load``, answered from ``cache`` while every layer reads the same (each file's stat, or
    failing that its bytes: see ``_still``) and the clients the model names are still known.

    The bridge starts once per client session and a sync follows every edit the shell hook sees;
    a checked model is kept as plain JSON (a checkout or an editor that rewrites a layer
    unchanged costs nothing), so they read it with the standard library instead of parsing and
    validating YAML again. ``known_clients`` is called only when the model has to be checked or
    names its clients. The clones of repository bindings are found when the model is checked,
    and again with ``rescan`` (the commands: a clone made since is bound from the next sync on);
    a bridge start never looks for them.
    """
    from projector import __version__
    from projector.core.cache import kept_while, store

    def check() -> dict[str, Any]:
        from projector.core import layers

        return layers.checked(path, environ, known_clients())

    version = [__version__, CACHE_SCHEMA]
    entry = kept_while(cache, version, lambda kept: _still(kept, path, environ), check)
    if entry["root"] != str(path):  # the same bytes at another path, including nothing (_still)
        entry = _moved(entry, path)
        store(cache, version, entry)
    named = entry["data"].get("clients")
    if named and not set(named) <= set(known_clients()):
        entry = check()  # a descriptor it names was removed since: that error, at its place
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
    if raw is None:
        return None
    from projector.core import yamltext

    return yamltext.decoded(raw, shown)


def _text_or_none(path: str) -> str | None:
    try:
        raw = read_regular(path, MAX_BYTES)
        return None if raw is None else raw.decode("utf-8")
    except (Unreadable, UnicodeDecodeError):
        return "\0unreadable"  # never equal to a text that was read


def _still(entry: Mapping[str, Any], path: Path, environ: Mapping[str, str]) -> bool:
    """Whether a kept check still holds (the bridge asks at every start): the same model, every
    variable an include names the same, every glob the same matches and every file read (or
    looked for) the same text: a file whose stat (taken before it was read) is the same is, and
    one whose stat moved (rewritten, touched) is read and compared. A model that includes
    nothing is the same model at another path with the same bytes (a harness, a copied dotfile).
    core.layers is not imported for it."""
    if entry.get("root") != str(path):
        if entry["variables"] or entry["globs"] or len(entry["files"]) != 1 or _text_or_none(str(path.absolute())) != entry["files"][0][1]:
            return False
        return True  # cached() re-roots it (_moved)
    if any(environ.get(name) != value for name, value in entry["variables"]):
        return False
    if entry["globs"]:
        import glob

        if any(sorted(m for m in glob.glob(pattern) if os.path.isfile(m)) != matches for pattern, matches in entry["globs"]):
            return False
    return all(stat_key(file) == stat or _text_or_none(file) == text for file, text, stat in entry["files"])


def _moved(entry: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """A kept check of a model that includes nothing, for the same bytes at ``path``. The stat is
    taken after the bytes were compared: an edit in between leaves a key that stat and text
    both fail, so the next start checks again."""
    file = str(path.absolute())
    stat = stat_key(file)
    if _text_or_none(file) != entry["files"][0][1]:
        stat = None
    root_layer = {**entry["layers"][-1], "path": file}
    return {**entry, "root": str(path), "files": [[file, entry["files"][0][1], stat]], "layers": [root_layer]}


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


REMOTE_KEYS = ("url", "token_env", "oauth", "kbs", "default", "listen", "timeout", "insecure")
LOCAL_KEYS = ("command", "args", "cwd", "env", "shared", "linger")
REMOTE_SETTINGS = ("kbs", "enabled")  # what a workspace may change of a remote provider
RESERVED = ("worktrees", "providers", "hooks", "repo", "remove")  # keys of a binding or project file that are not providers


def _semantic_problems(
    data: Mapping[str, Any], places: Places, environ: Mapping[str, str], known_clients: tuple[str, ...]
) -> list[Problem]:
    problems: list[Problem] = []
    for index, client in enumerate(data.get("clients") or []):
        if client not in known_clients:
            problems.append(places.problem(("clients", index),
                                           f'unknown client "{client}"{did_you_mean(client, known_clients)} (known: {", ".join(known_clients)})'))
    for index, raw in enumerate(data.get("roots") or []):
        problems += _folder_problems(places, ("roots", index), str(raw), environ, "a root is a folder", key=False)
    providers = data.get("providers") or {}
    problems += _provider_problems(places, providers)
    problems += [
        places.problem(("providers", name, "token_env"), message)
        for name, spec in providers.items()
        if (message := pasted_token(str(spec.get("token_env") or ""), str(name)))
    ]
    seen_paths: dict[str, str] = {}
    seen_repos: dict[str, str] = {}
    bindings = data.get("bindings") or {}
    defined = defined_hooks([data.get("hooks"), *(b.get("hooks") for b in bindings.values())])
    problems += hook_problems(places, ("hooks",), data.get("hooks"), defined, top=True)
    for raw_path, binding in bindings.items():
        if "repo" in binding:
            problems += _repo_problems(places, str(raw_path), binding, seen_repos)
        else:
            problems += _binding_path_problems(places, str(raw_path), environ, seen_paths)
        problems += use_problems(places, ("bindings", raw_path), binding, providers)
        problems += hook_problems(places, ("bindings", raw_path, "hooks"), binding.get("hooks"), defined)
    return problems


def defined_hooks(places: list[Any]) -> set[str]:
    """The names of the hooks defined (with a command) in these places' ``hooks``."""
    return {str(name) for hooks in places for name, spec in (hooks or {}).items() if "command" in spec}


def hook_problems(places: Places, where: tuple[Any, ...], hooks: Mapping[str, Any] | None, defined: set[str],
                  top: bool = False) -> list[Problem]:
    """What the schema cannot say of the hooks at ``where``: events, matchers, and switches that
    name a hook defined somewhere (``defined``). ``top``: the model's own hooks (its layers
    merged), each a definition: a layer may give some keys of a hook another layer defines, but
    together they must say its event and command."""
    problems: list[Problem] = []
    for name, spec in (hooks or {}).items():
        at = where + (name,)
        missing = [key for key in ("event", "command") if key not in spec] if top else []
        if missing:
            problems.append(places.problem(at, f'missing "{missing[0]}": a hook here is a definition (give its event and command), '
                                           "or settings for a hook an earlier layer defines"))
            continue
        if "command" not in spec:
            extra = [key for key in spec if key != "enabled"]
            if extra:
                problems.append(places.problem(at + (extra[0],), f'"{extra[0]}" needs a command here: a hook without one only '
                                               "turns an inherited hook off or on (enabled: false / true)", key=True))
            elif "enabled" not in spec:
                problems.append(places.problem(at, "an empty hook: give it a command (a new definition), or enabled: false / true "
                                               "(turn an inherited hook off or on)"))
            elif name not in defined:
                problems.append(places.problem(at, f'no hook named "{name}" to turn on or off (hooks: {", ".join(sorted(defined)) or "none"})', key=True))
            continue
        event = spec["event"]
        if event not in hook_rules.EVENTS:
            problems.append(places.problem(at + ("event",), f'unknown event "{event}" (events: {", ".join(hook_rules.EVENTS)})'))
            continue
        matcher = spec.get("matcher")
        if matcher is not None and hook_rules.EVENTS[event] is None:
            problems.append(places.problem(at + ("matcher",), f"{event} hooks take no matcher (they run on every {event}); remove it", key=True))
        elif matcher and matcher != "*" and not hook_rules.simple_matcher(matcher):
            try:
                re.compile(matcher)
            except re.error as exc:
                problems.append(places.problem(at + ("matcher",), f"{_quoted(matcher)} is not a regular expression ({exc}); "
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


def _provider_problems(places: Places, providers: Mapping[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    folded: dict[str, str] = {}  # a name in lower case -> the first provider named so
    for name, provider in providers.items():
        at = ("providers", name)
        first = folded.setdefault(str(name).casefold(), str(name))
        if first != name:
            problems.append(places.problem(at, f'"{first}" ({places.at(("providers", first), key=True)}) and "{name}" differ only in '
                                           "case, and a client that folds case (Goose) takes them for one provider: rename one", key=True))
        if name in RESERVED:
            problems.append(places.problem(at, f'"{name}" is a reserved word in bindings; give the provider another name', key=True))
        if ("url" in provider) == ("command" in provider):
            problems.append(places.problem(at, 'give either "url" (a remote provider) or "command" (a local one)', key=True))
            continue
        kind, foreign = ("remote", LOCAL_KEYS) if "url" in provider else ("local", REMOTE_KEYS)
        problems += _url_problems(places, at, provider.get("url"))
        problems += _clear_text_problems(places, at, provider)
        for key in (k for k in provider if k in foreign):
            problems.append(places.problem(at + (key,), f'"{key}" is not a setting of a {kind} provider; remove it', key=True))
        if provider.get("oauth") and "token_env" in provider:
            problems.append(places.problem(at + ("oauth",), 'give either "token_env" (a token variable) or "oauth: true" (the client signs in), not both', key=True))
        mounted = provider.get("kbs")
        for index, kb in enumerate(provider.get("default") or []):
            if mounted is not None and kb not in mounted:
                problems.append(_unmounted(places, at + ("default", index), kb, name, mounted))
    return problems


URL_VARIABLE = re.compile(r"\$\{?[A-Za-z_]|\{env:")  # ${VAR}, $VAR, {env:VAR} (OpenCode's spelling)


def _url_problems(places: Places, at: tuple[Any, ...], url: Any) -> list[Problem]:
    from projector.core.scope import kbs_in_url

    if not isinstance(url, str):
        return []
    reference = URL_VARIABLE.search(url)
    if reference is not None:
        return [places.problem(at + ("url",), f"{_quoted(url)} refers to a variable ({reference.group(0)}...), which clients "
                               "copy as written or expand on their own terms (a variable would decide where the token goes): "
                               "write the URL out, and give a token as token_env")]
    own = kbs_in_url(url)
    if own is None:
        return []
    return [places.problem(at + ("url",), f'the URL sets "{own}" itself, but projector sets kbs for each folder: '
                           "take it out of the URL and say default: [...] (what folders under no binding see)")]


def loopback(host: str) -> bool:
    """Whether ``host`` (from a URL) is this machine: localhost, 127.0.0.0/8 or ::1."""
    import ipaddress

    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def clear_text_host(provider: Provider | Mapping[str, Any]) -> str | None:
    """The host a provider's token would reach over plain http:// (not this machine); None: it
    has no token, or it is sent over TLS or only to loopback."""
    from urllib.parse import urlsplit

    get = provider.get if isinstance(provider, Mapping) else lambda key: getattr(provider, key, None)
    url = get("url")
    if not isinstance(url, str) or not (get("token_env") or get("oauth")) or not url.lower().startswith("http://"):
        return None
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return None
    return None if loopback(host) else host


def _clear_text_problems(places: Places, at: tuple[Any, ...], provider: Mapping[str, Any]) -> list[Problem]:
    host = clear_text_host(provider)
    if host is None or provider.get("insecure"):
        return []
    token = f"${provider['token_env']}" if provider.get("token_env") else "its OAuth token"
    return [places.problem(at + ("url",), f"plain http:// would send {token} in clear to {host} (the MCP authorization spec "
                           "allows http:// only to this machine): use https://, or say insecure: true if you accept that")]


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
            guess = did_you_mean(provider_name, providers)
            problems.append(places.problem(at, f'no provider named "{provider_name}"{guess} (providers: {known})', key=True))
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
    return places.problem(path, f'"{kb}" is not a KB of provider "{provider}"{did_you_mean(kb, mounted)} (it mounts: {mounts})')


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
        listen=bool(spec.get("listen", False)),
        timeout=float(spec.get("timeout", Provider.timeout)),
        insecure=bool(spec.get("insecure", False)),
    )


def uses(binding: Mapping[str, Any]) -> tuple[tuple[str, Settings], ...]:
    return tuple(sorted((str(p), settings(v)) for p, v in binding.items() if p not in RESERVED))


def _build(path: Path, entry: Mapping[str, Any], environ: Mapping[str, str]) -> Model:
    """The Model of a checked entry (core.layers.checked); KeyError when a variable a binding names is unset here."""
    data = entry["data"]
    kept = entry["layers"]
    needing = [layer for layer in kept[:-1] if layer["local"] or layer["hooks"] or layer.get("remote")]
    standing = _layer_trust(needing, data.get("providers") or {}, environ) if needing else {}
    left_out = {name for layer in needing if layer["path"] in standing for name in layer.get("remote", ())}
    every = tuple(provider(name, spec) for name, spec in sorted((data.get("providers") or {}).items()))
    providers = tuple(p for p in every if p.name not in left_out)
    found = entry["clones"]["found"]
    folders: list[Binding] = []
    repos: list[Repo] = []
    for raw, binding in (data.get("bindings") or {}).items():
        said = hook_rules.hooks_of(binding.get("hooks"))
        if "repo" not in binding:
            folders.append(Binding(path=expand_path(str(raw), environ), uses=uses(binding), worktrees=bool(binding.get("worktrees")),
                                   hooks=said))
            continue
        from projector.core.repos import normalise

        clones = tuple(Clone(*clone) for clone in found.get(raw, ()))
        repos.append(Repo(str(raw), normalise(binding["repo"]) or "", uses(binding), clones, said))
    distrust = _clone_trust(repos, data, environ)
    bindings = _with_clones(folders, repos, data.get("bindings") or {}, distrust)
    clients = data.get("clients")
    return Model(
        source=path.absolute(),
        clients=tuple(str(c) for c in clients) if clients is not None else None,
        providers=providers,
        bindings=bindings,
        hooks=hook_rules.hooks_of(data.get("hooks")),
        layers=tuple(Layer(k["path"], k["sha256"], tuple(k["by"]) if k["by"] else None, tuple(k["local"]), tuple(k["hooks"]),
                           standing.get(k["path"]), tuple(k.get("remote", ())))
                     for k in kept),
        repos=tuple(repos),
        watched=tuple(sorted({file for file, text, _ in entry["files"] if text is None}
                             | {os.path.dirname(_fixed_part(pattern)) for pattern, _ in entry["globs"]}
                             | set(entry["clones"]["watched"]))),
        variables=tuple(sorted({name for name, _ in entry["variables"]} | _named_variables(data.get("roots") or []))),
        withheld=tuple(p for p in every if p.name in left_out),
    )


def runs_something(binding: Mapping[str, Any], providers: Mapping[str, Any]) -> bool:
    """Whether a binding's settings run something: a local provider's settings beyond turning it
    off, or a hook beyond turning one off (narrowing runs nothing)."""
    for name, value in binding.items():
        if name == "hooks":
            if any("command" in spec or spec.get("enabled") is not False for spec in (value or {}).values()):
                return True
        elif name not in RESERVED and "command" in (providers.get(name) or {}) and isinstance(value, Mapping):
            if any(key != "enabled" or said is not False for key, said in value.items()):
                return True
    return False


def _clone_trust(repos: list[Repo], data: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """Why what a repository binding runs does not run at each of its clones that is not trusted
    (by its folder, as a clone of that repository): the clone was found by what its own
    .git/config says, which anyone who can write a folder under a root can say."""
    raw, providers = data.get("bindings") or {}, data.get("providers") or {}
    running = [(repo, clone) for repo in repos if runs_something(raw[repo.name], providers) for clone in repo.clones]
    if not running:
        return {}
    from projector.core.errors import display_path
    from projector.core.projects import clone_standing

    standing = clone_standing([(clone.path, repo.repo) for repo, clone in running], environ)
    reasons: dict[str, str] = {}
    for repo, clone in running:
        state = standing.get(clone.path)
        if state is None:
            continue
        shown = display_path(clone.path, _home(environ))
        found = f"under root {display_path(clone.root, _home(environ))}" if clone.root else "at a folder a binding names"
        reasons[clone.path] = (f"{shown} ({found}) says it is a clone of {repo.repo} (remote {clone.remote}) and {state}, so "
                               f"binding {repo.name} runs nothing there (local servers, hooks, env files, direnv): review "
                               f"that folder, then run `projector trust {shown}`")
    return reasons


def _with_clones(folders: list[Binding], repos: list[Repo], raw: Mapping[str, Any], distrust: Mapping[str, str]) -> tuple[Binding, ...]:
    """The folder bindings, and one binding at each clone of a repository binding (worktrees
    included unless it says ``worktrees: false``); a folder binding at a clone is laid over it.
    At a clone in ``distrust`` the binding keeps only the hooks it turns off, and says why."""
    clones: dict[str, Binding] = {}
    for repo in repos:
        worktrees = raw[repo.name].get("worktrees", True)
        for clone in repo.clones:
            earlier = clones.get(clone.path)
            said = dict(earlier.uses) if earlier else {}
            said.update(repo.uses)  # two repositories matching one clone: the later name's settings win
            hooks = (earlier.hooks if earlier else ()) + repo.hooks  # and their hooks, by name (core.hooks.applying)
            why = distrust.get(clone.path)
            if why is not None:
                hooks = tuple(h for h in hooks if h.command is None and h.enabled is False)
            clones[clone.path] = Binding(clone.path, tuple(sorted(said.items())), bool(worktrees), hooks, repo.name, why)
    if not clones:
        return tuple(sorted(folders, key=lambda b: b.path))
    bindings = []
    for binding in folders:
        clone = clones.pop(os.path.realpath(binding.path), None)
        if clone is not None:
            merged = {name: settings.over(clone.settings(name) or Settings()) for name, settings in binding.uses}
            binding = replace(binding, uses=tuple(sorted({**dict(clone.uses), **merged}.items())),
                              worktrees=binding.worktrees or clone.worktrees, hooks=clone.hooks + binding.hooks, repo=clone.repo,
                              distrust=clone.distrust)
        bindings.append(binding)
    return tuple(sorted(bindings + list(clones.values()), key=lambda b: b.path))


def _fixed_part(pattern: str) -> str:
    """The part of a glob before its first wildcard (its folder is what changes when a match comes or goes)."""
    found = re.search(r"[*?[]", pattern)
    return pattern if found is None else pattern[: found.start()]


def _named_variables(raws: Any) -> set[str]:
    return {m.group(1) or m.group(2) for raw in raws for m in re.finditer(r"\$(\w+)|\$\{(\w+)\}", str(raw))}


def _layer_trust(needing: list[Mapping[str, Any]], providers: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """Why each included layer that declares local servers or hooks, or decides where a token
    goes, is not trusted with its bytes, and what that stops (absent: it is trusted)."""
    from projector.core.errors import display_path
    from projector.core.projects import layer_standing

    standing = layer_standing([(layer["path"], layer["sha256"]) for layer in needing], environ)
    reasons: dict[str, str] = {}
    for layer in needing:
        state = standing.get(layer["path"])
        if state is None:
            continue
        local, hooks, remote = layer["local"], layer["hooks"], layer.get("remote", ())
        shown = display_path(layer["path"], _home(environ))
        stopped = []
        if local or hooks:
            what = " and ".join(kind for kind, names in (("local servers", local), ("hooks", hooks)) if names)
            named = [*local, *(f"hook {name}" for name in hooks)] if local and hooks else [*local, *hooks]
            stopped.append(f"the {what} it declares or sets ({', '.join(named)}) do not run")
        if remote:
            sends = [f"{name}: {token_words(providers[name])} to {providers[name].get('url')}" for name in remote]
            stopped.append(f"the providers it sends a token to are left out ({'; '.join(sends)})")
        reasons[layer["path"]] = f"{shown} {state}, so {', and '.join(stopped)}: review it, then run `projector trust {shown}`"
    return reasons


def token_words(provider: Provider | Mapping[str, Any]) -> str:
    """A provider's token as a person reads it: ``$VAR``, or "an OAuth sign-in"."""
    token_env = provider.get("token_env") if isinstance(provider, Mapping) else provider.token_env
    return f"${token_env}" if token_env else "an OAuth sign-in"
