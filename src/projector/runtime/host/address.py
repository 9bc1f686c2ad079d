"""Where a workspace host listens, and which host a session belongs to.

A host is named by a key: a hash of the workspace's identity and of what would run there (the
program, its arguments and folder, the names and values of the variables the workspace's
overlay sets). Values enter only the hash: nothing here stores or prints them. A session whose
key differs (the workspace's ``.env`` changed) gets a host of its own; the old one lives on
until its own sessions end.

Sockets live in a private folder: ``$XDG_RUNTIME_DIR/projector`` (``/run/user/<uid>`` when the
variable is not passed on, as some clients strip it), else ``<state folder>/hosts``. The folder
must be a real folder of this user with mode 0700; anything else is refused, never repaired.
The servers' logs go to ``<state folder>/hosts`` (they outlive a reboot's runtime folder).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Mapping

from projector import __version__
from projector.core.locations import state_folder
from projector.core.record import Record
from projector.runtime.launch import Launch

try:
    from _blake2 import blake2b as _blake2b  # `hashlib` would load OpenSSL first: milliseconds of every session's start
except ImportError:  # an interpreter built without it
    from hashlib import blake2b as _blake2b

PROTOCOL = 1  # of the socket between bridges and hosts; part of every key
SOCKET_PATH_MAX = 103  # bytes: sun_path holds 104 on macOS, 108 on Linux, with a NUL


class Unavailable(Exception):
    """No host can serve this session (the reason is for the user); it runs unshared."""


class Address(Record):
    """Where a shared host for one launch plan lives."""

    key: str
    socket: str  # the host's Unix socket
    lock: str  # taken by whoever starts the host, so racing sessions start one
    log: str  # the host's log: its own lines and the server's stderr


def key(plan: Launch, folder: str, program: str, environ: Mapping[str, str],
        overlay: tuple[tuple[str, tuple[str, ...]], ...]) -> str:
    """The host's name for ``plan`` run from canonical ``folder``: ``overlay`` is (source, names)
    as the overlay reports them; their values are read from ``environ`` (the server's
    environment) into the hash and nowhere else."""
    names = sorted({name for _, found in overlay for name in found})
    material = [PROTOCOL, __version__, plan.provider, workspace(plan, folder), program, list(argv(plan, program)), plan.cwd,
                [[n, environ.get(n)] for n in names]]
    return _blake2b(json.dumps(material).encode("utf-8"), digest_size=16).hexdigest()


def workspace(plan: Launch, folder: str) -> str:
    """A host's workspace: the workspace root, or the folder itself when it is in none."""
    return plan.root or folder


def argv(plan: Launch, program: str) -> tuple[str, ...]:
    return (plan.command or program, *plan.args)


def runtime_folder(environ: Mapping[str, str]) -> str:
    base = environ.get("XDG_RUNTIME_DIR")
    if not base:
        systemd = f"/run/user/{os.geteuid()}"
        if _owned_dir(systemd):
            base = systemd
    return os.path.join(base, "projector") if base else log_folder(environ)


def log_folder(environ: Mapping[str, str]) -> str:
    return os.path.join(state_folder(environ), "hosts")


def _owned_dir(path: str) -> bool:
    try:
        found = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(found.st_mode) and found.st_uid == os.geteuid()


def private(folder: str, *, create: bool = True) -> str:
    """``folder``, made if absent; Unavailable unless it is this user's own folder, mode 0700."""
    if create:
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise Unavailable(f"cannot make {folder} ({exc.strerror})") from None
    try:
        _own(folder, stat.S_ISDIR, "folder", "remove it so projector can make its own, or `chmod 700` it if it is yours")
    except OSError as exc:
        raise Unavailable(f"cannot use {folder} ({exc.strerror})") from None
    return folder


def address(key_: str, environ: Mapping[str, str]) -> Address:
    """The host's paths, its folders made private; Unavailable when they cannot be."""
    sockets, logs = private(runtime_folder(environ)), private(log_folder(environ))
    path = os.path.join(sockets, f"{key_}.sock")
    if len(os.fsencode(path)) > SOCKET_PATH_MAX:
        raise Unavailable(f"the socket path {path} is too long for a Unix socket: set XDG_RUNTIME_DIR to a shorter folder")
    return Address(key_, path, os.path.join(sockets, f"{key_}.lock"), os.path.join(logs, f"{key_}.log"))


def own_socket(path: str) -> None:
    """Unavailable unless ``path`` is a socket of this user (a planted one is never talked to);
    FileNotFoundError when there is none."""
    _own(path, stat.S_ISSOCK, "socket", "it was not used; remove it")


def _own(path: str, is_kind: Callable[[int], bool], kind: str, remedy: str) -> None:
    found = os.lstat(path)
    if not is_kind(found.st_mode):
        raise Unavailable(f"{path} is not a {kind}: {remedy}")
    if found.st_uid != os.geteuid():
        raise Unavailable(f"{path} belongs to another user (uid {found.st_uid}): {remedy}")
    if found.st_mode & 0o077:
        raise Unavailable(f"{path} is open to other users (mode {stat.S_IMODE(found.st_mode):o}): {remedy}")
