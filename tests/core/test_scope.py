"""scope: a folder's workspace for a provider across bindings, git worktrees and project files."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from projector.core.modeltypes import Binding, Model, Project, Provider, Settings
from projector.core.scope import place, resolve, worktree

DOCS = Provider("docs", "https://kb.example.com/mcp", "T", ("a", "b", "c"), ("a",))
LINT = Provider("lint", None, None, None, None, command="lint-mcp")


def model(*bindings: Binding) -> Model:
    return Model(Path("m.yaml"), None, (DOCS, LINT), tuple(bindings))


def binding(path: Path | str, worktrees: bool = False, **uses: Settings) -> Binding:
    return Binding(str(path), tuple(sorted(uses.items())), worktrees)


def project(root: Path, **uses: Settings) -> Project:
    return Project(str(root), str(root / ".projector.yaml"), (), tuple(sorted(uses.items())))


def test_the_deepest_place_that_names_the_provider_wins_on_component_boundaries(tmp_path):
    outer, inner = binding(tmp_path / "w", docs=Settings(kbs=("a",))), binding(tmp_path / "w/a", lint=Settings(enabled=False))
    m = model(outer, inner)
    assert place(m, (), "docs", str(tmp_path / "w/a/x")).binding == outer  # inner does not name docs
    assert place(m, (), "lint", str(tmp_path / "w/a/x")).root == str(tmp_path / "w/a")
    assert place(m, (), "lint", str(tmp_path / "w/ab")).root is None


def test_a_project_file_at_the_same_folder_is_laid_over_the_binding_env_merging(tmp_path):
    folder = tmp_path / "w"
    m = model(binding(folder, lint=Settings(cwd="tools", env=(("A", "1"), ("B", "2")))))
    p = project(folder, lint=Settings(env=(("B", "3"),), direnv=True))
    placed = place(m, (p,), "lint", str(folder / "sub"))
    assert (placed.binding is not None, placed.project) == (True, p)
    assert placed.settings == Settings(cwd="tools", env=(("A", "1"), ("B", "3")), direnv=True)


def test_a_deeper_binding_beats_a_project_file_above_it(tmp_path):
    m = model(binding(tmp_path / "w/deep", docs=Settings(kbs=("c",))))
    p = project(tmp_path / "w", docs=Settings(kbs=("b",)))
    assert resolve(m, DOCS, str(tmp_path / "w/deep/x"), (p,)).kbs == ("c",)
    assert resolve(m, DOCS, str(tmp_path / "w/x"), (p,)).kbs == ("b",)


def test_remote_settings_enabled_false_is_no_kb_and_unsaid_kbs_is_the_default(tmp_path):
    m = model(binding(tmp_path / "off", docs=Settings(enabled=False)), binding(tmp_path / "on", docs=Settings(enabled=True)))
    assert resolve(m, DOCS, str(tmp_path / "off")).kbs == ()
    assert resolve(m, DOCS, str(tmp_path / "on")).kbs == ("a",)


def _git(cwd: Path, *args: str) -> None:
    identity = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(cwd)}
    subprocess.run(["git", *args], cwd=cwd, env=identity, check=True, capture_output=True)


def test_worktrees_are_found_from_gits_own_files_and_see_the_repositorys_bindings(tmp_path):
    repo, tree = tmp_path / "repo", tmp_path / "trees" / "topic"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "f").write_text("x")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "x")
    _git(repo, "worktree", "add", "-q", str(tree))
    assert worktree(str(tree / "pkg")) == worktree(str(tree)) != None  # noqa: E711
    assert worktree(str(tree)).main == str(repo) and worktree(str(repo / "pkg")) is None
    m = model(binding(repo / "pkg", worktrees=True, docs=Settings(kbs=("b",))), binding(tmp_path, worktrees=True, lint=Settings()))
    assert place(m, (), "docs", str(tree / "pkg" / "x")).root == str(tree / "pkg")
    assert place(m, (), "docs", str(tree)).root is None  # above the bound package
    assert place(m, (), "lint", str(tree / "pkg")).root == str(tmp_path)  # a direct binding above both


def _lint_mcp(folder: Path, canary: Path) -> Path:
    """A `lint-mcp` in ``folder``/bin that leaves ``canary`` behind when it runs."""
    program = folder / "bin" / "lint-mcp"
    program.parent.mkdir(parents=True)
    program.write_text(f"#!/bin/sh\necho ran > {canary}\n")
    program.chmod(0o755)
    (folder / ".env").write_text(f"PATH={program.parent}:/usr/bin:/bin\n")
    return program


def _bridge(sandbox, config: Path, folder: Path) -> subprocess.CompletedProcess[str]:
    import sys

    initialize = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
    command = [sys.executable, "-m", "projector", "mcp", "--provider", "lint", "--config", str(config)]
    return subprocess.run(command, cwd=folder, env=sandbox.env, input=initialize, capture_output=True, text=True, timeout=60)


def test_a_forged_worktree_gets_nothing_of_the_binding_and_runs_nothing(sandbox):
    """A folder whose .git file names a git dir whose commondir names the bound repository is not
    a worktree of it unless the repository lists it back, as git does (issue 11, item 1): the
    binding's env_files (a PATH to the attacker's lint-mcp) must not apply there."""
    bound, real, evil = sandbox.home / "work" / "bound", sandbox.home / "trees" / "topic", sandbox.home / "Downloads" / "evil"
    bound.mkdir(parents=True)
    (bound / "f").write_text("x")
    _git(bound, "init", "-q")
    _git(bound, "add", ".")
    _git(bound, "commit", "-qm", "x")
    _git(bound, "worktree", "add", "-q", str(real))
    config = sandbox.model(
        "version: 1\nproviders:\n  lint:\n    command: lint-mcp\n    enabled: false\n"
        f"bindings:\n  {bound}:\n    worktrees: true\n    lint: {{enabled: true, env_files: [.env]}}\n"
    )
    (evil / "fakegit" / "wt").mkdir(parents=True)
    (evil / ".git").write_text("gitdir: fakegit/wt\n")
    (evil / "fakegit" / "wt" / "commondir").write_text(f"{os.path.relpath(bound / '.git', evil / 'fakegit' / 'wt')}\n")
    (evil / "fakegit" / "wt" / "gitdir").write_text(f"{evil}/.git\n")  # the forger can write this one
    forged_canary, real_canary = sandbox.root / "evil-ran", sandbox.root / "real-ran"
    _lint_mcp(evil, forged_canary)
    _lint_mcp(real, real_canary)

    started = _bridge(sandbox, config, evil)
    assert started.returncode == 0 and not forged_canary.exists(), "the attacker's lint-mcp ran"
    assert worktree(str(evil)) is None and worktree(str(real)).main == str(bound)
    assert '"tools"' in started.stdout  # answered here, as a provider turned off: no tools, nothing started
    _bridge(sandbox, config, real)
    assert real_canary.read_text() == "ran\n"  # the real worktree gets the binding and its env_files


def test_a_worktree_the_repository_lists_elsewhere_is_not_this_folder(sandbox, tmp_path):
    """Pointing .git at a real worktree's git dir does not borrow that worktree's place."""
    repo, real, copy = tmp_path / "repo", tmp_path / "real", tmp_path / "copy"
    repo.mkdir()
    (repo / "f").write_text("x")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "x")
    _git(repo, "worktree", "add", "-q", str(real))
    copy.mkdir()
    (copy / ".git").write_text((real / ".git").read_text())
    assert worktree(str(real)) is not None and worktree(str(copy)) is None


def test_git_files_that_are_fifos_do_not_hang_the_lookup(tmp_path):
    import threading

    folder = tmp_path / "evil"
    (folder / "g").mkdir(parents=True)
    (folder / ".git").write_text("gitdir: g\n")
    os.mkfifo(folder / "g" / "commondir")
    found: list[object] = []
    lookup = threading.Thread(target=lambda: found.append(worktree(str(folder))), daemon=True)
    lookup.start()
    lookup.join(timeout=10)
    assert found == [None], "the lookup blocked on a FIFO"
