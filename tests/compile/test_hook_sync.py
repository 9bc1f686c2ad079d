"""Sync of hook entries: one dispatcher group per event some workspace uses, in each client's hook
file, owned through the ledger like servers; the user's own hooks untouched."""

from __future__ import annotations

import json
import tomllib
import sys

import pytest

from projector.compile import clients, quirks
from projector.core import hooks
from paths import CORPUS

CLAUDE = ".claude/settings.json"
CODEX_HOOKS = ".codex/hooks.json"
CODEX_CONFIG = ".codex/config.toml"


def _model(sandbox, bindings: str = "", top: str = "", clients_: str = "[claude-code, codex]"):
    return sandbox.model(f"version: 1\nclients: {clients_}\nproviders: {{}}\n" + (f"hooks:\n{top}" if top else "")
                         + (f"bindings:\n{bindings}" if bindings else ""))


def _sync(sandbox, model, *flags):
    done = sandbox.run("sync", *flags, config=model)
    assert done.returncode == 0, done.stderr
    return done


def _groups(sandbox, relative: str) -> dict:
    return json.loads(sandbox.file(relative).read_text())["hooks"]


def _first(group: dict) -> tuple[dict, dict]:
    """A group and its first handler, as quirks.hook_hash takes them."""
    return group, group["hooks"][0]


def _dispatching(group: dict) -> str:
    return group["hooks"][0]["command"]


@pytest.fixture
def two(sandbox):
    sandbox.install_projector()
    a, b = sandbox.home / "work" / "a", sandbox.home / "work" / "b"
    return sandbox, (f"  {a}:\n    hooks:\n      ga: {{event: PreToolUse, command: guard-a}}\n"
                     f"      fa: {{event: PostToolUse, matcher: Edit, command: fmt}}\n"
                     f"  {b}:\n    hooks:\n      gb: {{event: PreToolUse, matcher: Bash, command: guard-b}}\n")


def test_one_group_per_event_however_many_workspaces_use_it(two):
    sandbox, bindings = two
    model = _model(sandbox, bindings)
    _sync(sandbox, model)
    for relative in (CLAUDE, CODEX_HOOKS):
        groups = _groups(sandbox, relative)
        assert sorted(groups) == ["PostToolUse", "PreToolUse"]
        assert all(len(g) == 1 and "matcher" not in g[0] for g in groups.values()), "the dispatcher matches; the entry takes all"
        assert _dispatching(groups["PreToolUse"][0]) == f"{sandbox.bin}/projector dispatch --config {model} PreToolUse"
    assert _sync(sandbox, model).stdout.startswith("nothing to do"), "a second sync changes nothing"


def test_an_event_no_workspace_uses_any_more_goes_and_the_rest_stays(two):
    sandbox, bindings = two
    _sync(sandbox, _model(sandbox, bindings))
    _sync(sandbox, _model(sandbox, bindings.replace("event: PostToolUse", "event: PostToolUse, enabled: false")))
    for relative in (CLAUDE, CODEX_HOOKS):
        assert sorted(_groups(sandbox, relative)) == ["PreToolUse"]
    config = sandbox.file(CODEX_CONFIG).read_text()
    assert "pre_tool_use:0:0" in config and "post_tool_use" not in config, "the trust entry goes with its group"


def test_the_users_own_hooks_stay_and_the_file_comes_back_byte_for_byte(two):
    sandbox, bindings = two
    mine = ('{\r\n\t"model": "opus",\r\n\t"hooks": {\r\n\t\t"PreToolUse": [ {"matcher": "Bash", "hooks": [{"type": "command", "command": "my-guard"}]} ],\r\n'
            '\t\t"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]\r\n\t}\r\n}')
    sandbox.file(CLAUDE, mine)
    codex_mine = '# mine\nmodel = "o3"\n\n[hooks.state."/elsewhere/hooks.json:stop:0:0"]\ntrusted_hash = "sha256:00"\n'
    sandbox.file(CODEX_CONFIG, codex_mine)
    sandbox.file(CODEX_HOOKS, '{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "theirs"}]}]}}')
    _sync(sandbox, _model(sandbox, bindings))
    groups = _groups(sandbox, CLAUDE)
    assert groups["PreToolUse"][0] == {"matcher": "Bash", "hooks": [{"type": "command", "command": "my-guard"}]}
    assert "dispatch" in _dispatching(groups["PreToolUse"][1]) and groups["Stop"] == [{"hooks": [{"type": "command", "command": "notify"}]}]
    assert b"\r\n\t\t\t{" in sandbox.file(CLAUDE).read_bytes(), "written in the file's own style"
    assert "hooks.json:pre_tool_use:1:0" in sandbox.file(CODEX_CONFIG).read_text(), "the trust key follows the group's place"
    _sync(sandbox, _model(sandbox))
    assert sandbox.file(CLAUDE).read_bytes() == mine.encode()
    assert sandbox.file(CODEX_CONFIG).read_text() == codex_mine
    assert _groups(sandbox, CODEX_HOOKS) == {"PreToolUse": [{"hooks": [{"type": "command", "command": "theirs"}]}]}


def test_a_files_created_for_hooks_go_again_with_the_last_hook(two):
    sandbox, bindings = two
    _sync(sandbox, _model(sandbox, bindings))
    _sync(sandbox, _model(sandbox))
    assert not sandbox.file(CLAUDE).exists() and not sandbox.file(CODEX_HOOKS).exists() and not sandbox.file(CODEX_CONFIG).exists()


def test_a_group_changed_by_hand_is_drift_and_force_puts_it_back(two):
    sandbox, bindings = two
    model = _model(sandbox, bindings)
    _sync(sandbox, model)
    path = sandbox.file(CLAUDE)
    edited = path.read_text().replace('"timeout": 600', '"timeout": 5')
    path.write_text(edited)
    done = _sync(sandbox, model)
    assert 'hook group "PreToolUse" was changed by hand' in done.stderr and path.read_text() == edited
    said = done.stdout + done.stderr
    assert "projector adopt" not in said, "adopt keeps server entries, not hook groups: no way out that fails"
    assert "change it in the model to keep it, --force overwrites" in said and "change the model to keep it" in said
    _sync(sandbox, model, "--force")
    assert '"timeout": 600' in path.read_text() and '"timeout": 5' not in path.read_text()


def test_a_codex_group_changed_by_hand_is_not_trusted_by_projector(two):
    """Codex runs a hook of hooks.json only while config.toml trusts its hash, and shows one whose
    hash differs as changed since trusted, skipped until its user reviews it: a sync that keeps a
    hand edit (drift) leaves projector's trust on the group it wrote, never on the edit."""
    sandbox, bindings = two
    model = _model(sandbox, bindings)
    _sync(sandbox, model)
    config, path = sandbox.file(CODEX_CONFIG), sandbox.file(CODEX_HOOKS)
    trusted, trusted_group = config.read_text(), _groups(sandbox, CODEX_HOOKS)["PreToolUse"][0]
    edited = path.read_text().replace(' PreToolUse"', ' PreToolUse && touch pwned"')
    path.write_text(edited)
    group = _groups(sandbox, CODEX_HOOKS)["PreToolUse"][0]
    assert group["hooks"][0]["command"].endswith("&& touch pwned"), "still projector's group by its shape"
    shown = sandbox.run("diff", config=model)
    assert "hooks.json: drift PreToolUse" in shown.stdout and "config.toml" not in shown.stdout, "no trust change to show"
    done = _sync(sandbox, model)
    assert "PreToolUse" in done.stdout + done.stderr and "drift" in done.stdout + done.stderr and path.read_text() == edited
    assert quirks.hook_hash("pre_tool_use", *_first(group)) not in config.read_text()
    assert config.read_text() == trusted, "the trust of the group projector wrote stays as it was"
    approved = trusted.replace(quirks.hook_hash("pre_tool_use", *_first(trusted_group)), quirks.hook_hash("pre_tool_use", *_first(group)))
    assert approved != trusted
    config.write_text(approved)  # as Codex's own review writes it: the user's decision, kept as drift
    _sync(sandbox, model)
    assert config.read_text() == approved
    _sync(sandbox, model, "--force")
    assert "pwned" not in path.read_text() and config.read_text() == trusted


def test_only_the_group_projector_writes_is_trusted_not_a_copy_of_it(two):
    """A second group that runs the dispatcher (a copy someone made) is not projector's: no trust."""
    sandbox, bindings = two
    model = _model(sandbox, bindings)
    _sync(sandbox, model)
    path = sandbox.file(CODEX_HOOKS)
    value = json.loads(path.read_text())
    copy = dict(value["hooks"]["PreToolUse"][0], matcher="Bash")
    value["hooks"]["PreToolUse"].append(copy)
    path.write_text(json.dumps(value))
    _sync(sandbox, model)
    config = sandbox.file(CODEX_CONFIG).read_text()
    assert "hooks.json:pre_tool_use:0:0" in config and "hooks.json:pre_tool_use:1:0" not in config


def test_a_dispatcher_group_projector_did_not_record_is_adopted(two):
    sandbox, bindings = two
    sandbox.file(CLAUDE, json.dumps({"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": "/old/place/projector dispatch PreToolUse", "timeout": 600}]}]}}))
    _sync(sandbox, _model(sandbox, bindings))
    groups = _groups(sandbox, CLAUDE)["PreToolUse"]
    assert len(groups) == 1 and _dispatching(groups[0]).startswith(f"{sandbox.bin}/projector dispatch")


def test_each_client_gets_the_events_it_has(sandbox):
    sandbox.install_projector()
    done = _sync(sandbox, _model(sandbox, top="  ping: {event: Notification, command: notify-send}\n"))
    assert list(_groups(sandbox, CLAUDE)) == ["Notification"]
    assert not sandbox.file(CODEX_HOOKS).exists()
    assert "Codex CLI has no Notification hooks" in done.stderr
    for client in clients.registry().values():
        if client.hooks is not None:
            assert {e for e, _ in client.hooks.events} <= set(hooks.EVENTS), client.id


def test_without_projector_on_path_no_hook_entries_and_a_warning(sandbox):
    done = sandbox.run("sync", config=_model(sandbox, top="  x: {event: Stop, command: x}\n"))
    assert "hooks run through projector, which is not on PATH" in done.stderr
    assert not sandbox.file(CLAUDE).exists()


def test_hooks_in_a_trusted_project_file_get_their_events(sandbox):
    sandbox.install_projector()
    folder = sandbox.home / "work" / "p"
    folder.mkdir(parents=True)
    (folder / ".projector.yaml").write_text("hooks:\n  own: {event: SessionStart, command: hello}\n")
    model = _model(sandbox)
    assert sandbox.run("trust", str(folder), config=model).returncode == 0
    _sync(sandbox, model)
    assert list(_groups(sandbox, CLAUDE)) == ["SessionStart"]


def test_the_trust_hash_is_the_one_codex_computes():
    """currentHash values a running codex 0.171.0 gave in app-server hooks/list for groups a sync
    wrote (the real-client tier checks every sync against a running codex)."""
    def hashed(label: str, event: str) -> str:
        group = {"hooks": [{"type": "command", "command": f"/tmp/hk/bin/projector dispatch --config /tmp/hk/m4.yaml {event}", "timeout": 600}]}
        return quirks.hook_hash(label, group, group["hooks"][0])

    assert hashed("pre_tool_use", "PreToolUse") == "sha256:f787595e4e13ae90e04e809938580060e6907952aca63b037b5c9cda60b28f5a"
    assert hashed("user_prompt_submit", "UserPromptSubmit") == "sha256:f8e7772cdb540d4ea3b8c507d1ca7e651f2073e3e07755b74332e67432cb2b32"
    assert quirks.snake("PostToolUseFailure") == "post_tool_use_failure"


@pytest.mark.skipif(sys.platform == "darwin", reason="paths of the sandbox")
def test_a_hook_group_in_a_json_file_with_comments_is_refused_only_where_the_client_reads_strict_json(sandbox):
    sandbox.install_projector()
    sandbox.file(CLAUDE, '{"hooks": {}, // mine\n}\n')
    done = sandbox.run("sync", config=_model(sandbox, top="  x: {event: Stop, command: x}\n"))
    assert done.returncode == 1 and "settings.json:1:" in done.stderr and "not valid JSON" in done.stderr
    assert sandbox.file(CLAUDE).read_text() == '{"hooks": {}, // mine\n}\n'
    assert "dispatch" in sandbox.file(CODEX_HOOKS).read_text(), "the other client still syncs"


GEMINI = ".gemini/settings.json"


def test_a_group_whose_dispatcher_was_edited_away_is_drift_not_a_second_group(sandbox):
    """A real settings.json with hooks of its own (corpus): projector's group joins the user's
    BeforeTool list; a hand edit that replaces its dispatcher with another command leaves it
    projector's (by the ledger), so it is drift, kept, and no second group of projector's comes."""
    sandbox.install_projector()
    sandbox.file(GEMINI, (CORPUS / "gemini" / "carsonburke-dotfiles.json").read_text())
    model = _model(sandbox, top="  guard: {event: PreToolUse, command: guard}\n", clients_="[gemini]")
    _sync(sandbox, model)
    path = sandbox.file(GEMINI)
    written = path.read_text()
    users, ours = _groups(sandbox, GEMINI)["BeforeTool"]
    assert "orca" in _dispatching(users) and "dispatch" in _dispatching(ours)
    edited = written.replace(_dispatching(ours), "my-own-guard")
    path.write_text(edited)
    done = _sync(sandbox, model)
    assert path.read_text() == edited, "kept as the user left it: no second group of projector's"
    assert "changed by hand" in done.stderr and "BeforeTool" in done.stderr
    shown = sandbox.run("diff", config=model)
    assert shown.returncode == 1 and "settings.json: drift BeforeTool" in shown.stdout
    status = sandbox.run("status", config=model)
    assert status.returncode == 1 and "drift BeforeTool" in status.stdout
    _sync(sandbox, model)
    assert path.read_text() == edited, "nor at the next sync"
    _sync(sandbox, model, "--force")
    assert path.read_text() == written, "projector's group back in its place, the user's beside it"


def test_a_group_given_a_handler_of_the_users_stays_one_group_wherever_it_moved(two):
    """The user puts a group of their own before projector's and a handler of their own into
    projector's: that group is still projector's (drift), never a reason to add another; taken
    out of the model, it stays (changed by hand) until --force."""
    sandbox, bindings = two
    model = _model(sandbox, bindings, clients_="[claude-code]")
    _sync(sandbox, model)
    path = sandbox.file(CLAUDE)
    value = json.loads(path.read_text())
    ours = value["hooks"]["PreToolUse"][0]
    ours["hooks"].append({"type": "command", "command": "my-logger"})
    mine = {"matcher": "Bash", "hooks": [{"type": "command", "command": "my-guard"}]}
    value["hooks"]["PreToolUse"].insert(0, mine)
    path.write_text(json.dumps(value, indent=2))
    edited = path.read_text()
    done = _sync(sandbox, model)
    assert path.read_text() == edited and 'hook group "PreToolUse" was changed by hand' in done.stderr
    gone = _model(sandbox, bindings.replace("event: PreToolUse", "event: PreToolUse, enabled: false"), clients_="[claude-code]")
    done = _sync(sandbox, gone)
    assert _groups(sandbox, CLAUDE)["PreToolUse"] == [mine, ours] and "was changed by hand; kept" in done.stderr
    _sync(sandbox, gone, "--force")
    assert _groups(sandbox, CLAUDE)["PreToolUse"] == [mine], "the user's own group stays"


def test_a_codex_group_whose_dispatcher_was_edited_away_keeps_its_place_and_trust_entry(two):
    """Codex keys a hook's trust by its place: projector's group with another command there is
    drift in hooks.json, and the trust entry projector wrote for that place stays as it was
    (Codex: changed since trusted, skipped until reviewed); nothing of config.toml changes."""
    sandbox, bindings = two
    model = _model(sandbox, bindings, clients_="[codex]")
    _sync(sandbox, model)
    config, path = sandbox.file(CODEX_CONFIG), sandbox.file(CODEX_HOOKS)
    trusted, written = config.read_text(), path.read_text()
    edited = written.replace(_dispatching(_groups(sandbox, CODEX_HOOKS)["PreToolUse"][0]), "my-own-guard")
    path.write_text(edited)
    shown = sandbox.run("diff", config=model)
    assert "hooks.json: drift PreToolUse" in shown.stdout and "config.toml" not in shown.stdout, shown.stdout
    _sync(sandbox, model)
    assert path.read_text() == edited and config.read_text() == trusted
    _sync(sandbox, model, "--force")
    assert path.read_text() == written and config.read_text() == trusted


def test_a_users_group_with_a_lone_surrogate_escape_beside_projectors_is_kept_and_the_sync_works(two):
    """JSON lets a string hold a lone surrogate (``\\ud83d``, half an emoji's escape): a group of the
    user's with one, in an event list beside projector's group, is the user's, byte for byte, and
    no reason for sync (which records every group beside projector's) to fail."""
    sandbox, bindings = two
    mine = '{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "say \\ud83d"}]}]}}\n'
    sandbox.file(CLAUDE, mine)
    model = _model(sandbox, bindings, clients_="[claude-code]")
    _sync(sandbox, model)
    written = sandbox.file(CLAUDE).read_text()
    assert written.startswith('{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "say \\ud83d"}]}')
    assert _sync(sandbox, model).stdout.startswith("nothing to do")
    _sync(sandbox, _model(sandbox, clients_="[claude-code]"))
    assert sandbox.file(CLAUDE).read_text() == mine


def test_the_users_group_edited_after_projectors_was_taken_out_stays_the_users_through_force(two):
    """The user's PreToolUse list: a group of theirs, projector's, another of theirs. They take
    projector's group out and edit their last one, which now stands where projector's stood: it
    is theirs, so `sync --force` leaves it as they wrote it (and projector's group comes back)."""
    sandbox, bindings = two
    first = {"matcher": "Bash", "hooks": [{"type": "command", "command": "my-guard"}]}
    last = {"hooks": [{"type": "command", "command": "notify"}]}
    sandbox.file(CLAUDE, json.dumps({"hooks": {"PreToolUse": [first]}}, indent=2))
    model = _model(sandbox, bindings, clients_="[claude-code]")
    _sync(sandbox, model)
    value = json.loads(sandbox.file(CLAUDE).read_text())
    value["hooks"]["PreToolUse"].append(last)
    sandbox.file(CLAUDE, json.dumps(value, indent=2))
    _sync(sandbox, model)  # the lineup now has the user's last group after projector's
    assert [g.get("matcher") for g in _groups(sandbox, CLAUDE)["PreToolUse"]] == ["Bash", None, None]
    value = json.loads(sandbox.file(CLAUDE).read_text())
    edited = {"hooks": [{"type": "command", "command": "notify --loud"}]}
    value["hooks"]["PreToolUse"] = [first, edited]
    sandbox.file(CLAUDE, json.dumps(value, indent=2))
    _sync(sandbox, model, "--force")
    groups = _groups(sandbox, CLAUDE)["PreToolUse"]
    assert groups[:2] == [first, edited], "the user's groups as they left them"
    assert len(groups) == 3 and "dispatch" in _dispatching(groups[2]), "projector's group back, at the end"


def _turned_off(text: str, event: str) -> str:
    """config.toml as Codex's hook review leaves it when the person turns a hook off: its TUI's
    write_hook_enabled upserts {KEY: {enabled = false}} into hooks.state (config/batchWrite),
    which (codex 0.171.0, tests/e2e/test_hooks_clients.py drives it) adds a [hooks.state] header
    and ``enabled = false`` under the entry's trusted_hash."""
    first = text.index("[hooks.state.")
    header = text.index(f":{event}:")
    line_end = text.index("\n", text.index("trusted_hash", header)) + 1
    return text[:first] + "[hooks.state]\n\n" + text[first:line_end] + "enabled = false\n" + text[line_end:]


def test_a_codex_hook_the_person_turned_off_is_theirs_not_drift_and_force_keeps_it_off(two):
    """``enabled`` in a trust entry's table is Codex's record of the person's choice (Codex runs a
    hook only while it is not false): it is no drift, and `sync --force`, which puts projector's
    hash back after a hand edit, leaves it byte for byte: the hook stays off."""
    sandbox, bindings = two
    model = _model(sandbox, bindings, clients_="[codex]")
    _sync(sandbox, model)
    config = sandbox.file(CODEX_CONFIG)
    written = config.read_text()
    off = _turned_off(written, "post_tool_use")
    config.write_text(off)
    status = sandbox.run("status", config=model)
    assert status.returncode == 0 and "drift" not in status.stdout + status.stderr, status.stdout + status.stderr
    assert sandbox.run("diff", config=model).returncode == 0
    assert _sync(sandbox, model, "--force").stdout.startswith("nothing to do") and config.read_text() == off
    config.write_text(off.replace('trusted_hash = "sha256:', 'trusted_hash = "sha256:0'))  # projector's keys changed by hand
    assert "drift" in sandbox.run("status", config=model).stdout
    _sync(sandbox, model, "--force")
    assert config.read_text() == off, "projector's hashes back, the person's choice kept in its place"
    theirs = off.replace("enabled = false\n", "# off until the release\nenabled=false  # mine\n")
    config.write_text(theirs.replace('trusted_hash = "sha256:', 'trusted_hash = "sha256:0'))
    _sync(sandbox, model, "--force")
    assert config.read_text() == theirs, "only projector's line written anew: the person's bytes as they were"


def test_a_turned_off_hook_whose_event_goes_keeps_the_persons_choice_and_takes_the_trust_again(two):
    """The event leaves the model: projector takes out its trusted_hash and leaves ``enabled =
    false`` (Codex keys it by the group's place, as it does the trust); the event back, projector's
    hash goes beside it again, with no warning of an entry that is not projector's."""
    sandbox, bindings = two
    model = _model(sandbox, bindings, clients_="[codex]")
    _sync(sandbox, model)
    config = sandbox.file(CODEX_CONFIG)
    off = _turned_off(config.read_text(), "post_tool_use")
    config.write_text(off)
    _sync(sandbox, _model(sandbox, bindings.replace("event: PostToolUse", "event: PostToolUse, enabled: false"), clients_="[codex]"))
    state = tomllib.loads(config.read_text())["hooks"]["state"]
    assert [v for k, v in state.items() if ":post_tool_use:" in k] == [{"enabled": False}]
    assert [set(v) for k, v in state.items() if ":pre_tool_use:" in k] == [{"trusted_hash"}]
    done = _sync(sandbox, _model(sandbox, bindings, clients_="[codex]"))
    assert "not written by projector" not in done.stderr and tomllib.loads(config.read_text()) == tomllib.loads(off)
    assert "\nenabled = false\ntrusted_hash = " in config.read_text(), "projector's key after the person's"
    _sync(sandbox, _model(sandbox, clients_="[codex]"))
    state = tomllib.loads(config.read_text())["hooks"]["state"]
    assert list(state.values()) == [{"enabled": False}], "the person's record stays when projector's go"
