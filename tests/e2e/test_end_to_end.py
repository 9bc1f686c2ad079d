"""Real clients end to end: `projector sync` writes each client's file from a model; the client,
started headless in a folder against a mock of its model API, starts projector's bridge, and its
model is offered that folder's tools.

The routed KB server (tests/servers/routed_kb.py) shows the KBs of ``?kbs=`` in its ``search``
tool: with two or more, ``search`` takes a ``kb`` argument whose choices are that set; with one,
none. So the choices the model is offered are the folder's KB set, seen from the model's side.

Driven: Claude Code, Codex, OpenCode, Copilot CLI, Gemini CLI and Qwen Code (tests/e2e/drivers.py
says how). Not driven, for want of a way in: Amp installs, but has no model-API setting (AMP_URL
replaces its whole service, which runs threads and models server-side); Crush's npm package
downloads its binary from GitHub at install; Kiro, Cursor's agent, Goose and Antigravity's agy
download themselves from their vendors' sites (no registry package); VS Code, Windsurf, Zed and
Claude Desktop are desktop applications with no package here.
"""

from __future__ import annotations

import sys

import pytest
from conftest import CLIENTS, Desk
from servers import REPORT

KB_TOOLS = {"search", "big", "first_root"}


def kb_choices(run) -> list[str] | None:
    """The KBs the model may pick in docs' ``search`` (None: a single KB, no choice)."""
    tools = run.tools("docs")
    assert set(tools) == KB_TOOLS, run.summary()
    choice = (tools["search"].get("properties") or {}).get("kb")
    return sorted(choice["enum"]) if choice else None


def synced(desk: Desk) -> Desk:
    desk.write_model()
    desk.projector("sync")
    return desk


@pytest.mark.parametrize("client", CLIENTS)
def test_a_bound_workspace_offers_its_kbs_and_runs_its_local_provider_there(desk):
    run = synced(desk).drive(desk.session, call="notes_report")
    assert kb_choices(run) == ["api-a", "handbook"]
    assert desk.kb_sets() == {"api-a,handbook"}
    assert set(run.tools("notes")) == {"notes_report"}, run.summary()
    report = run.report()  # what the model got back from calling it
    assert report["cwd"] == str(desk.workspace)  # the workspace root, not the session's subfolder
    assert report["env"]["NOTES_MODE"] == "app"


@pytest.mark.parametrize("client", CLIENTS)
def test_a_folder_bound_to_no_kb_offers_no_tools_and_nothing_reaches_the_server(desk):
    run = synced(desk).drive(desk.vendor)
    assert run.offered and run.tools("docs") == {}, run.summary()
    assert (str(desk.vendor), "docs") in desk.bridges()  # the client did start the bridge there
    assert desk.kb_requests() == []
    assert run.tools("notes") == {} and desk.notes_started() == []


@pytest.mark.parametrize("client", CLIENTS)
def test_an_unbound_folder_offers_the_default_set_of_a_model_kept_elsewhere(desk):
    """The shell names the model in $PROJECTOR_CONFIG; a client started from a launcher does not
    have that variable, so the entry must say where the model is."""
    desk.shell["PROJECTOR_CONFIG"] = str(desk.write_model(desk.root / "dotfiles" / "projector.yaml"))
    desk.projector("sync")
    run = desk.drive(desk.scratch)
    assert kb_choices(run) is None  # the default, [api-b]: one KB
    assert desk.kb_sets() == {"api-b"}
    assert run.tools("notes") == {} and desk.notes_started() == []


@pytest.mark.parametrize("client", CLIENTS)
def test_moved_xdg_folders_still_lead_the_bridge_to_the_model_and_the_trust_store(desk):
    desk.move_xdg()
    desk.write_model()
    (desk.workspace / ".projector.yaml").write_text(f"providers:\n  tasks:\n    command: {sys.executable}\n    args: [{REPORT}, --tool, tasks_report]\n")
    desk.projector("trust", str(desk.workspace))
    desk.projector("sync")
    run = desk.drive(desk.session)
    assert kb_choices(run) == ["api-a", "handbook"]  # the model was found
    assert set(run.tools("tasks")) == {"tasks_report"}, run.summary()  # and the trust store


@pytest.mark.parametrize("client", CLIENTS)
def test_after_remove_the_client_has_no_projector_entry(desk):
    synced(desk).projector("remove")
    run = desk.drive(desk.session)
    assert run.offered and run.tools("docs") == {} and run.tools("notes") == {}, run.summary()
    assert desk.bridges() == []


@pytest.mark.parametrize("client", CLIENTS)
def test_after_a_binding_changes_the_clients_next_run_in_that_folder_offers_the_new_kbs(desk):
    """The entry stays the same (the bridge) while what the folder gets changes: the client's
    next run there offers the tools as they are now, however long the bridge takes to start,
    not as it saw them last time."""
    assert kb_choices(synced(desk).drive(desk.session)) == ["api-a", "handbook"]
    desk.model_path.write_text(desk.model_text().replace("docs: [api-a, handbook]", "docs: [handbook]"))
    assert desk.projector("sync", "--dry-run").stdout.startswith("nothing to do")  # no client file changes
    desk.sandbox.start_late(2)
    assert kb_choices(desk.drive(desk.session)) is None  # one KB: no choice
