"""A provider's tool rule in an unbound (plain HTTP) entry: written into the client's own filter
where its descriptor says it has one that can say the rule, the bridge everywhere else."""

from __future__ import annotations

from pathlib import Path

import pytest

from projector.compile import clients
from projector.compile.plan import HttpServer, StdioServer, plan
from projector.core.modeltypes import Model, Provider
from projector.core.tools import ToolRule

PROJECTOR = "/usr/local/bin/projector"
ALLOW = ToolRule(allow=("read_file", "search", "drop"), deny=("drop",))
DENY = ToolRule(deny=("delete_page", "drop"))
GLOB = ToolRule(allow=("read_*",))


def entries(client_id: str, rule: ToolRule | None, token_env: str | None = "DOCS_TOKEN") -> tuple[dict, tuple[str, ...]]:
    docs = Provider(name="docs", url="https://kb.example.com/mcp", token_env=token_env, kbs=None, default=None, tools=rule)
    compiled = plan(Model(source=Path("m.yaml"), clients=None, providers=(docs,), bindings=()), PROJECTOR)
    return clients.registry()[client_id].entries(compiled)


def bridged(entry: dict) -> bool:
    return PROJECTOR in str(entry)


# (client, its entry's keys for ALLOW, for DENY); None: the bridge
EXPECTED = {
    "codex": ({"enabled_tools": ["read_file", "search"]}, {"disabled_tools": ["delete_page", "drop"]}),
    "gemini": ({"includeTools": ["read_file", "search"]}, {"excludeTools": ["delete_page", "drop"]}),
    "qwen": ({"includeTools": ["read_file", "search"]}, {"excludeTools": ["delete_page", "drop"]}),
    "copilot": ({"tools": ["read_file", "search"]}, {"excludeTools": ["delete_page", "drop"]}),
    "kiro": (None, {"disabledTools": ["delete_page", "drop"]}),
    "windsurf": (None, {"disabledTools": ["delete_page", "drop"]}),
    "crush": (None, {"disabled_tools": ["delete_page", "drop"]}),
    "iflow": ({"includeTools": ["read_file", "search"]}, {"excludeTools": ["delete_page", "drop"]}),
    "factory": (None, None),  # it cannot reference a token in a header: a provider with one gets the bridge anyway
    "claude-code": (None, None),
    "opencode": (None, None),
    "amp": (None, None),
}


@pytest.mark.parametrize("client_id", sorted(EXPECTED))
def test_an_exact_rule_goes_into_the_clients_own_filter_or_the_client_gets_the_bridge(client_id):
    for rule, said in zip((ALLOW, DENY), EXPECTED[client_id]):
        found, warnings = entries(client_id, rule)
        assert warnings == ()
        if said is None:
            assert bridged(found["docs"]), (client_id, rule)
        else:
            assert not bridged(found["docs"]) and {k: found["docs"][k] for k in said} == said, (client_id, rule)


@pytest.mark.parametrize("client_id", sorted(EXPECTED))
def test_a_glob_rule_is_the_bridge_in_every_client_and_no_rule_changes_nothing(client_id):
    assert bridged(entries(client_id, GLOB)[0]["docs"])
    plain = entries(client_id, None)[0]["docs"]
    assert not bridged(plain) or clients.registry()[client_id].remote in ("none", "no-token")


def test_a_client_that_takes_only_tokenless_entries_filters_a_tokenless_provider_itself():
    assert entries("factory", DENY, token_env=None)[0]["docs"]["disabledTools"] == ["delete_page", "drop"]
    assert bridged(entries("factory", ALLOW, token_env=None)[0]["docs"])


def test_copilots_allow_list_replaces_its_every_tool_default():
    assert entries("copilot", None)[0]["docs"]["tools"] == ["*"]
    assert entries("copilot", ToolRule(allow=()))[0]["docs"]["tools"] == []


def test_without_projector_on_path_a_client_that_cannot_filter_gets_no_entry_and_is_told_why():
    docs = Provider(name="docs", url="https://kb.example.com/mcp", token_env=None, kbs=None, default=None, tools=GLOB)
    compiled = plan(Model(source=Path("m.yaml"), clients=None, providers=(docs,), bindings=()), None)
    found, warnings = clients.registry()["codex"].entries(compiled)
    assert found == {}
    assert warnings == ('Codex CLI gets no entry for provider "docs": its own tool filter cannot say the provider\'s tool rule, '
                        "and the bridge cannot stand in: projector is not on PATH",)


def test_the_plan_carries_the_providers_rule_in_its_http_entry():
    docs = Provider(name="docs", url="https://kb.example.com/mcp", token_env=None, kbs=None, default=None, tools=DENY)
    compiled = plan(Model(source=Path("m.yaml"), clients=None, providers=(docs,), bindings=()), PROJECTOR)
    assert compiled.servers == (("docs", HttpServer("https://kb.example.com/mcp", None, DENY)),)
    assert isinstance(dict(compiled.bridges)["docs"], StdioServer)
