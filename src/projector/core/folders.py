"""Folders as placement compares them: canonical paths, containment on path-component
boundaries, and the linked git worktree a folder is in. Only ``os`` is imported: the hook
dispatcher, which runs on every tool call, uses this without the model's types."""

from __future__ import annotations

import os
from collections import namedtuple

from projector.core.reading import Unreadable, read_regular


def canonical(path: str) -> str:
    return os.path.realpath(path)


def contains(folder: str, path: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


# --------------------------------------------------------------------------- git worktrees

Worktree = namedtuple("Worktree", "root main")  # the linked worktree's top folder; the repository's main worktree


def worktree(folder: str) -> Worktree | None:
    """The linked git worktree ``folder`` is in, read from git's own files (no git process):
    its ``.git`` file names the worktree's git dir, whose ``commondir`` is the repository's."""
    path = folder
    while True:
        dot_git = os.path.join(path, ".git")
        if os.path.isdir(dot_git):
            return None  # a main worktree (or a plain repository): bindings apply directly
        if os.path.isfile(dot_git):
            return _linked(path, dot_git)
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def worktree_at(root: str) -> Worktree | None:
    """The linked worktree whose top folder is ``root`` (its ``.git`` is a file), if its repository lists it back."""
    dot_git = os.path.join(root, ".git")
    return _linked(root, dot_git) if os.path.isfile(dot_git) else None


def _linked(root: str, dot_git: str) -> Worktree | None:
    """The worktree at ``root``, if its repository lists it back: anyone can write a ``.git`` file
    and a git dir whose ``commondir`` names a bound repository, so, as git does, the git dir must
    be the repository's own ``worktrees/<name>``, and its ``gitdir`` must name this ``.git``."""
    try:
        pointer = _first_line(dot_git)
        if not pointer.startswith("gitdir:"):
            return None
        git_dir = canonical(os.path.join(root, pointer[len("gitdir:") :].strip()))
        common = canonical(os.path.join(git_dir, _first_line(os.path.join(git_dir, "commondir"))))
        listed = canonical(os.path.join(git_dir, _first_line(os.path.join(git_dir, "gitdir"))))
    except (Unreadable, UnicodeDecodeError, ValueError):
        return None  # a submodule's .git file has no commondir: not a worktree
    if os.path.dirname(git_dir) != os.path.join(common, "worktrees") or listed != canonical(dot_git):
        return None  # not a worktree the repository knows of at this place
    if os.path.basename(common) != ".git":
        return None  # a bare repository has no main worktree to carry bindings
    return Worktree(root=root, main=os.path.dirname(common))


def _first_line(path: str) -> str:
    """The first line of one of git's small files (the folder may be anyone's: read with care)."""
    raw = read_regular(path, 4096)
    if raw is None:
        raise Unreadable("absent")
    return raw.decode("utf-8").partition("\n")[0].strip()


def seen_from(binding_path: str, tree: Worktree) -> str | None:
    """Where a binding of the main worktree stands in the linked worktree ``tree``."""
    if contains(tree.main, binding_path):
        return tree.root + binding_path[len(tree.main) :]
    if contains(binding_path, tree.main):
        return tree.root  # a binding above the repository: the worktree as a whole
    return None
