"""Repositories named by their git remote, and where a person's clones of them are.

A team's model cannot know where each person keeps a repository, so a binding may name it by its
remote (``repo: github.com/acme/api``). Its clones are found under the folders the model lists
as ``roots`` (up to ``SCAN_DEPTH`` levels down: ``~/src/github.com/acme/api``) and among the
folders bound by path, from git's own files (``.git/config``'s ``[remote "..."] url``), without a
git process. This runs when the model is checked or synced, never at a bridge start: the clones
found are kept with the checked model. A linked worktree counts only when its repository lists it
back (core.folders' rule), so a forged ``.git`` file cannot claim a team's binding.
Only ``os``, ``re`` and core modules that import nothing heavy are used.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from projector.core.reading import Unreadable, read_regular
from projector.core.record import Record

SCAN_DEPTH = 3  # a root, a host, an owner, the clone: ~/src/github.com/acme/api
SKIPPED = frozenset({"node_modules", "__pycache__"})  # folders that hold no clone worth binding
CONFIG_BYTES = 1024 * 1024

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/]*@)?([^/:@]+)(?::\d*)?(/.*)?$")
_SCP = re.compile(r"^(?:[^@/:]+@)?([^/:@]+):(?!//)(.+)$")
_REMOTE_SECTION = re.compile(r'^\[\s*remote\s+"((?:[^"\\]|\\.)*)"\s*\]', re.IGNORECASE)


def normalise(remote: str) -> str | None:
    """A remote as ``host/path``: lower case, without scheme, user, port, a final ``/`` or
    ``.git``. ``git@github.com:Acme/api.git``, ``https://github.com/acme/api`` and
    ``github.com/acme/api`` are one repository. None: not a network remote (a local path)."""
    text = remote.strip()
    if "://" in text:
        found = _URL.match(text)
        if found is None:
            return None  # file:///srv/api.git and the like: a path, no host
        host, path = found.group(1), found.group(2) or ""
    elif (found := _SCP.match(text)) is not None:
        host, path = found.groups()
    elif re.match(r"^[A-Za-z0-9][A-Za-z0-9-]*(\.[A-Za-z0-9-]+)+/", text):
        host, _, path = text.partition("/")  # as a model writes it: github.com/acme/api
    else:
        return None
    path = path.strip("/")
    path = path[: -len(".git")] if path.endswith(".git") else path
    path = path.strip("/")
    if not host or not path:
        return None
    return f"{host}/{path}".lower()


def remotes(config: str) -> tuple[tuple[str, str], ...]:
    """The (name, url) of each remote a git config's text names, in order."""
    found: list[tuple[str, str]] = []
    section: str | None = None
    for raw in config.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            header = _REMOTE_SECTION.match(line)
            section = header.group(1) if header else None
            continue
        key, equals, value = line.partition("=")
        if section is not None and equals and key.strip().lower() == "url":
            found.append((section, _config_value(value)))
    return tuple(found)


def _config_value(value: str) -> str:
    value = value.strip()
    if value.startswith('"'):
        return value[1:].partition('"')[0]
    return re.split(r"\s[#;]", value, maxsplit=1)[0].strip()


class Clone(Record):
    """A git working tree found on this machine."""

    path: str  # canonical
    config: str  # the git config its remotes come from
    remotes: tuple[tuple[str, str], ...]  # (name, url)
    root: str | None  # the root it was found under; None: a bound folder


class Scan(Record):
    """What a look for clones found, and what it read."""

    clones: tuple[Clone, ...]
    watched: tuple[str, ...]  # folders listed and configs read: a change there may change the clones


def scan(roots: Iterable[str], bound: Iterable[str]) -> Scan:
    """The clones under ``roots`` and at the ``bound`` folders (absolute paths)."""
    clones: dict[str, Clone] = {}
    watched: list[str] = []
    for root in roots:
        _walk(os.path.realpath(root), SCAN_DEPTH, root, clones, watched)
    for folder in bound:
        real = os.path.realpath(folder)
        if real not in clones and os.path.lexists(os.path.join(real, ".git")):
            _add(real, None, clones, watched)
    return Scan(tuple(clones[p] for p in sorted(clones)), tuple(dict.fromkeys(watched)))


def _walk(folder: str, depth: int, root: str, clones: dict[str, Clone], watched: list[str]) -> None:
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError:
        return
    watched.append(folder)  # a clone made or removed here changes this folder
    if any(entry.name == ".git" for entry in entries):
        _add(folder, root, clones, watched)
        return  # a clone's own folders are its business
    if depth == 0:
        return
    for entry in sorted(entries, key=lambda e: e.name):
        if entry.name.startswith(".") or entry.name in SKIPPED:
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                _walk(entry.path, depth - 1, root, clones, watched)
        except OSError:
            continue


def _add(folder: str, root: str | None, clones: dict[str, Clone], watched: list[str]) -> None:
    config = _config_of(folder)
    if config is None or folder in clones:
        return
    try:
        raw = read_regular(config, CONFIG_BYTES)
    except Unreadable:
        return
    if raw is None:
        return
    watched.append(config)
    clones[folder] = Clone(folder, config, remotes(raw.decode("utf-8", errors="replace")), root)


def _config_of(folder: str) -> str | None:
    """The git config of the working tree at ``folder``: its own ``.git/config``, or, for a linked
    worktree its repository lists back, the repository's."""
    from projector.core.folders import worktree_at

    dot_git = os.path.join(folder, ".git")
    if os.path.isdir(dot_git):
        return os.path.join(dot_git, "config")
    tree = worktree_at(folder)
    return os.path.join(tree.main, ".git", "config") if tree is not None else None


def matches(clone: Clone, repo: str) -> tuple[str, str] | None:
    """The (name, url) of the first remote of ``clone`` that is ``repo`` (normalised)."""
    return next(((name, url) for name, url in clone.remotes if normalise(url) == repo), None)
