"""A workspace's environment for a local server: built fresh at every start, never applied to
projector's own environment.

Layers, in order, over the environment the client gave the bridge:
1. ``env_files``: .env files of the workspace, parsed by python-dotenv's parser;
2. ``direnv: true``: ``direnv export json`` run in the workspace root, used only when direnv
   itself exits 0 (it refuses a blocked or changed ``.envrc``; projector never allows one);
3. ``env`` of the model and the project file.
``${VAR}`` and ``${VAR:-default}`` in values are expanded (python-dotenv's own rules) against
the environment built so far, so ``PATH: ${PATH}:/extra`` works. A null is an unset, and so is a
variable direnv unloads. Values never leave this module except into the server's environment:
what is reported is names.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping

from projector.core.record import Record
from projector.core.variables import expand_value

TYPE_CHECKING = False  # the hook dispatcher builds overlays too, and must not import the model's types
if TYPE_CHECKING:
    from projector.runtime.launch import Launch

DIRENV_TIMEOUT = 30.0  # seconds; a nix-backed .envrc can be slow, a hung one must not hang the client


class Overlay(Record):
    """A local server's environment, and what changed it."""

    environ: dict[str, str]  # the server's whole environment
    names: tuple[tuple[str, tuple[str, ...]], ...]  # (source, names it set or unset), never values
    notices: tuple[str, ...]  # things the user should know (no values)


def _apply(environ: dict[str, str], changes: list[tuple[str, str | None]], *, expanding: bool) -> tuple[str, ...]:
    for name, value in changes:
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = expand_value(value, environ) if expanding else value
    return tuple(dict.fromkeys(name for name, _ in changes))


def env_file(path: str, notices: list[str]) -> list[tuple[str, str | None]]:
    """A .env file's assignments in order (values unexpanded); a bad line is skipped with a
    notice naming the file and line, a missing file with one naming the file."""
    from dotenv.parser import parse_stream

    try:
        with open(path, encoding="utf-8") as handle:
            bindings = list(parse_stream(handle))
    except FileNotFoundError:
        notices.append(f"{path}: no such env file; it was skipped")
        return []
    except (OSError, UnicodeDecodeError) as exc:
        notices.append(f"{path}: cannot be read ({exc.__class__.__name__}); it was skipped")
        return []
    changes: list[tuple[str, str | None]] = []
    for binding in bindings:
        if binding.error:
            notices.append(f"{path}:{binding.original.line}: not a NAME=value line; it was skipped")
        elif binding.key is not None:
            changes.append((binding.key, binding.value if binding.value is not None else ""))
    return changes


def direnv_export(root: str, environ: Mapping[str, str], notices: list[str]) -> list[tuple[str, str | None]]:
    """What direnv would change in a shell entering ``root``; nothing unless direnv allows it."""
    import subprocess

    from projector.core.locations import on_path

    program = on_path("direnv", environ)
    if program is None:
        notices.append("direnv: true, but direnv is not on PATH: no .envrc was loaded")
        return []
    try:
        done = subprocess.run(
            [program, "export", "json"],
            cwd=root,
            env=dict(environ),
            stdin=subprocess.DEVNULL,
            capture_output=True,  # its messages may echo what an .envrc prints: never shown
            timeout=DIRENV_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        notices.append(f"direnv export in {root} failed ({exc.__class__.__name__}): no .envrc was loaded")
        return []
    if done.returncode != 0:
        blocked = b"is blocked" in done.stderr
        why = "its .envrc is not allowed (run `direnv allow` there yourself if you trust it)" if blocked else f"exit {done.returncode}"
        notices.append(f"direnv did not load {root} ({why}): no .envrc was loaded")
        return []
    try:
        exported = json.loads(done.stdout or b"{}")
    except ValueError:
        notices.append(f"direnv export in {root} printed something other than JSON: no .envrc was loaded")
        return []
    return [(str(k), None if v is None else str(v)) for k, v in (exported or {}).items()]


def build(launch: Launch, base: Mapping[str, str], direnv: Callable[..., list] = direnv_export) -> Overlay:
    environ = dict(base)
    notices: list[str] = []
    names: list[tuple[str, tuple[str, ...]]] = []
    for path in launch.env_files:
        names.append((path, _apply(environ, env_file(path, notices), expanding=True)))
    if launch.direnv and launch.root is not None:
        changed = _apply(environ, direnv(launch.root, environ, notices), expanding=False)
        names.append((f"direnv {launch.root}", tuple(n for n in changed if not n.startswith("DIRENV_"))))
    if launch.env:
        names.append(("env settings", _apply(environ, list(launch.env), expanding=True)))
    return Overlay(environ, tuple((source, found) for source, found in names if found), tuple(notices))


def program(launch: Launch, environ: Mapping[str, str]) -> str | None:
    """The executable ``launch.command`` names: a path (a relative one taken from the workspace
    root, not from its cwd) or a name found on the workspace's PATH; None when there is none."""
    command = launch.command or ""
    if "/" in command:
        path = os.path.normpath(os.path.join(launch.base or launch.cwd, command))
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    from projector.core.locations import on_path

    return on_path(command, environ) if command else None
