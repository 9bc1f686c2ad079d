"""Tool rules: what a folder is offered of a server's tools, as the model says it."""

from __future__ import annotations

from pathlib import Path

import pytest

from projector.core import model, projects, scope
from projector.core.errors import ModelError
from projector.core.tools import AnyRule, ToolRule, any_of, rule

CLIENTS = ("claude-code", "codex")


def test_globs_match_whole_names_and_deny_wins_over_allow():
    reading = ToolRule(allow=("read_*", "search"), deny=("read_secret*",))
    offered = [n for n in ("read_file", "read_secret_key", "search", "searcher", "write_file", "xread_file") if reading.offers(n)]
    assert offered == ["read_file", "search"]
    assert ToolRule(deny=("write_*", "delete_?")).offers("delete_x") is False
    assert ToolRule(deny=("write_*", "delete_?")).offers("delete_xy") is True
    assert ToolRule(allow=("[rs]*",)).offers("search") and not ToolRule(allow=("[rs]*",)).offers("write")
    assert ToolRule(allow=("Read*",)).offers("read_file") is False  # case-sensitive, as tool names are


def test_no_allow_allows_all_an_empty_allow_allows_none_and_odd_names_are_never_offered():
    assert ToolRule().offers("anything") and ToolRule(deny=("x",)).offers("y")
    assert not ToolRule(allow=()).offers("anything")
    assert not ToolRule().offers(None) and not ToolRule().offers(3)


def test_exact_tells_plain_names_from_globs():
    assert ToolRule(allow=("read_file", "search"), deny=("x",)).exact
    assert not ToolRule(allow=("read_*",)).exact and not ToolRule(deny=("a?",)).exact


def load(tmp_path: Path, text: str) -> model.Model:
    path = tmp_path / "projector.yaml"
    path.write_text(text)
    return model.load(path, {"HOME": str(tmp_path)}, CLIENTS)


MODEL = """\
version: 1
providers:
  docs:
    url: https://kb.example.com/mcp
    kbs: [api-a, api-b]
    tools: {deny: ["delete_*"]}
  lint:
    command: lint-mcp
bindings:
  ~/a:
    docs: {kbs: [api-a], tools: {allow: ["read_*"]}}
    lint: {tools: {deny: [fix]}}
  ~/a/deep:
    docs: [api-b]
"""


def test_a_folders_rule_replaces_the_providers_and_says_where_it_came_from(tmp_path):
    loaded = load(tmp_path, MODEL)
    for folder in ("a", "a/deep", "b"):
        (tmp_path / folder).mkdir(parents=True)
    here = lambda name, folder: scope.tools(loaded, name, str(tmp_path / folder))  # noqa: E731
    assert here("docs", "a") == scope.Tools(ToolRule(allow=("read_*",)), f"binding {tmp_path}/a")
    assert here("docs", "a").rule.offers("delete_all") is False  # allow replaced the provider's rule whole: not in allow
    assert here("docs", "a/deep") == scope.Tools(ToolRule(deny=("delete_*",)), "provider docs")  # says no tools: the provider's
    assert here("docs", "b") == scope.Tools(ToolRule(deny=("delete_*",)), "provider docs")
    assert here("lint", "a") == scope.Tools(ToolRule(deny=("fix",)), f"binding {tmp_path}/a")
    assert here("lint", "b") == scope.Tools(None, "nothing")


def test_a_trusted_project_file_says_the_rule_of_its_workspace(tmp_path):
    loaded = load(tmp_path, MODEL)
    (tmp_path / "a").mkdir()
    raw = b"docs: {tools: {allow: [search]}}\nproviders:\n  own:\n    command: own-mcp\n    tools: {deny: [drop]}\n"
    data = projects.checked(raw, projects.specs(loaded), "a/.projector.yaml")
    file = projects.Project(str(tmp_path / "a"), str(tmp_path / "a/.projector.yaml"),
                            tuple(model.provider(n, s) for n, s in data["providers"].items()), model.uses(data))
    assert scope.tools(loaded, "docs", str(tmp_path / "a"), (file,)) == scope.Tools(ToolRule(allow=("search",)), f"project file {file.file}")
    assert scope.tools(loaded, "own", str(tmp_path / "a"), (file,)).rule == ToolRule(deny=("drop",))


BAD = [
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\n    tools: {allow: read_*}\n",
                 "projector.yaml:5:20: providers.docs.tools.allow: expected a list, got a string", id="allow-not-a-list"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\n    tools: {alow: [a]}\n",
                 'projector.yaml:5:13: providers.docs.tools.alow: unknown key (did you mean "allow"?) (allowed: allow, deny); '
                 "remove it or fix its spelling", id="misspelt-key"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\nbindings:\n  ~/w:\n    docs: {tools: {deny: ['']}}\n",
                 "projector.yaml:7:27: bindings.~/w.docs.tools.deny[0]: '' should be non-empty", id="empty-pattern"),
    pytest.param("version: 1\nproviders:\n  lint:\n    command: x\nbindings:\n  ~/w:\n    lint: {tools: [a]}\n",
                 "projector.yaml:7:19: bindings.~/w.lint.tools: expected a mapping, got a list", id="local-binding-list"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_a_bad_rule_is_named_at_its_line_and_column(tmp_path, text, message):
    with pytest.raises(ModelError) as raised:
        load(tmp_path, text)
    assert "~/" + message in str(raised.value).splitlines()


def test_rule_reads_the_models_mapping():
    assert rule(None) is None
    assert rule({"allow": ["a"], "deny": ["b"]}) == ToolRule(("a",), ("b",))
    assert rule({"deny": ["b"]}) == ToolRule(None, ("b",))


def test_several_folders_rules_offer_a_tool_any_of_them_offers():
    reads, no_admin = ToolRule(allow=("read_*",), deny=("read_secret",)), ToolRule(deny=("admin_*", "read_secret"))
    both = any_of([reads, no_admin, reads])
    assert both == AnyRule((reads, no_admin))
    assert [name for name in ("read_1", "write_1", "admin_1", "read_secret") if both.offers(name)] == ["read_1", "write_1"]
    assert both.shown() == "any of {allow: [read_*], deny: [read_secret]}, {deny: [admin_*, read_secret]}"
    assert any_of([reads, reads]) is reads, "one rule stays itself: a session pays what it did"
    assert any_of([reads, None]) is None, "a folder offering every tool offers them to the session"
    assert not any_of([]).offers("read_1")
