"""launch: what runs for a local provider in a folder, and where each setting came from."""

from __future__ import annotations

import os
from pathlib import Path

from projector.core.modeltypes import Binding, Model, Project, Provider, Settings
from projector.runtime.launch import resolve

LINT = Provider("lint", None, None, None, None, command="lint-mcp", args=("--stdio",), env=(("LEVEL", "base"),), enabled=False)


def model(*bindings: Binding) -> Model:
    return Model(Path("/m.yaml"), None, (LINT,), tuple(bindings))


def test_unbound_folders_get_the_definition_alone_with_cwd_from_the_folder():
    launch = resolve(model(), (), "lint", "/elsewhere")
    assert (launch.declared, launch.enabled, launch.runs, launch.root, launch.cwd) == (True, False, False, None, "/elsewhere")
    assert launch.env == (("LEVEL", "base"),) and not launch.direnv


def test_binding_settings_are_laid_over_and_paths_taken_from_the_workspace_root():
    bound = Binding("/w/a", (("lint", Settings(enabled=True, cwd="tools", env=(("EXTRA", "1"),), env_files=(".env",), direnv=True)),))
    launch = resolve(model(bound), (), "lint", "/w/a/deep/er")
    assert launch.runs and launch.root == "/w/a" and launch.cwd == "/w/a/tools"
    assert launch.args == ("--stdio",) and launch.env == (("LEVEL", "base"), ("EXTRA", "1"))
    assert launch.env_files == ("/w/a/.env",) and launch.direnv
    sources = dict(launch.sources)
    assert sources["command"] == "model /m.yaml" and sources["cwd"] == "binding /w/a in /m.yaml"
    assert sources["env"] == "model /m.yaml; binding /w/a in /m.yaml" and sources["args"] == "model /m.yaml"


def test_a_provider_only_a_project_file_declares_runs_there_and_is_undeclared_elsewhere():
    notes = Provider("notes", None, None, None, None, command="./bin/notes")
    project = Project("/w/b", "/w/b/.projector.yaml", (notes,), (("notes", Settings(args=("--fast",))),))
    here = resolve(model(), (project,), "notes", "/w/b/src")
    assert here.runs and here.command == "./bin/notes" and here.args == ("--fast",) and here.cwd == "/w/b"
    assert dict(here.sources)["command"] == "project file /w/b/.projector.yaml"
    assert not resolve(model(), (project,), "notes", "/w/c").declared


def test_shared_and_linger_come_from_the_provider_or_a_binding_with_their_sources():
    shared = Provider("srv", None, None, None, None, command="srv", shared=True)
    bound = Binding("/w/a", (("srv", Settings(linger=2.5)),))
    here = resolve(Model(Path("/m.yaml"), None, (shared,), (bound,)), (), "srv", "/w/a")
    assert (here.shared, here.linger) == (True, 2.5)
    assert dict(here.sources)["shared"] == "model /m.yaml" and dict(here.sources)["linger"] == "binding /w/a in /m.yaml"
    elsewhere = resolve(model(), (), "lint", "/w/b")
    assert (elsewhere.shared, elsewhere.linger) == (False, 30.0)
    assert dict(elsewhere.sources)["shared"] == "default"


# --------------------------------------------------------------------------- the tool rule: one decision

TEAM = """\
version: 1
providers:
  lint:
    command: lint-mcp
    tools: {allow: ["read_*", "write_*"], deny: [write_secret]}
"""

ME = """\
version: 1
include: [team.yaml]
bindings:
  ~/a:
    lint: {tools: {deny: [fix, "write_*"]}}
  ~/a/deep:
    lint: {enabled: true}
  ~/b:
    lint: {tools: {deny: [x]}}
"""

NAMES = ("read_file", "write_file", "write_secret", "fix", "search", "x", "drop")


def _project(loaded: Model, folder: Path, text: str) -> Project:
    from projector.core import model as models
    from projector.core import projects

    data = projects.checked(text.encode(), projects.specs(loaded), f"{folder.name}/.projector.yaml")
    return Project(str(folder), str(folder / ".projector.yaml"),
                   tuple(models.provider(n, s) for n, s in data.get("providers", {}).items()), models.uses(data))


def test_a_local_session_a_remote_style_session_and_explain_get_one_rule(tmp_path):
    """The bridge of a local provider (launch.tools), a session over roots (scope.over_roots) and
    `explain`/`projector tools` (scope.tools) apply the same rule in every folder: across model
    layers, bindings, a trusted project file over its binding, a provider only a project file
    declares, and deny over allow."""
    from projector.core import model as models
    from projector.core import scope

    (tmp_path / "team.yaml").write_text(TEAM)
    (tmp_path / "me.yaml").write_text(ME)
    loaded = models.load(tmp_path / "me.yaml", {"HOME": str(tmp_path)}, ("codex",))
    for folder in ("a/deep", "b/p", "c", "elsewhere"):
        (tmp_path / folder).mkdir(parents=True)
    real = Path(os.path.realpath(tmp_path))
    trusted = (_project(loaded, real / "b/p", "lint: {tools: {allow: [search, x]}}\n"),
               _project(loaded, real / "c", "providers:\n  own:\n    command: own-mcp\n    tools: {deny: [drop]}\n"))
    offered = {  # what a user sees listed, folder by folder
        ("lint", "a"): ["read_file", "search", "x", "drop"],  # the binding's rule replaces the layer's whole
        ("lint", "a/deep"): ["read_file", "write_file"],  # says no tools: the provider's, deny over allow
        ("lint", "b"): ["read_file", "write_file", "write_secret", "fix", "search", "drop"],
        ("lint", "b/p"): ["search", "x"],  # the project file's over its binding's
        ("lint", "elsewhere"): ["read_file", "write_file"],
        ("own", "c"): ["read_file", "write_file", "write_secret", "fix", "search", "x"],
    }
    rules = {}
    for (name, folder), names in offered.items():
        path = str(real / folder)
        local = resolve(loaded, trusted, name, path).tools
        shown = scope.tools(loaded, name, path, trusted).rule
        assert local == shown, f"{name} in {folder}"
        assert [n for n in NAMES if local is None or local.offers(n)] == names, f"{name} in {folder}"
        rules[folder] = local
    lint = loaded.provider("lint")
    for folder in ("a", "a/deep", "b", "b/p"):  # one bound root: its own rule
        assert scope.over_roots(loaded, lint, [(str(real / folder), trusted)], None).tools == rules[folder]
    both = scope.over_roots(loaded, lint, [(str(real / "a"), trusted), (str(real / "b/p"), trusted)], None).tools
    assert [n for n in NAMES if both.offers(n)] == ["read_file", "search", "x", "drop"]  # any of the roots' rules
