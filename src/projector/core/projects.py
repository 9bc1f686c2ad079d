"""Project files (``.projector.yaml`` at a workspace root) and the trust that lets them count.

A project file is one binding for its folder plus local providers owned by that folder. It
can name commands to run, so it counts only once ``projector trust`` has recorded its
canonical path and a hash of its bytes; any change to the file withdraws that trust until it is
trusted again. The trust store (``$XDG_STATE_HOME/projector/trust.json``) keeps the checked
content beside the hash, so a bridge start compares one hash and reads JSON: no YAML parser,
no schema validator.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping

from projector.core.record import Record

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from typing import Any

from projector.core import locations
from projector.core.hooks import hooks_of
from projector.core.modeltypes import Project, provider, uses
from projector.core.reading import Unreadable, read_regular

FILE_NAME = ".projector.yaml"
SCHEMA = 1
LAYER = "layer"  # a record's kind: a model layer (core.layers); records without one are project files
CLONE = "clone"  # a record's kind: a clone found by its git remote (core.repos), by its folder and the repository it was trusted as
OTHERS = (LAYER, CLONE)  # the kinds that are not project files


def trust_path(environ: Mapping[str, str]) -> str:
    return os.path.join(locations.state_folder(environ), "trust.json")


def digest(raw: bytes) -> str:
    from projector.core.digest import sha256

    return sha256(raw)


def project_file(folder: str) -> str:
    return os.path.join(os.path.realpath(folder), FILE_NAME)


# --------------------------------------------------------------------------- the trust store


def _store(environ: Mapping[str, str]) -> tuple[str | None, dict[str, Any]]:
    """The trust store's text (None: absent) and its records: trusted files by canonical path,
    each {"sha256": ..., "data": checked content}."""
    try:
        with open(trust_path(environ), encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return None, {}
    try:
        store = json.loads(text)
        return text, (dict(store.get("files") or {}) if store.get("schema") == SCHEMA else {})
    except (ValueError, AttributeError):
        return text, {}


def _records(environ: Mapping[str, str]) -> dict[str, Any]:
    return _store(environ)[1]


def _update(environ: Mapping[str, str], change: Any) -> Any:
    """Apply ``change`` (records -> result) to the store and write it. Writers take turns (a
    lock beside the store), so two `projector trust` at once both land."""
    from pathlib import Path

    from projector.core import files

    with files.exclusive(Path(trust_path(environ) + ".lock"), timeout=10.0):
        before, records = _store(environ)
        outcome = change(records)
        text = json.dumps({"schema": SCHEMA, "files": dict(sorted(records.items()))}, indent=2) + "\n"
        files.write_text(Path(trust_path(environ)), text, expected=before)
    return outcome


def trust(file: str, data: Any, raw: bytes, environ: Mapping[str, str]) -> None:
    """Record ``file`` (canonical) as trusted with exactly these bytes; ``data`` is its checked content."""
    _update(environ, lambda records: records.__setitem__(file, {"sha256": digest(raw), "data": data}))


def trusted_digest(file: str, environ: Mapping[str, str]) -> str | None:
    """The sha256 ``file`` (canonical) was last trusted with; None: never trusted."""
    return (_records(environ).get(file) or {}).get("sha256")


def trust_layer(file: str, raw: bytes, environ: Mapping[str, str]) -> None:
    """Record the model layer ``file`` (canonical) as trusted with exactly these bytes: the local
    servers and hooks it declares or sets may run (core.model)."""
    _update(environ, lambda records: records.__setitem__(file, {"kind": LAYER, "sha256": digest(raw)}))


def layer_standing(layers: list[tuple[str, str]], environ: Mapping[str, str]) -> dict[str, str]:
    """For each included layer (path, sha256 of its bytes) not trusted with these bytes: "is not
    trusted" or "changed since it was trusted" (absent: it is trusted)."""
    records = _records(environ)
    states: dict[str, str] = {}
    for path, sha256 in layers:
        record = records.get(os.path.realpath(path)) or {}
        if record.get("kind") != LAYER:
            states[path] = "is not trusted"
        elif record.get("sha256") != sha256:
            states[path] = "changed since it was trusted"
    return states


def trust_clone(folder: str, repo: str, environ: Mapping[str, str]) -> None:
    """Record canonical ``folder`` as trusted as a clone of ``repo`` (normalised, core.repos): what
    a repository binding runs (local servers, hooks, env files, direnv) may run there. A clone may
    be trusted as several (a fork's names its own repository and the one it came from)."""
    def add(records: dict[str, Any]) -> None:
        before = records.get(folder) or {}
        repos = _clone_repos(before) if before.get("kind") == CLONE else []
        records[folder] = {"kind": CLONE, "repos": sorted({*repos, repo})}

    _update(environ, add)


def _clone_repos(record: Mapping[str, Any]) -> list[str]:
    """The repositories a clone's record trusts it as (a record written before holds one, "repo")."""
    return list(record.get("repos") or ([record["repo"]] if "repo" in record else []))


def clone_standing(clones: Iterable[tuple[str, str]], environ: Mapping[str, str]) -> dict[str, str]:
    """For each clone (canonical folder, the repository a binding found it as) not trusted as a
    clone of that repository: "is not trusted", or what it was trusted as (absent: it is)."""
    records = _records(environ)
    states: dict[str, str] = {}
    for folder, repo in clones:
        record = records.get(folder) or {}
        if record.get("kind") != CLONE:
            states[folder] = "is not trusted"
        elif repo not in (repos := _clone_repos(record)):
            states[folder] = f"was trusted as a clone of {', '.join(repos)}, not of {repo}"
    return states


def untrust(file: str, environ: Mapping[str, str]) -> bool:
    if file not in _records(environ):
        return False
    return _update(environ, lambda records: records.pop(file, None) is not None)


def recorded_digests(environ: Mapping[str, str]) -> dict[str, str]:
    """The trusted bytes' sha256 of each recorded project file, by its canonical path."""
    return {file: str(record.get("sha256")) for file, record in _records(environ).items()}


def declares_anywhere(name: str, environ: Mapping[str, str]) -> bool:
    """Whether a recorded project file declares provider ``name`` (a bridge elsewhere then
    answers with no tools instead of failing)."""
    return any(p.provider(name) is not None for p in recorded(environ))


MAX_BYTES = 256 * 1024  # a project file is a few lines; anything near this is not one


def read(file: str) -> bytes | None:
    """A project file's bytes; None when there is none; reading.Unreadable when what is there is
    not one (anyone can put one in a folder or above it: ``/tmp/.projector.yaml``)."""
    return read_regular(file, MAX_BYTES)


def _project(file: str, data: Mapping[str, Any]) -> Project:
    declared = data.get("providers") or {}
    return Project(
        root=os.path.dirname(file),
        file=file,
        providers=tuple(provider(name, spec) for name, spec in sorted(declared.items())),
        uses=uses(data),
        hooks=hooks_of(data.get("hooks")),
    )


def recorded(environ: Mapping[str, str]) -> tuple[Project, ...]:
    """Every project file the store names, as trusted, whether or not its bytes still match: what
    a sync writes entries for (an edit withdraws trust at run time, not the client entries)."""
    return tuple(_project(file, record.get("data") or {}) for file, record in sorted(_records(environ).items())
                 if record.get("kind") not in OTHERS)


def withdrawn(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """Recorded project files whose trust no longer holds: (file, "changed" or "missing"); one
    that is no longer a project file at all counts as changed."""
    found = []
    for file, record in sorted(_records(environ).items()):
        if record.get("kind") in OTHERS:
            continue  # a model layer's or a clone's trust: core.model tells (Layer.distrust, Binding.distrust)
        try:
            raw = read(file)
        except Unreadable:
            found.append((file, "changed"))
            continue
        if raw is None or digest(raw) != record.get("sha256"):
            found.append((file, "missing" if raw is None else "changed"))
    return tuple(found)


class Around(Record):
    """The project files at a folder and above it."""

    trusted: tuple[Project, ...]  # whose bytes are still the trusted ones, by root
    notices: tuple[str, ...]  # one line for each that does not count: never trusted, or changed since


def around(folder: str, environ: Mapping[str, str]) -> Around:
    """One walk from canonical ``folder`` up to /: each project file is read once, the trust
    store once (the bridge does this at every start)."""
    records = _records(environ)
    found: list[Project] = []
    notices: list[str] = []
    path = folder
    while True:
        file = os.path.join(path, FILE_NAME)
        try:
            raw = read(file)
        except Unreadable as reason:
            raw = None
            notices.append(f"{file} is ignored: {reason}")
        if raw is not None:
            record = records.get(file)
            if record is None or record.get("kind") in OTHERS:
                notices.append(f"{file} is ignored: it is not trusted (review it, then run `projector trust {path}`)")
            elif digest(raw) != record.get("sha256"):
                notices.append(f"{file} is ignored: it changed since it was trusted (review it, then run `projector trust {path}`)")
            else:
                found.append(_project(file, record.get("data") or {}))
        parent = os.path.dirname(path)
        if parent == path:
            return Around(tuple(reversed(found)), tuple(notices))
        path = parent


# --------------------------------------------------------------------------- checking a file


def checked(raw: bytes, provider_specs: Mapping[str, Any], shown: str, model_hooks: Iterable[str] = ()) -> Any:
    """A project file's content, checked by ``schemas/project.schema.json`` and against the
    providers it can name (the model's, given as their specs, and its own) and the hooks it can
    turn on or off (``model_hooks``: the names the model defines, and its own)."""
    from projector.core import yamltext
    from projector.core.checking import Places, checked_yaml
    from projector.core.errors import Problem
    from projector.core.semantic import defined_hooks, hook_problems, use_problems

    text = yamltext.decoded(raw, shown)

    def semantic(data: Any) -> list[Problem]:
        own = data.get("providers") or {}
        places = Places.single(shown, text)
        problems = [
            places.problem(("providers", name), f'"{name}" is also a provider of your model; a project file may '
                          "change it (settings under its name) but not declare it again", key=True)
            for name in own
            if name in provider_specs
        ]
        folded = {str(name).casefold(): str(name) for name in provider_specs}
        problems += [
            places.problem(("providers", name), f'"{name}" and "{folded[name.casefold()]}" of your model differ only in case, and a '
                          "client that folds the case of server names takes them for one: rename it", key=True)
            for name in own
            if name not in provider_specs and name.casefold() in folded
        ]
        problems += hook_problems(places, ("hooks",), data.get("hooks"), set(model_hooks) | defined_hooks([data.get("hooks")]))
        return problems + use_problems(places, (), data, {**provider_specs, **own}, reserved=("providers", "hooks"))

    return checked_yaml(text, shown, "project", semantic)


def hook_names(loaded: Any) -> set[str]:
    """The hooks the model defines (a project file may turn them on or off)."""
    return {h.name for hooks in (loaded.hooks, *(b.hooks for b in loaded.bindings)) for h in hooks if h.command is not None}


def specs(loaded: Any) -> dict[str, dict[str, Any]]:
    """The model's providers as the specs a project file is checked against (those left out until
    a layer is trusted too: a project file may not declare one again under its name)."""
    return {
        p.name: ({"command": p.command} if p.local else {"url": p.url, **({"kbs": list(p.kbs)} if p.kbs is not None else {})})
        for p in loaded.providers + loaded.withheld
    }
