"""core.quickschema answers as projector's validator (jsonschema, with ECMA-262 patterns) does, for
projector's own schemas: on valid documents and on seeded mutations of them."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from projector.core.quickschema import conforms
from projector.core.resources import validator

MODEL = {
    "version": 1,
    "clients": ["claude-code", "codex"],
    "providers": {
        "docs": {"url": "https://kb.example.com/mcp", "token_env": "DOCS_TOKEN", "kbs": ["handbook", "api-a"],
                 "default": ["handbook"], "listen": True, "timeout": 30},
        "lint": {"command": "lint-mcp", "args": ["--x"], "cwd": ".", "env": {"LEVEL": "strict", "GONE": None}, "enabled": False},
    },
    "bindings": {
        "~/work/a": {"docs": ["api-a"], "worktrees": True},
        "~/work/b": {"docs": {"kbs": [], "enabled": True}, "lint": {"enabled": True, "env_files": [".env"], "direnv": True}},
    },
}
PROJECT = {
    "providers": {"tool": {"command": "./bin/tool", "args": ["serve"], "env": {"A": "${HOME}/x"}}},
    "docs": ["handbook"],
    "tool": {"enabled": True},
}
ODD = [None, True, False, 0, 1, -1, 1.5, 0.0, "", "x", "a b", "x\n", "DOCS_TOKEN", "https://x/mcp", "ftp://x",
       "-lead", "a" * 65, [], ["a", "a"], ["a", 1], {}, {"x": 1}, {"kbs": ["a"]}, {"enabled": "yes"}]


def paths(value: Any, at: tuple = ()) -> list[tuple]:
    found = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, at + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, at + (index,))
    return found


def mutate(document: Any, rng: random.Random) -> Any:
    changed = copy.deepcopy(document)
    for _ in range(rng.randint(1, 3)):
        at = rng.choice(paths(changed))
        parent, key = (None, None) if not at else (changed, None)
        for step in at[:-1]:
            parent = parent[step]
        key = at[-1] if at else None
        action = rng.random()
        if parent is None:
            continue
        if action < 0.5:
            parent[key] = copy.deepcopy(rng.choice(ODD))
        elif action < 0.7 and isinstance(parent, dict):
            del parent[key]
        elif action < 0.85 and isinstance(parent, dict):
            parent[rng.choice(["x", "url", "kbs", "command", "-bad", "a b", "env", "timeout", "listen"])] = copy.deepcopy(rng.choice(ODD))
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
    return changed


@pytest.mark.parametrize(("name", "document"), [("model", MODEL), ("project", PROJECT)])
def test_valid_documents_are_a_yes(name, document):
    assert validator(name).is_valid(document)
    assert conforms(document, name) is True


@pytest.mark.parametrize(("name", "document"), [("model", MODEL), ("project", PROJECT)])
def test_mutations_get_jsonschemas_answer(name, document):
    rng, check, seen = random.Random(14), validator(name), {True: 0, False: 0}
    for _ in range(1200):
        mutant = mutate(document, rng)
        expected = check.is_valid(mutant)
        assert conforms(mutant, name) is expected, mutant
        seen[expected] += 1
    assert min(seen.values()) > 150, seen  # both answers were exercised


def test_a_keyword_it_does_not_know_is_no_answer(monkeypatch):
    import projector.core.quickschema as quick

    monkeypatch.setattr(quick, "_KEYWORDS", {k: v for k, v in quick._KEYWORDS.items() if k != "uniqueItems"})
    assert conforms(MODEL, "model") is None


def test_where_it_cannot_tell_jsonschema_decides(monkeypatch, tmp_path):
    """No answer from core.quickschema (a keyword it does not know) is never taken as a yes: a
    model is then checked by jsonschema, and a wrong value is still told at its place."""
    import projector.core.quickschema as quick
    from projector.core import model
    from projector.core.errors import ModelError

    monkeypatch.setattr(quick, "_KEYWORDS", {k: v for k, v in quick._KEYWORDS.items() if k != "type"})
    path = tmp_path / "projector.yaml"
    path.write_text("version: 1\nproviders:\n  docs:\n    url: https://kb.example.com/mcp\n    token_env: DOCS_TOKEN\n")
    assert model.load(path, {"HOME": str(tmp_path)}, ()).providers[0].url == "https://kb.example.com/mcp"
    path.write_text("version: 1\nproviders:\n  docs:\n    url: https://kb.example.com/mcp\n    token_env: DOCS_TOKEN\n    timeout: soon\n")
    with pytest.raises(ModelError, match=r"projector.yaml:6:14: providers.docs.timeout: expected a number, got a string"):
        model.load(path, {"HOME": str(tmp_path)}, ())
