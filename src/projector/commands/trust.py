"""`projector trust` and `projector untrust`: whether a workspace's .projector.yaml, or a file the
model includes, counts; each trust shows what it lets run, or where it lets a token go."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from projector.commands.common import err, load_model
from projector.core import files, projects
from projector.core.locations import state_dir
from projector.core.errors import ProjectorError, display_path, shown_name
from projector.core.hooks import specs
from projector.core.layers import parse_layer
from projector.core.modeltypes import RESERVED, Layer, Model, Settings, token_words
from projector.core.reading import Unreadable, read_regular
from projector.core.variables import changes_what_runs


def trust(folder: str | None, config: str | None) -> int:
    if folder is not None and os.path.isfile(folder):
        return _trust_layer(folder, config)
    file = projects.project_file(folder or os.getcwd())
    shown = display_path(file)
    try:
        loaded = load_model(config)
    except ProjectorError as error:
        err(f"error: {error}\nnothing was trusted")
        return 1
    clones = _trust_clone(os.path.dirname(file), loaded)
    try:
        raw = projects.read(file)
    except Unreadable as reason:
        err(f"error: {shown} is not trusted: {reason}")
        return 2
    if raw is None:
        if clones:
            return 0
        err(f"error: {shown}: no project file here, and no clone a repository binding found; write one (README: Project "
            "files) or give another folder")
        return 2
    try:
        data = projects.checked(raw, projects.specs(loaded), shown, projects.hook_names(loaded))
    except ProjectorError as error:
        err(f"error: {error}\nnothing was trusted")
        return 1
    show_changes(file, shown, raw)
    projects.trust(file, data, raw, os.environ)
    keep_copy(raw)
    print(f"trusted {shown} (sha256 {projects.digest(raw)[:12]})")
    for line in project_summary(data):
        print(f"  {line}")
    print("run `projector sync` (the shell hook does it at the next prompt) so every client has its entries")
    return 0


# --------------------------------------------------------------------------- what a trusted file lets run


def _variable(name: str) -> str:
    return f"{name} [changes what runs]" if changes_what_runs(name) else name


def runs_words(spec: Mapping[str, Any]) -> list[str]:
    """What a server's spec says that runs: the command and its args, cwd, the names of the
    variables it sets (those in core.variables.CHANGES_WHAT_RUNS marked), env files and direnv."""
    words = []
    if "command" in spec:
        words.append(f"runs {shown_name(shlex.join([str(spec['command']), *map(str, spec.get('args') or [])]))}")
    elif spec.get("args") is not None:
        words.append(f"args {shown_name(shlex.join(map(str, spec['args'])))}")
    if spec.get("cwd"):
        words.append(f"in {shown_name(str(spec['cwd']))}")
    if spec.get("env"):
        words.append("sets " + ", ".join(_variable(str(name)) for name in spec["env"]))
    if spec.get("env_files"):
        words.append("reads " + ", ".join(shown_name(str(f)) for f in spec["env_files"]))
    if spec.get("direnv"):
        words.append("loads its folder's .envrc (direnv)")
    return words


def _settings_words(value: Any) -> str | None:
    """What a binding's (or a project file's) settings for a provider run or turn on; None: they only narrow."""
    if not isinstance(value, Mapping):
        return None
    words = (["turns it on"] if value.get("enabled") is True else []) + runs_words(value)
    return "; ".join(words) or None


def _hook_words(spec: Mapping[str, Any]) -> str:
    if "command" not in spec:
        return "turned on" if spec.get("enabled") else "turned off"
    when = f"on {spec.get('event')}" + (f" ({spec['matcher']})" if spec.get("matcher") else "")
    rest = runs_words({key: value for key, value in spec.items() if key != "command"})
    return "; ".join([f"{when} runs {shown_name(str(spec['command']))}", *rest])


def project_summary(data: Mapping[str, Any]) -> list[str]:
    """One line for each server and hook a project file declares or sets, then what only narrows."""
    lines = [f"local server {name}: {'; '.join(runs_words(spec))}" for name, spec in sorted((data.get("providers") or {}).items())]
    lines += [f"hook {name}: {_hook_words(spec)}" for name, spec in (data.get("hooks") or {}).items()]
    narrowing = []
    for name, value in sorted(data.items()):
        if name in ("providers", "hooks"):
            continue
        said = _settings_words(value)
        if said:
            lines.append(f"settings for {name}: {said}")
        else:
            narrowing.append(name)
    if narrowing:
        lines.append(f"settings that only narrow: {', '.join(narrowing)}")
    return lines


def layer_summary(data: Mapping[str, Any], loaded: Model, layer: Layer) -> list[str]:
    """One line for each thing a model layer says that runs or sends a token: its local servers,
    hooks and token-carrying providers, at the top level and in its bindings."""
    lines = []

    def sends(name: str) -> str | None:
        provider = loaded.provider(name) or next((p for p in loaded.withheld if p.name == name), None)
        return None if provider is None else f"sends {token_words(provider)} to {provider.url}"

    for name, spec in (data.get("providers") or {}).items():
        if name in layer.remote:
            if said := sends(name):
                lines.append(f"provider {name}: " + ("turns it on; " if spec.get("enabled") is True else "") + said)
        elif said := runs_words(spec):
            lines.append(f"local server {name}: {'; '.join(said)}")
    lines += [f"hook {name}: {_hook_words(spec)}" for name, spec in (data.get("hooks") or {}).items()]
    running = layer.local or layer.hooks
    if data.get("roots") and running:
        lines.append(f"roots: {', '.join(map(str, data['roots']))} (where the clones a repository binding runs things in are looked for)")
    for raw, binding in (data.get("bindings") or {}).items():
        if "repo" in (binding or {}) and running:
            lines.append(f"binding {raw}: the clones of {binding['repo']} (what it runs, runs there once you trust each clone)")
        for name, value in (binding or {}).items():
            if name == "hooks":
                lines += [f"hook {hook} (binding {raw}): {_hook_words(spec)}" for hook, spec in (value or {}).items()]
            elif name in layer.remote and isinstance(value, Mapping) and value.get("enabled") is True and (said := sends(name)):
                lines.append(f"provider {name} (binding {raw}): turns it on; {said}")
            elif name not in RESERVED and (said := _settings_words(value)):
                lines.append(f"local server {name} (binding {raw}): {said}")
    return lines


def _trust_clone(folder: str, loaded: Model) -> bool:
    """Trust canonical ``folder`` as a clone of each repository binding that found it there,
    showing what it says it is and what the binding runs there; False: no binding found it."""
    found = [(repo, clone) for repo in loaded.repos for clone in repo.clones if clone.path == folder]
    for repo, clone in found:
        projects.trust_clone(folder, repo.repo, os.environ)
        print(f"trusted {display_path(folder)} as a clone of {repo.repo} (its remote {clone.remote}): binding {repo.name} runs there")
        lines = [f"local server {name}: {words}" for name, said in repo.uses
                 if (provider := loaded.provider(name)) is not None and provider.local and (words := _settings_words(_fields(said)))]
        lines += [f"hook {hook.name}: {_hook_words(specs((hook,))[hook.name])}" for hook in repo.hooks]
        for line in lines or ["nothing that runs: it narrows only"]:
            print(f"  {line}")
    return bool(found)


def _fields(settings: Settings) -> dict[str, Any]:
    """Settings as the spec a file writes (env as a mapping)."""
    said = {name: getattr(settings, name) for name in settings.said()}
    if settings.env is not None:
        said["env"] = dict(settings.env)
    return said


def _trust_layer(path: str, config: str | None) -> int:
    """Trust a file the model includes: the local servers and hooks it declares or sets may run while its bytes are these."""
    shown = display_path(path)
    try:
        loaded = load_model(config)
    except ProjectorError as error:
        err(f"error: {error}\nnothing was trusted")
        return 1
    real = os.path.realpath(path)
    layer = next((layer for layer in loaded.layers[:-1] if os.path.realpath(layer.path) == real), None)
    if layer is None:
        included = ", ".join(display_path(layer.path) for layer in loaded.layers[:-1]) or "none"
        err(f"error: {shown} is not a file your model includes (it includes: {included}); a project file is trusted by its folder")
        return 2
    try:
        raw = read_regular(real, 64 * 1024 * 1024) or b""
    except Unreadable as reason:
        err(f"error: {shown} is not trusted: {reason}")
        return 2
    if projects.digest(raw) != layer.sha256:
        err(f"error: {shown} changed while projector read it; nothing was trusted, try again")
        return 1
    show_changes(real, shown, raw)
    projects.trust_layer(real, raw, os.environ)
    keep_copy(raw)
    print(f"trusted {shown} (sha256 {layer.sha256[:12]})")
    lines = layer_summary(parse_layer(raw.decode("utf-8"), shown), loaded, layer)
    for line in lines:
        print(f"  {line}")
    if not lines:
        print("  it declares no local server, no hook and no provider that carries a token: it counted without trust")
    print("run `projector sync` (the shell hook does it at the next prompt)")
    return 0


def copies() -> Path:
    """Where the bytes of each trusted file are kept, by sha256: what a later `trust` diffs against."""
    return state_dir(os.environ) / "trusted"


def keep_copy(raw: bytes) -> None:
    path = copies() / projects.digest(raw)
    if not path.exists():
        try:
            files.write_bytes(path, raw)
        except OSError:
            pass  # the diff at the next trust is worth no failed trust


def show_changes(file: str, shown: str, raw: bytes) -> None:
    """Before trusting ``file`` again: what changed since it was last trusted, as a unified diff."""
    before = projects.trusted_digest(file, os.environ)
    now = projects.digest(raw)
    if before is None or before == now:
        print(f"{shown} is unchanged since it was trusted" if before == now else f"{shown} was never trusted: read it all")
        return
    try:
        old = (copies() / before).read_bytes()
    except OSError:
        print(f"{shown} changed since it was trusted (sha256 {before[:12]} then, {now[:12]} now); "
              "the text trusted then was not kept: read it all")
        return
    from projector.compile.report import text_diff

    print(f"{shown} changed since it was trusted:")
    sys.stdout.write(text_diff(old.decode("utf-8", "replace"), raw.decode("utf-8", "replace"), f"{shown} (trusted, sha256 {before[:12]})",
                               f"{shown} (now, sha256 {now[:12]})"))


def untrust(folder: str | None, config: str | None = None) -> int:
    if folder is not None and os.path.isfile(folder):
        file = os.path.realpath(folder)
        if not projects.untrust(file, os.environ):
            err(f"error: {display_path(file)} is not trusted; nothing to do")
            return 1
        print(f"the local servers and hooks {display_path(file)} declares or sets no longer run, and the providers it sends a "
              "token to are left out")
        return 0
    file = projects.project_file(folder or os.getcwd())
    if projects.untrust(os.path.dirname(file), os.environ):
        print(f"{display_path(os.path.dirname(file))}: the repository bindings that found it there run nothing there any more")
        if not os.path.exists(file):
            return 0
    declared = [p.name for project in projects.recorded(os.environ) if project.file == file for p in project.providers]
    if not projects.untrust(file, os.environ):
        err(f"error: {display_path(file)} is not trusted; nothing to do")
        return 1
    print(f"{display_path(file)} no longer counts")
    try:
        own = [name for name in declared if load_model(config).provider(name) is None]
    except ProjectorError:
        own = declared
    if own:
        print(f"run `projector sync` (the shell hook does it at the next prompt) to remove the entries only it declared: {', '.join(own)}")
    return 0
