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
from projector.core.modeltypes import MAX_BYTES, RESERVED, Binding, Clone, Layer, Model, Repo, Settings, provider, token_words, uses
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



CACHE_SCHEMA = 6  # what a kept check holds (core.layers.checked): 3 adds each layer's hooks, 4 its token-carrying providers, 5 those it turns on, 6 the token-less ones whose url it gives


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
    kept = entry["layers"]
    needing = [layer for layer in kept[:-1] if layer["local"] or layer["hooks"] or layer["remote"]]
    standing = _layer_trust(needing, data.get("providers") or {}, environ) if needing else {}
    left_out = {name for layer in needing if layer["path"] in standing for name in layer["remote"]}
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
                           standing.get(k["path"]), tuple(k["remote"]))
                     for k in kept),
        repos=tuple(repos),
        watched=tuple(sorted({file for file, text, _ in entry["files"] if text is None}
                             | {os.path.dirname(_fixed_part(pattern)) for pattern, _ in entry["globs"]}
                             | set(entry["clones"]["watched"]))),
        variables=tuple(sorted({name for name, _ in entry["variables"]} | _named_variables(data.get("roots") or []))),
        withheld=tuple(p for p in every if p.name in left_out),
        urls_chosen=_urls_chosen(kept[:-1], environ),
    )


def _urls_chosen(included: list[Mapping[str, Any]], environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """(provider, layer) for each token-less remote provider whose url an included layer gave
    while that layer is not trusted with its bytes (the trust store is read only when one did)."""
    giving = [layer for layer in included if layer.get("urls")]
    if not giving:
        return ()
    from projector.core.errors import display_path
    from projector.core.projects import layer_standing

    standing = layer_standing([(layer["path"], layer["sha256"]) for layer in giving], environ)
    return tuple(sorted((name, display_path(layer["path"], locations.home(environ)))
                        for layer in giving if layer["path"] in standing for name in layer["urls"]))


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
        shown = display_path(clone.path, locations.home(environ))
        found = f"under root {display_path(clone.root, locations.home(environ))}" if clone.root else "at a folder a binding names"
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
        local, hooks, remote = layer["local"], layer["hooks"], layer["remote"]
        shown = display_path(layer["path"], locations.home(environ))
        stopped = []
        if local or hooks:
            what = " and ".join(kind for kind, names in (("local servers", local), ("hooks", hooks)) if names)
            named = [*local, *(f"hook {name}" for name in hooks)] if local and hooks else [*local, *hooks]
            stopped.append(f"the {what} it declares or sets ({', '.join(named)}) do not run")
        if remote:
            sends = [f"{name}: {token_words(providers[name])} to {providers[name].get('url')}" for name in remote]
            stopped.append(f"the providers it sends a token to are left out ({'; '.join(sends)})")
        reasons[layer["path"]] = (f"{shown} {state}, so {', and '.join(stopped)}: review it, then run `projector trust {shown}` "
                                  f"(its bytes now: sha256 {layer['sha256'][:12]})")  # new bytes, a new warning: said once each
    return reasons
