"""scope: a folder's workspace for a provider across bindings, git worktrees and project files."""

from __future__ import annotations

import subprocess
from pathlib import Path

from projector.core.model import Binding, Model, Provider, Settings
from projector.core.projects import Project
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
