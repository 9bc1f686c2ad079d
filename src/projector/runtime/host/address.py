"""Where a workspace host listens, and which host a session belongs to.

A host is named by a key: a hash of the workspace's identity and of what would run there (the
program, its arguments and folder, the names and values of the variables the workspace's
overlay sets). Values enter only the hash: nothing here stores or prints them. A session whose
key differs (the workspace's ``.env`` changed) gets a host of its own; the old one lives on
until its own sessions end.

A host's socket, start lock and log live in ``<state folder>/hosts``, a real folder of this
user with mode 0700 (anything else is refused, never repaired). The state folder is the one
thing every session of a user agrees on: the entries carry it (``--state``), while clients
pass or drop ``XDG_RUNTIME_DIR`` as they please (one client clears it for the servers it
starts, another passes it on), so a socket found through it made two hosts for one workspace. A socket's name is its key (a hash,
37 bytes); a folder path too long for ``sun_path`` is reached relatively
(``projector.runtime.host.at_path``).
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


def hosts_folder(environ: Mapping[str, str]) -> str:
    """Where hosts listen and log: ``<state folder>/hosts``."""
    return os.path.join(state_folder(environ), "hosts")


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
    folder = private(hosts_folder(environ))
    return Address(key_, *(os.path.join(folder, f"{key_}.{kind}") for kind in ("sock", "lock", "log")))


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
