"""resources: the schemas' validators read ``pattern`` as the schema's dialect does (ECMA-262:
``$`` is the end of the text), for every pattern of every schema."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_model import BAD

from projector.core.checking import quick_yaml
from projector.core.resources import data_dir, schema, validator

SCHEMAS = sorted(path.name[: -len(".schema.json")] for path in data_dir("schemas").glob("*.schema.json"))


def _patterns(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("pattern"), str):
            yield node["pattern"]
        for value in node.values():
            yield from _patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _patterns(value)


ANCHORED = sorted({(name, p) for name in SCHEMAS for p in _patterns(schema(name)) if p.endswith("$")})


def _pattern_errors(name: str, pattern: str, value: str) -> list[Any]:
    """The errors of ``pattern`` alone, checked by the schema's validator (its pattern rule)."""
    check = type(validator(name))({"type": "string", "pattern": pattern})
    return list(check.iter_errors(value))


def test_every_schema_is_covered_and_has_anchored_patterns():
    assert {"model", "project", "client"} <= set(SCHEMAS)
    assert len(ANCHORED) >= 6  # names, KB names, URLs, variable names, env values, client ids and paths
    newline_free = [p for _, p in ANCHORED if not re.fullmatch(p, "a\n")]
    assert len(newline_free) >= 5, "most patterns name one-line things"


@pytest.mark.parametrize(("name", "pattern"), ANCHORED, ids=[p for _, p in ANCHORED])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_an_anchored_pattern_takes_a_final_newline_only_as_part_of_the_text(name, pattern, data):
    """``^…$`` in ECMA-262 is a match of the whole text (Python's fullmatch): a newline at the end
    passes only where the pattern itself allows a newline (an env value may hold one)."""
    value = data.draw(st.from_regex(pattern, fullmatch=True), label="accepted")
    assert _pattern_errors(name, pattern, value) == []
    whole = re.fullmatch(pattern, value + "\n") is not None
    assert (_pattern_errors(name, pattern, value + "\n") == []) == whole, f"{value!r} + newline against {pattern}"


def test_an_unanchored_pattern_still_finds_its_text_anywhere():
    errors = lambda value: _pattern_errors("client", "NAME", value)  # noqa: E731
    assert errors("${NAME}\n") == [] and errors("x") != []


def test_dollar_inside_a_class_or_escaped_is_a_character():
    assert _pattern_errors("model", r"^[$]\$$", "$$") == []
    assert _pattern_errors("model", r"^[$]\$$", "$$\n") != []
    assert re.search(r"^a$", "a\n"), "Python's own $ matches before a final newline (why the rule exists)"


def _errors(validator, instance) -> list:
    """What the model's messages are made of (a keyword's value only where it is not a subschema,
    whose references now stand written out)."""
    found = [(e.message, list(e.absolute_path), e.validator, repr(e.validator_value) if e.validator in ("type", "const", "pattern") else "",
              repr(e.instance),
              sorted((e.schema.get("properties") or {}) if isinstance(e.schema, dict) else {}), "propertyNames" in e.schema_path)
             for e in validator.iter_errors(instance)]
    return sorted(found)


@pytest.mark.parametrize("name", ["model", "project", "client"])
def test_the_schemas_with_references_in_place_give_jsonschema_s_own_errors(name):
    """The validator checks the schemas with their $refs put in place (faster at scale): every
    error is the one jsonschema gives for the schema as written, with its references looked up."""
    import jsonschema
    from referencing import Registry, Resource
    from ruamel.yaml import YAML

    from projector.core.resources import _pattern

    registry = Registry().with_resources((schema(s)["$id"], Resource.from_contents(schema(s))) for s in ("model", "project", "client"))
    strict = jsonschema.validators.extend(jsonschema.Draft202012Validator, validators={"pattern": _pattern})
    as_written = strict(schema(name), registry=registry)
    instances = [quick_yaml(text) for text, _ in (p.values for p in BAD)]
    instances += [YAML(typ="safe").load(path.read_text()) for path in sorted(data_dir("clients").glob("*.yaml"))]
    instances += [{"id": 1, "format": "xml", "global": {"dirs": "~"}, "templates": {"ftp": 1}, "entry": {"url_keys": "u"}}]
    instances += [
        {"version": 1, "providers": {"a": {"url": 1, "token_env": "1x", "kbs": "x", "default": [1, 1], "env": {"1": 2}}},
         "bindings": {"/w": {"a": [1], "b": {"kbs": "z", "env": [], "bogus": 1}, "my.x": [], "worktrees": "yes"}, "/v": None}},
        {"version": 1, "providers": {"l": {"command": "", "args": [1], "enabled": "no", "cwd": 3}}, "bindings": {"/w": {"l": {"direnv": 1}}}},
        {"providers": {}, "extra": True}, [], "text", None,
        {"providers": {"local": {"command": "x", "url": "y"}}, "docs": [], "worktrees": 1, "other": {"kbs": ["a,b"]}},
        {"providers": {"p": {"command": 1, "env": {"A": None, "B-": "x"}}}, "p": {"enabled": 2}},
    ]
    assert sum(bool(_errors(as_written, i)) for i in instances) > 10
    for instance in instances:
        assert _errors(validator(name), instance) == _errors(as_written, instance)
