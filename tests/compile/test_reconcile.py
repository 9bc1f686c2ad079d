"""reconcile: ours, drifted, adopted, or the user's."""

from __future__ import annotations

from projector.compile.clients import Reading
from projector.compile.ledger import entry_hash
from projector.compile.reconcile import recognisable
from projector.compile.reconcile import reconcile as reconcile_as
from projector.core.modeltypes import Provider
from projector.core.record import replace

DOCS = Provider("docs", "https://kb.example.com/mcp", "T", None, None)
PROVIDERS = {"docs": DOCS}
NEW = {"type": "stdio", "command": "/bin/projector", "args": ["mcp", "--provider", "docs"]}
OLD = {"type": "http", "url": "https://kb.example.com/mcp?kbs=a"}
# How a client whose entries look like NEW and OLD reads one back (a descriptor's `entry`).
READING = Reading(url_keys=("url",), command_key="command", args_key="args", command_form="split", env_key="env",
                  added_keys=(), default_values=())


def reconcile(where, current, desired, owned, providers, force=False, reading=READING):
    return reconcile_as(where, current, desired, owned, lambda name, value: recognisable(value, providers[name], (reading,)), reading, force)


def test_absent_entry_is_added_and_owned():
    d = reconcile("f", {}, {"docs": NEW}, {}, PROVIDERS)
    assert d.edits == {"docs": NEW} and d.owned == {"docs": entry_hash(NEW)} and d.notes == ()


def test_same_entry_changes_nothing():
    d = reconcile("f", {"docs": NEW}, {"docs": NEW}, {"docs": entry_hash(NEW)}, PROVIDERS)
    assert d.edits == {} and d.owned == {"docs": entry_hash(NEW)}


def test_owned_unchanged_entry_follows_the_model():
    d = reconcile("f", {"docs": OLD}, {"docs": NEW}, {"docs": entry_hash(OLD)}, PROVIDERS)
    assert d.edits == {"docs": NEW}


def test_owned_entry_edited_by_hand_is_drift_kept_unless_forced():
    edited = dict(OLD, timeout=5)
    d = reconcile("f", {"docs": edited}, {"docs": NEW}, {"docs": entry_hash(OLD)}, PROVIDERS)
    assert d.edits == {} and "changed by hand" in d.notes[0] and d.owned == {"docs": entry_hash(OLD)}
    forced = reconcile("f", {"docs": edited}, {"docs": NEW}, {"docs": entry_hash(OLD)}, PROVIDERS, force=True)
    assert forced.edits == {"docs": NEW}


def test_foreign_entry_with_projector_shape_is_adopted():
    for shape in (OLD, {"command": "/opt/old/projector", "args": ["mcp", "--provider", "docs"]}):
        assert reconcile("f", {"docs": shape}, {"docs": NEW}, {}, PROVIDERS).edits == {"docs": NEW}


def test_each_client_reads_its_own_dialect():
    array = replace(READING, command_form="array")
    shape = {"type": "local", "command": ["/x/projector", "mcp", "--provider", "docs"]}
    assert reconcile("f", {"docs": shape}, {"docs": NEW}, {}, PROVIDERS, reading=array).edits == {"docs": NEW}
    assert reconcile("f", {"docs": shape}, {"docs": NEW}, {}, PROVIDERS).edits == {}, "one array is not this client's shape"
    other_key = {"serverUrl": "https://kb.example.com/mcp?kbs=a"}
    assert reconcile("f", {"docs": other_key}, {"docs": NEW}, {}, PROVIDERS).edits == {}
    assert reconcile("f", {"docs": other_key}, {"docs": NEW}, {}, PROVIDERS, reading=replace(READING, url_keys=("serverUrl",))).edits == {"docs": NEW}


def test_foreign_entry_of_another_shape_is_left_with_a_warning():
    mine = {"command": "npx", "args": ["-y", "my-docs-server"]}
    d = reconcile("~/.claude.json", {"docs": mine}, {"docs": NEW}, {}, PROVIDERS)
    assert d.edits == {} and d.owned == {}
    assert d.notes == ('~/.claude.json: entry "docs" was not written by projector; left as it is (rename or remove it to let projector manage it)',)


def test_entry_of_removed_provider_is_removed_only_when_ours_and_unchanged():
    assert reconcile("f", {"docs": NEW}, {}, {"docs": entry_hash(NEW)}, {}).edits == {"docs": None}
    changed = dict(NEW, args=["x"])
    d = reconcile("f", {"docs": changed}, {}, {"docs": entry_hash(NEW)}, {})
    assert d.edits == {} and "removed provider" in d.notes[0]
    assert reconcile("f", {"other": NEW}, {}, {}, {}).edits == {}  # never ours: never touched


def test_endpoint_reads_the_dialect_it_is_given():
    assert replace(READING, url_keys=("httpUrl", "url")).endpoint({"httpUrl": "https://x/a/?kbs=1"}) == ("url", "https://x/a")
    assert replace(READING, command_form="array").endpoint({"command": ["/p/projector", "mcp"]}) == ("command", "projector", "mcp")
    nested = replace(READING, command_form="nested")
    assert nested.endpoint({"command": {"path": "/p/projector", "args": ["mcp"]}}) == ("command", "projector", "mcp")
    assert nested.endpoint({"command": "/p/projector", "args": ["mcp"]}) == ("command", "projector", "mcp")
    assert READING.endpoint("not an entry") == ()


def test_keys_the_client_adds_by_itself_are_not_drift():
    reading = replace(READING, added_keys=("source",), default_values=(("timeout", 300),))
    added = dict(NEW, source="user", timeout=300)
    d = reconcile("f", {"docs": added}, {"docs": NEW}, {"docs": entry_hash(NEW)}, PROVIDERS, reading=reading)
    assert d.edits == {} and d.notes == () and d.states == (("docs", "in-sync"),)
    assert reconcile("f", {"docs": added}, {}, {"docs": entry_hash(NEW)}, {}, reading=reading).edits == {"docs": None}, "still ours to remove"
    changed = dict(added, timeout=5)  # a value other than the one absence means is the user's
    assert "changed by hand" in reconcile("f", {"docs": changed}, {}, {"docs": entry_hash(NEW)}, {}, reading=reading).notes[0]


def test_a_bridge_entry_with_a_config_path_is_recognised():
    shape = {"command": "/x/projector", "args": ["mcp", "--provider", "docs", "--config", "/m.yaml"]}
    assert reconcile("f", {"docs": shape}, {"docs": NEW}, {}, PROVIDERS).edits == {"docs": NEW}


def test_an_imported_entry_respelled_is_a_restyle_while_it_is_as_the_user_had_it():
    """Only an update of the user's own text that the client reads as the same server is a
    restyle; projector's earlier spelling rewritten, or another server, is an update."""
    mine = {"url": "https://kb.example.com/mcp", "headers": {}}
    ours = {"type": "http", "url": "https://kb.example.com/mcp"}
    taken = {"docs": {"value": mine, "text": "..."}}

    def states(present, desired, same=True):
        decision = reconcile_as("f", {"docs": present}, {"docs": desired}, {"docs": entry_hash(present)}, lambda n, v: False, READING,
                                taken=taken, same_server=lambda name, before, after: same)
        return dict(decision.states)["docs"]

    assert states(mine, ours) == "restyle"
    assert states(mine, ours, same=False) == "update"
    assert states({"url": "https://kb.example.com/mcp"}, ours) == "update", "no longer the user's text: projector's own"
