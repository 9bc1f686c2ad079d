"""The user's model (``projector.yaml``): located, loaded and kept.

A model is checked by core.layers (its files read, each parsed and checked by the JSON Schema
``schemas/model.schema.json`` through core.checking, merged, and the whole checked by
core.semantic); the checked data is kept as plain JSON (core.cache), and every later load that
finds its files as they were reads that instead. Either way it becomes the frozen records of
core.modeltypes here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from projector.core import hooks as hook_rules
from projector.core import locations
from projector.core.cache import stat_key
from projector.core.modeltypes import MAX_BYTES, Binding, Clone, Layer, Model, Repo, Settings, provider, uses
from projector.core.reading import Unreadable, read_regular
from projector.core.record import replace
from projector.core.variables import expand_folder

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from typing import Any

# --------------------------------------------------------------------------- locating the model


model_path = locations.model_path

expand_path = expand_folder  # ~ and $VAR in a folder the model names (core.variables)


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



CACHE_SCHEMA = 3  # what a kept check holds (core.layers.checked): 3 adds each layer's hooks


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



# --------------------------------------------------------------------------- building


def _build(path: Path, entry: Mapping[str, Any], environ: Mapping[str, str]) -> Model:
    """The Model of a checked entry (core.layers.checked); KeyError when a variable a binding names is unset here."""
    data = entry["data"]
    providers = tuple(provider(name, spec) for name, spec in sorted((data.get("providers") or {}).items()))
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
    bindings = _with_clones(folders, repos, data.get("bindings") or {})
    clients = data.get("clients")
    kept = entry["layers"]
    needing = [layer for layer in kept[:-1] if layer["local"] or layer["hooks"]]
    standing = _layer_trust(needing, environ) if needing else {}
    return Model(
        source=path.absolute(),
        clients=tuple(str(c) for c in clients) if clients is not None else None,
        providers=providers,
        bindings=bindings,
        hooks=hook_rules.hooks_of(data.get("hooks")),
        layers=tuple(Layer(k["path"], k["sha256"], tuple(k["by"]) if k["by"] else None, tuple(k["local"]), tuple(k["hooks"]),
                           standing.get(k["path"]))
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
            hooks = (earlier.hooks if earlier else ()) + repo.hooks  # and their hooks, by name (core.hooks.applying)
            clones[clone.path] = Binding(clone.path, tuple(sorted(said.items())), bool(worktrees), hooks, repo.name)
    if not clones:
        return tuple(sorted(folders, key=lambda b: b.path))
    bindings = []
    for binding in folders:
        clone = clones.pop(os.path.realpath(binding.path), None)
        if clone is not None:
            merged = {name: settings.over(clone.settings(name) or Settings()) for name, settings in binding.uses}
            binding = replace(binding, uses=tuple(sorted({**dict(clone.uses), **merged}.items())),
                              worktrees=binding.worktrees or clone.worktrees, hooks=clone.hooks + binding.hooks, repo=clone.repo)
        bindings.append(binding)
    return tuple(sorted(bindings + list(clones.values()), key=lambda b: b.path))


def _fixed_part(pattern: str) -> str:
    """The part of a glob before its first wildcard (its folder is what changes when a match comes or goes)."""
    found = re.search(r"[*?[]", pattern)
    return pattern if found is None else pattern[: found.start()]


def _named_variables(raws: Any) -> set[str]:
    return {m.group(1) or m.group(2) for raw in raws for m in re.finditer(r"\$(\w+)|\$\{(\w+)\}", str(raw))}


def _layer_trust(needing: list[Mapping[str, Any]], environ: Mapping[str, str]) -> dict[str, str]:
    """Why each included layer that declares local servers or hooks is not trusted with its bytes (absent: it is)."""
    from projector.core.projects import layers_distrust

    return layers_distrust([(layer["path"], layer["sha256"], layer["local"], layer["hooks"]) for layer in needing], environ)
