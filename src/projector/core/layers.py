"""A model in layers: the files a model includes, read in order and merged into one.

``include:`` lists other model files (``~``, ``$VAR`` and globs expanded; a relative path is
taken from the including file's folder; ``{path: ..., optional: true}`` may be absent). They are
read in the order listed, depth first, each before the file that includes it: the including
file is the last layer. A file reached twice is read once, where it is first reached; a file
that includes itself, directly or through others, is an error.

Merge rules (also in the README, "For teams", and in schemas/model.schema.json):

- a top-level mapping of named items (``NAMED``: ``providers`` and ``hooks``) merges by name,
  key by key: a key a later layer gives replaces the earlier value, except ``env``, which
  merges by variable. What an item *is* (``NAMED``'s keys: a provider's ``url``, ``token_env``
  or ``command``, a hook's ``command``) may be changed by another layer only where it says
  ``override: true`` (a change of kind, url <-> command, then replaces the item whole).
  ``remove: true`` removes an inherited item; a removed provider or hook leaves every binding
  merged so far too;
- ``bindings`` merge by folder (``~`` and ``$VAR`` expanded), a binding by repository by its
  name; per provider, settings merge key by key (a KB list stands for ``kbs``), ``env`` by
  variable; a binding's ``hooks`` by name, key by key; ``remove: true`` removes an inherited
  binding;
- any other top-level value (``clients``, ``roots``) is replaced whole by a later layer.

The merge knows no YAML positions: a problem is a ``Finding`` (a layer, a path in it, what is
wrong), which ``Places`` (core.checking) turns into file:line:col. ``Origins`` keeps where each merged value came
from, for those positions, for ``explain`` (``Provenance``) and for trust (which layers a local
server's settings came from). ``checked`` reads, merges and checks a model (each layer by the
schema, core.checking; the whole by core.semantic) into the JSON the checked-model cache keeps. Imported only when a model is checked (or explained): a bridge start that
finds the check kept (core.model) does not need it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from projector.core import locations, yamltext
from projector.core.checking import Places, conforms, parse_yaml, quick_yaml, schema_problems
from projector.core.cache import stat_key
from projector.core.errors import ModelError, Problem, display_path
from projector.core.modeltypes import MAX_BYTES, Binding, Model, is_folder
from projector.core.record import Factory, Record
from projector.core.reading import Unreadable, read_regular
from projector.core.semantic import semantic_problems
from projector.core.variables import expand_folder

NAMED: dict[str, tuple[str, ...]] = {"providers": ("url", "token_env", "command"), "hooks": ("command",)}  # section -> the keys that say what an item is
IGNORED = ("version", "include")  # each layer's own
BINDING_KEYS = ("worktrees", "repo")  # keys of a binding that are not providers
MAX_NESTING = 16  # includes within includes; a team needs two or three
_VARIABLE = re.compile(r"\$(\w+)|\$\{(\w+)\}")
_GLOB = re.compile(r"[*?[]")


class Read(Record):
    """One layer as read."""

    path: str  # absolute, as the include named it (not resolved through symlinks)
    real: str  # canonical: a file reached twice, or in a cycle, is one file
    shown: str  # as a person reads it
    text: str
    data: Any  # as the fast parser read it (core.checking finds positions in ``text`` when it needs them)
    by: tuple[Read, int] | None = None  # the including layer and the include's index in its list; None: the model itself


class Finding(Record):
    """A problem at ``path`` in layer ``read``; ``{other}`` in the message is the place ``other``."""

    read: Read
    path: tuple[Any, ...]
    message: str
    key: bool = False  # at the key rather than its value
    other: tuple[Read, tuple[Any, ...]] | None = None


class LayerError(Exception):
    def __init__(self, finding: Finding):
        super().__init__(finding.message)
        self.finding = finding


# --------------------------------------------------------------------------- reading the layers


class Gathered(Record, frozen=False):
    """The layers in order (the model itself last), and everything the reading depended on: the
    check stands while every file has the same text (None: looked for, absent), every glob the
    same matches and every variable an include names the same value."""

    reads: list[Read] = Factory(list)
    files: list[tuple[str, str | None]] = Factory(list)
    globs: list[tuple[str, list[str]]] = Factory(list)
    variables: dict[str, str | None] = Factory(dict)


def gather(
    root: str,
    text: str,
    environ: Mapping[str, str],
    read: Callable[[str, str], str | None],
    parse: Callable[[str, str], Any],
    shown: Callable[[str], str],
) -> Gathered:
    """Every layer of the model at ``root`` (whose ``text`` is read), depth first.
    ``read(path, shown)``: a file's text, None when absent; ``parse(text, shown)``: its data,
    checked by the schema (both raise ModelError). LayerError for an include that cannot be followed."""
    gathered = Gathered(files=[(root, text)])
    seen: set[str] = set()

    def visit(path: str, text: str, chain: tuple[Read, ...], by: tuple[Read, int] | None) -> None:
        layer = Read(path, os.path.realpath(path), shown(path), text, parse(text, shown(path)), by)
        seen.add(layer.real)
        for index, item in enumerate(layer.data.get("include") or []):
            for target, optional in _targets(layer, index, item, environ, gathered):
                real = os.path.realpath(target)
                route = chain + (layer,)
                start = next((i for i, r in enumerate(route) if r.real == real), None)
                if start is not None:
                    route = " -> ".join(r.shown for r in route[start:]) + f" -> {route[start].shown}"
                    raise LayerError(Finding(layer, ("include", index), f"a cycle: {route}; remove one of these includes"))
                if real in seen:
                    continue  # read where it was first reached
                if len(chain) >= MAX_NESTING:
                    raise LayerError(Finding(layer, ("include", index), f"includes nested more than {MAX_NESTING} deep: include the files from one place"))
                found = read(target, shown(target))
                gathered.files.append((target, found))
                if found is None and not optional:
                    raise LayerError(Finding(layer, ("include", index), f"{shown(target)} does not exist: fix the path, or write "
                                             "{path: ..., optional: true} for a file that may be absent"))
                if found is not None:
                    visit(target, found, chain + (layer,), (layer, index))
        gathered.reads.append(layer)

    visit(root, text, (), None)
    return gathered


def _targets(layer: Read, index: int, item: Any, environ: Mapping[str, str], gathered: Gathered) -> list[tuple[str, bool]]:
    """The files one include names: (path, optional)."""
    raw, optional = (item, False) if isinstance(item, str) else (str(item["path"]), bool(item.get("optional")))
    for match in _VARIABLE.finditer(raw):
        name = match.group(1) or match.group(2)
        gathered.variables[name] = environ.get(name)
    try:
        expanded = expand_folder(raw, environ)
    except KeyError as unset:
        if optional:
            return []
        raise LayerError(Finding(layer, ("include", index), f"${unset.args[0]} is not set in this environment; set it, or "
                                 "write {path: ..., optional: true} for a file that may be absent")) from None
    path = os.path.normpath(os.path.join(os.path.dirname(layer.path), expanded))
    if not _GLOB.search(path):
        return [(path, optional)]
    import glob

    matches = sorted(m for m in glob.glob(path) if os.path.isfile(m))
    gathered.globs.append((path, matches))
    if not matches and not optional:
        raise LayerError(Finding(layer, ("include", index), f"{raw} matches no file: fix the pattern, or write "
                                 "{path: ..., optional: true} where none may match"))
    return [(match, True) for match in matches]


def digest(text: str) -> str:
    """A layer's sha256 (of its bytes: the text is UTF-8), as the trust store records it."""
    from projector.core.digest import sha256

    return sha256(text.encode("utf-8"))


def digest_of(path: str) -> str | None:
    """The sha256 of the file at ``path`` now; None when it cannot be read."""
    from projector.core.digest import sha256

    try:
        raw = read_regular(path, MAX_BYTES)
    except Unreadable:
        return None
    return None if raw is None else sha256(raw)


def as_seen(loaded: Model, stat: Callable[[str], Any], unseen: Any) -> dict[str, Any]:
    """``stat(path)`` of each file the model includes, where it still holds the bytes the model
    was checked with; else ``unseen``, which matches no file: a change made since they were read
    (a `git pull` during a sync) is seen by the next run, which compares these stats."""
    seen: dict[str, Any] = {}
    for layer in loaded.layers[:-1]:  # the model's own file: its caller stats it before it is read
        before = stat(layer.path)
        unchanged = digest_of(layer.path) == layer.sha256 and stat(layer.path) == before
        seen[layer.path] = before if unchanged else unseen
    return seen


# --------------------------------------------------------------------------- where merged values came from


class Origins:
    """For each part of the merged data, the layer (index) and the path there it came from. A
    tree: a value replaced whole forgets where the parts of the value it replaced came from."""

    def __init__(self) -> None:
        self._root: list[Any] = [None, {}]  # [origin, children by step]

    def _node(self, path: tuple[Any, ...]) -> list[Any]:
        node = self._root
        for step in path:
            node = node[1].setdefault(step, [None, {}])
        return node

    def replace(self, path: tuple[Any, ...], origin: tuple[int, tuple[Any, ...]]) -> None:
        node = self._node(path)
        node[0] = origin
        node[1].clear()

    def drop(self, path: tuple[Any, ...]) -> None:
        node = self._root
        for step in path[:-1]:
            node = node[1].get(step)
            if node is None:
                return
        node[1].pop(path[-1], None)

    def find(self, path: tuple[Any, ...]) -> tuple[int, tuple[Any, ...]] | None:
        """The layer and the path there of the value at merged ``path`` (None: no layer gave it)."""
        node, found, depth = self._root, None, 0
        for index, step in enumerate(path):
            node = node[1].get(step)
            if node is None:
                break
            if node[0] is not None:
                found, depth = node[0], index + 1
        if found is None:
            return None
        return found[0], tuple(found[1]) + tuple(path[depth:])

    def layers(self, path: tuple[Any, ...]) -> set[int]:
        """Every layer that gave a part of the value at ``path`` (a value given whole with what
        holds it, a binding's hooks, counts for the layer that gave the whole)."""
        node, inherited = self._root, None
        for step in path:
            node = node[1].get(step)
            if node is None:
                return {inherited[0]} if inherited else set()
            inherited = node[0] or inherited
        found: set[int] = {inherited[0]} if inherited else set()
        stack = [node]
        while stack:
            current = stack.pop()
            if current[0] is not None:
                found.add(current[0][0])
            stack.extend(current[1].values())
        return found


# --------------------------------------------------------------------------- merging


class Merged(Record, frozen=False):
    """The layers' data merged, where each part came from, and what is wrong with the merge."""

    data: dict[str, Any]
    origins: Origins
    findings: list[Finding]


def merge(reads: list[Read], environ: Mapping[str, str]) -> Merged:
    merged = Merged({"version": 1, "providers": {}, "bindings": {}}, Origins(), [])
    identities: dict[tuple[str, str], str] = {}  # a binding's identity -> its key in the merged data
    for index, read in enumerate(reads):
        for key, value in read.data.items():
            if key in IGNORED:
                continue
            if key in NAMED:
                _merge_named(merged, reads, index, key, value or {})
            elif key == "bindings":
                _merge_bindings(merged, reads, index, value or {}, identities, environ)
            else:
                merged.data[key] = value
                merged.origins.replace((key,), (index, (key,)))
    return merged


def _other(merged: Merged, reads: list[Read], path: tuple[Any, ...]) -> tuple[Read, tuple[Any, ...]] | None:
    found = merged.origins.find(path)
    return (reads[found[0]], found[1]) if found else None


def _merge_named(merged: Merged, reads: list[Read], index: int, section: str, items: Mapping[str, Any]) -> None:
    read, into = reads[index], merged.data.setdefault(section, {})
    what = section.rstrip("s")
    for name, spec in items.items():
        at = (section, name)
        if spec.get("remove"):
            if _not_alone(merged, read, at, spec):
                continue
            if name not in into:
                merged.findings.append(Finding(read, at + ("remove",), f'no earlier layer has {what} "{name}": nothing to remove', key=True))
            else:
                del into[name]
                merged.origins.drop(at)
                for folder, binding in merged.data["bindings"].items():
                    if section == "providers" and binding.pop(name, None) is not None:
                        merged.origins.drop(("bindings", folder, name))
                    if section == "hooks" and name in (binding.get("hooks") or {}):
                        binding["hooks"] = {hook: said for hook, said in binding["hooks"].items() if hook != name}
                        merged.origins.drop(("bindings", folder, "hooks", name))
            continue
        override = bool(spec.get("override"))
        current = into.get(name)
        if current is None or (override and _kind_changes(current, spec)):
            into[name] = current = {}
            merged.origins.replace(at, (index, at))
        for key, value in spec.items():
            if key in ("override", "remove"):
                continue
            path = at + (key,)
            clash = _clash(current, key, value, what) if key in NAMED[section] and not override else None
            if clash is not None:
                other = _other(merged, reads, at + (key if key in current else _kind_key(current),))
                merged.findings.append(Finding(read, path, f"{clash}; a layer may change the {', '.join(NAMED[section])} another "
                                               "layer gave only where it says override: true", other=other))
                continue
            _set(merged, current, key, value, path, (index, path))


def _not_alone(merged: Merged, read: Read, at: tuple[Any, ...], spec: Mapping[str, Any]) -> bool:
    extra = next((key for key in spec if key != "remove"), None)
    if extra is not None:
        merged.findings.append(Finding(read, at + (extra,), "remove: true stands alone: remove this, or the remove", key=True))
    return extra is not None


def _kind_key(spec: Mapping[str, Any]) -> str:
    return "command" if "command" in spec else "url"


def _kind_changes(current: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    return ("url" in spec and "command" in current) or ("command" in spec and "url" in current)


def _clash(current: Mapping[str, Any], key: str, value: Any, what: str) -> str | None:
    """How ``key: value`` would change what an item is, naming the earlier place as ``{other}``
    (None: it would not)."""
    if key in current and current[key] != value:
        return f"changes what {{other}} gives ({current[key]})"
    if key == "url" and "command" in current:
        return f"makes a remote {what} of what {{other}} declares a local one (command)"
    if key == "command" and "url" in current:
        return f"makes a local {what} of what {{other}} declares a remote one (url)"
    return None


def _set(merged: Merged, into: dict[str, Any], key: str, value: Any, path: tuple[Any, ...], origin: tuple[int, tuple[Any, ...]]) -> None:
    """``into[key] = value``, an ``env`` mapping merged by variable."""
    if key == "env" and isinstance(value, Mapping) and isinstance(into.get(key), Mapping):
        into[key] = {**into[key], **value}
        for variable in value:
            merged.origins.replace(path + (variable,), (origin[0], origin[1] + (variable,)))
        return
    into[key] = value
    merged.origins.replace(path, origin)


def identity(raw: str, environ: Mapping[str, str]) -> tuple[str, str]:
    """What makes two layers' bindings one: the folder (expanded), or a repository binding's name."""
    if not is_folder(raw):
        return ("name", raw)
    try:
        return ("folder", expand_folder(raw, environ))
    except KeyError:
        return ("folder", raw)  # an unset variable: the semantic pass says so


def _merge_bindings(merged: Merged, reads: list[Read], index: int, items: Mapping[str, Any],
                    identities: dict[tuple[str, str], str], environ: Mapping[str, str]) -> None:
    read, into = reads[index], merged.data["bindings"]
    mine: dict[tuple[str, str], str] = {}  # this layer's: one folder twice in one file is a mistake, not a merge
    for raw, spec in items.items():
        spec = spec or {}
        who = identity(str(raw), environ)
        if who in mine:
            merged.findings.append(Finding(read, ("bindings", raw), f'the same folder as "{mine[who]}"; merge the two bindings', key=True))
            continue
        mine[who] = str(raw)
        key = identities.get(who)
        if spec.get("remove"):
            if _not_alone(merged, read, ("bindings", raw), spec):
                continue
            if key is None:
                merged.findings.append(Finding(read, ("bindings", raw, "remove"), f'no earlier layer binds "{raw}": nothing to remove', key=True))
            else:
                del into[key], identities[who]
                merged.origins.drop(("bindings", key))
            continue
        if key is None:
            identities[who] = key = str(raw)
            into[key] = {}
            merged.origins.replace(("bindings", key), (index, ("bindings", raw)))
        current = into[key]
        for name, value in spec.items():
            if name == "remove":
                continue
            path, local = ("bindings", key, name), ("bindings", raw, name)
            if name in BINDING_KEYS or current.get(name) is None or (isinstance(value, list) and isinstance(current[name], list)):
                current[name] = value
                merged.origins.replace(path, (index, local))
                continue
            merge_value = _merged_hooks if name == "hooks" else _merged_use
            current[name] = merge_value(merged, current[name], value, path, index, local)


def _merged_hooks(merged: Merged, old: Mapping[str, Any], hooks: Mapping[str, Any] | None, path: tuple[Any, ...], index: int,
                  local: tuple[Any, ...]) -> dict[str, Any]:
    """A binding's hooks laid over those an earlier layer gave the same binding: by name, key by key."""
    result = dict(old)
    for name, spec in (hooks or {}).items():
        if name in result:
            result[name] = dict(result[name])
        else:
            result[name] = {}
            merged.origins.replace(path + (name,), (index, local + (name,)))
        for key, value in spec.items():
            _set(merged, result[name], key, value, path + (name, key), (index, local + (name, key)))
    return result


def _merged_use(merged: Merged, old: Any, value: Any, path: tuple[Any, ...], index: int, local: tuple[Any, ...]) -> dict[str, Any]:
    """One provider's settings in a binding laid over those of an earlier layer, key by key."""
    if isinstance(old, list):  # the earlier KB list is that layer's "kbs"
        found = merged.origins.find(path)
        old = {"kbs": old}
        if found is not None:
            merged.origins.replace(path + ("kbs",), found)
    result = dict(old)
    for key, setting in (value.items() if isinstance(value, Mapping) else [("kbs", value)]):
        _set(merged, result, key, setting, path + (key,), (index, local + (key,) if isinstance(value, Mapping) else local))
    return result


def local_layers(merged: Merged) -> dict[int, list[str]]:
    """For each layer, the local providers (servers it can start) it defines or gives settings
    to: they run only while that layer is trusted (the model's own file needs no trust)."""
    providers = merged.data.get("providers") or {}
    return _touching(merged, [n for n, spec in providers.items() if "command" in spec], ("providers",), ())


def hook_layers(merged: Merged) -> dict[int, list[str]]:
    """For each layer, the hooks (commands run on the clients' events) it defines, turns on or
    off, or gives settings to, at the top level or in a binding: as local servers, they run only
    while that layer is trusted."""
    bindings = merged.data["bindings"].values()
    names = {*(merged.data.get("hooks") or {}), *(name for binding in bindings for name in binding.get("hooks") or {})}
    return _touching(merged, sorted(names), ("hooks",), ("hooks",))


TOKEN_KEYS = ("url", "token_env", "oauth", "insecure")  # what decides where a provider's token goes, and how


def remote_layers(merged: Merged, reads: list[Read]) -> dict[int, list[str]]:
    """For each layer, the remote providers that carry a token (a ``token_env``, an OAuth
    sign-in) whose url, token_env, oauth or insecure it gives (adding the provider gives them),
    or that it turns on (``enabled: true``, in the provider or a binding) where another layer
    turned them off: it decides where one of the user's secrets goes, so they are left out while
    that layer is not trusted (the model's own file needs no trust). Narrowing (kbs, default,
    enabled: false) needs none."""
    found: dict[int, set[str]] = {}
    for name, spec in (merged.data.get("providers") or {}).items():
        if "url" not in spec or not (spec.get("token_env") or spec.get("oauth")):
            continue
        for key in TOKEN_KEYS:
            found_at = merged.origins.find(("providers", name, key)) if key in spec else None
            if found_at is not None:
                found.setdefault(found_at[0], set()).add(name)
        turned_off = _turning_off(reads, name)
        for index in _turning_on(merged, name):
            if turned_off - {index}:
                found.setdefault(index, set()).add(name)
    return {index: sorted(names) for index, names in found.items()}


def url_layers(merged: Merged) -> dict[int, list[str]]:
    """For each layer, the remote providers without a token whose url it gives (adding the
    provider gives it). Such a provider needs no trust, but a client that keeps the OAuth tokens
    it signed in with by server name sends them to whatever URL an entry of that name has: there
    such an entry stands for a URL this layer chose (compile.plan.for_client)."""
    found: dict[int, set[str]] = {}
    for name, spec in (merged.data.get("providers") or {}).items():
        if "url" not in spec or spec.get("token_env") or spec.get("oauth"):
            continue
        found_at = merged.origins.find(("providers", name, "url"))
        if found_at is not None:
            found.setdefault(found_at[0], set()).add(name)
    return {index: sorted(names) for index, names in found.items()}


def _turning_off(reads: list[Read], name: str) -> set[int]:
    """The layers that say ``enabled: false`` of provider ``name``, in the provider or in a binding."""
    off = set()
    for index, read in enumerate(reads):
        spec = (read.data.get("providers") or {}).get(name)
        settings = [spec, *((binding or {}).get(name) for binding in (read.data.get("bindings") or {}).values())]
        if any(isinstance(said, Mapping) and said.get("enabled") is False for said in settings):
            off.add(index)
    return off


def _turning_on(merged: Merged, name: str) -> set[int]:
    """The layers whose ``enabled: true`` of provider ``name`` stands in the merged model, in the provider or in a binding."""
    paths = [("providers", name, "enabled")] if (merged.data["providers"].get(name) or {}).get("enabled") is True else []
    paths += [("bindings", folder, name, "enabled") for folder, binding in merged.data["bindings"].items()
              if isinstance(binding.get(name), Mapping) and binding[name].get("enabled") is True]
    return {found[0] for found in map(merged.origins.find, paths) if found is not None}


def _touching(merged: Merged, names: list[str], top: tuple[str, ...], within: tuple[str, ...]) -> dict[int, list[str]]:
    """For each layer, which of ``names`` it gave a part of, at ``top`` or at ``within`` a binding;
    for a repository binding, the layers that gave its ``repo`` and the ``roots`` count too: they
    decide in which folders it runs."""
    found: dict[int, set[str]] = {}
    for name in names:
        touching = merged.origins.layers(top + (name,)) if name in (merged.data.get(top[0]) or {}) else set()
        for folder, binding in merged.data["bindings"].items():
            holder = binding.get(within[0]) if within else binding
            if isinstance(holder, Mapping) and name in holder:
                touching |= merged.origins.layers(("bindings", folder, *within, name))
                if "repo" in binding:
                    touching |= merged.origins.layers(("bindings", folder, "repo")) | merged.origins.layers(("roots",))
        for index in touching:
            found.setdefault(index, set()).add(name)
    return {index: sorted(names) for index, names in found.items()}


# --------------------------------------------------------------------------- checking a model in layers (core.model asks)


def read_layer(path: str, shown: str) -> str | None:
    """A model file's text; None when there is none."""
    try:
        raw = read_regular(path, MAX_BYTES)
    except Unreadable as reason:
        raise ModelError(Problem(shown, None, None, f"cannot read the model: {reason}")) from None
    if raw is None:
        return None
    return yamltext.decoded(raw, shown)


def parse_layer(text: str, shown: str) -> Any:
    """One layer's data, screened and checked by the schema (the semantic pass checks the layers merged)."""
    yamltext.screen(text, shown)
    quick = quick_yaml(text)
    if quick is not None and conforms(quick, shown, "model"):
        return quick
    data = parse_yaml(text, shown)
    problems = schema_problems(data, shown)
    if problems:
        raise ModelError(sorted(problems, key=lambda p: (p.line or 0, p.column or 0)))
    return data


def checked(path: Path, environ: Mapping[str, str], known_clients: tuple[str, ...], text: str | None = None) -> dict[str, Any]:
    """The model at ``path`` (with ``text``, when given, as the file's), checked with every file
    it includes, merged; with what the check depends on and the clones of its repository
    bindings: JSON, as the cache keeps it. A ModelError carries the files the check read (or
    looked for), each with its stat taken before (``read``): a change there may mend it."""
    stats: dict[str, Any] = {}  # each file's stat (core.cache.stat_key), taken before it is read
    try:
        return _checked(path, environ, known_clients, text, stats)
    except ModelError as error:
        error.read = dict(stats)
        raise


def _checked(path: Path, environ: Mapping[str, str], known_clients: tuple[str, ...], text: str | None, stats: dict[str, Any]) -> dict[str, Any]:
    shown = lambda p: display_path(p, locations.home(environ))  # noqa: E731 - one short formatter
    root = str(path.absolute())

    def read(file: str, shown_file: str) -> str | None:
        stats[file] = stat_key(file)
        return read_layer(file, shown_file)

    if text is None:
        text = read(root, shown(root))
        if text is None:
            raise ModelError(Problem(shown(root), None, None, "no model here: run `projector init` to write a starter, or pass --config"))
    try:
        gathered = gather(root, text, environ, read, parse_layer, shown)
    except LayerError as error:
        raise ModelError(Places([]).finding(error.finding)) from None
    merged = merge(gathered.reads, environ)
    places = Places(gathered.reads, merged.origins)
    problems = [places.finding(f) for f in merged.findings]
    if not problems:
        problems = semantic_problems(merged.data, places, environ, known_clients)
    if problems:
        order = {read.shown: index for index, read in enumerate(gathered.reads)}
        raise ModelError(sorted(problems, key=lambda p: (order.get(p.file, 0), p.line or 0, p.column or 0)))
    index_of = {id(read): index for index, read in enumerate(gathered.reads)}
    local, hooks, remote, urls = local_layers(merged), hook_layers(merged), remote_layers(merged, gathered.reads), url_layers(merged)
    return {
        "root": str(path),
        "files": [[file, text, stats.get(file)] for file, text in gathered.files],
        "globs": gathered.globs,
        "variables": sorted(gathered.variables.items()),
        "data": merged.data,
        "layers": [{"path": read.path, "sha256": digest(read.text), "local": local.get(index, []) if read.by else [],
                    "hooks": hooks.get(index, []) if read.by else [], "remote": remote.get(index, []) if read.by else [],
                    "urls": urls.get(index, []) if read.by else [],
                    "by": [index_of[id(read.by[0])], read.by[1]] if read.by else None} for index, read in enumerate(gathered.reads)],
        "clones": clones(merged.data, environ),
    }


def clones(data: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """The clones of each repository binding, found under the roots and at the bound folders,
    and the folders and files that finding them read."""
    from projector.core import repos
    from projector.core.variables import folder_or_none

    bindings = data.get("bindings") or {}
    wanted = {name: repos.normalise(b["repo"]) for name, b in bindings.items() if "repo" in b}
    if not wanted:
        return {"found": {}, "watched": []}
    roots = [r for r in (folder_or_none(str(raw), environ) for raw in data.get("roots") or []) if r]
    bound = [f for f in (folder_or_none(raw, environ) for raw, b in bindings.items() if "repo" not in b and is_folder(raw)) if f]
    scan = repos.scan(roots, bound)
    found = {}
    for name, repo in wanted.items():
        matched = [(clone, repos.matches(clone, repo)) for clone in scan.clones]
        found[name] = [[clone.path, f"{remote[0]} {remote[1]}", clone.root] for clone, remote in matched if remote and repo]
    return {"found": found, "watched": list(scan.watched)}


class Provenance:
    """Where each part of a loaded model came from, as ``file:line`` (for `explain` and `status`):
    its layers read again, with the careful parser only for the layers asked about."""

    def __init__(self, loaded: Model, environ: Mapping[str, str]):
        shown = lambda p: display_path(p, locations.home(environ))  # noqa: E731
        root = str(loaded.source)
        text = read_layer(root, shown(root)) or ""
        gathered = gather(root, text, environ, read_layer, parse_layer, shown)
        self._merged = merge(gathered.reads, environ)
        self._places = Places(gathered.reads, self._merged.origins)
        self._reads = gathered.reads
        self._environ = environ

    def where(self, path: tuple[Any, ...], *, key: bool = False) -> str | None:
        """``file:line`` of the value at ``path`` of the merged model; None when no layer gave it."""
        if self._merged.origins.find(path) is None:
            return None
        return self._places.at(path, key=key).rsplit(":", 1)[0]

    def keys(self, path: tuple[Any, ...]) -> dict[str, str]:
        """For the mapping at ``path`` (a provider, a provider in a binding): each key's ``file:line``."""
        value: Any = self._merged.data
        for step in path:
            value = value.get(step) if isinstance(value, Mapping) else None
        if not isinstance(value, Mapping):
            return {"kbs": place} if value is not None and (place := self.where(path)) else {}
        return {str(k): place for k in value if (place := self.where(path + (k,), key=True))}

    def binding_key(self, binding: Binding) -> str | None:
        """The key of ``binding`` in the merged model (a clone's: its repository binding's name)."""
        if binding.repo is not None:
            return binding.repo
        for raw in self._merged.data.get("bindings") or {}:
            if identity(str(raw), self._environ) == ("folder", binding.path):
                return str(raw)
        return None

    def included_by(self, index: int) -> str | None:
        """``file:line`` of the include that brought layer ``index`` in."""
        read = self._reads[index] if index < len(self._reads) else None
        if read is None or read.by is None:
            return None
        return self._places.at_in(read.by[0], ("include", read.by[1])).rsplit(":", 1)[0]
