"""launch: what runs for a local provider in a folder, and where each setting came from."""

from __future__ import annotations

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
