"""Does data conform to one of projector's JSON schemas? Asked fast, without jsonschema.

Importing jsonschema (with referencing, rpds, attrs) costs ~60 ms, more than the rest of a
bridge start, and a valid file only needs a yes. This checks the keywords projector's schemas
use, with the rules of projector's validator (core.resources.validator: ``pattern`` searched
with ECMA-262's ``$``, ``true`` is not ``1``, ``format`` asserts nothing), and answers True,
False, or None when a schema uses a keyword it does not know. Only a True is taken as it is:
False and None send the caller to that validator, whose errors name what is wrong
(core.checking.checked_yaml). tests/core/test_quickschema.py holds it to the validator's answers.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from typing import Any

ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "default", "examples", "format",
                         "deprecated", "readOnly", "writeOnly", "$defs"})


class _Unknown(Exception):
    """A keyword this module does not check."""


def conforms(data: Any, schema: str) -> bool | None:
    """Whether ``data`` conforms to ``schemas/<schema>.schema.json``; None: cannot tell here."""
    from projector.core.resources import schema as load

    try:
        return _check(data, load(schema), schema)
    except (_Unknown, RecursionError):
        return None


def _check(value: Any, rule: Any, document: str) -> bool:
    if rule is True or rule == {}:
        return True
    if rule is False:
        return False
    for keyword, expected in rule.items():
        check = _KEYWORDS.get(keyword)
        if check is None:
            if keyword in ANNOTATIONS or keyword in ("then", "else"):  # then/else: with "if"
                continue
            raise _Unknown(keyword)
        if not check(value, expected, rule, document):
            return False
    return True


def _ref(value: Any, target: str, _rule: Any, document: str) -> bool:
    from projector.core.resources import schema as load

    name, _, pointer = target.partition("#")
    if name:
        if not name.endswith(".schema.json"):
            raise _Unknown("$ref")
        document = name[: -len(".schema.json")]
    node: Any = load(document)
    for step in (s for s in pointer.split("/") if s):
        node = node[step.replace("~1", "/").replace("~0", "~")]
    return _check(value, node, document)


def _is(value: Any, kind: str) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "number":
        return number
    if kind == "integer":
        return number and (isinstance(value, int) or value.is_integer())
    raise _Unknown(f"type {kind}")


def _equal(one: Any, other: Any) -> bool:
    """jsonschema's equality: true is not 1, and containers compare item by item."""
    if isinstance(one, bool) or isinstance(other, bool):
        return isinstance(one, bool) and isinstance(other, bool) and one == other
    if isinstance(one, list) and isinstance(other, list):
        return len(one) == len(other) and all(_equal(a, b) for a, b in zip(one, other))
    if isinstance(one, dict) and isinstance(other, dict):
        return one.keys() == other.keys() and all(_equal(one[k], other[k]) for k in one)
    return bool(one == other)


def _pattern(text: str) -> re.Pattern[str]:
    from projector.core.resources import ecma  # the validator's own reading of a pattern

    return ecma(text)


def _properties(value: Any, rule: dict[str, Any], _all: Any, document: str) -> bool:
    return not isinstance(value, dict) or all(_check(value[k], r, document) for k, r in rule.items() if k in value)


def _additional(value: Any, rule: Any, whole: dict[str, Any], document: str) -> bool:
    if not isinstance(value, dict):
        return True
    named = whole.get("properties", {})
    patterns = [_pattern(p) for p in whole.get("patternProperties", {})]
    extra = [k for k in value if k not in named and not any(p.search(k) for p in patterns)]
    return all(_check(value[k], rule, document) for k in extra)


def _pattern_properties(value: Any, rule: dict[str, Any], _all: Any, document: str) -> bool:
    if not isinstance(value, dict):
        return True
    return all(_check(v, r, document) for p, r in rule.items() for k, v in value.items() if _pattern(p).search(k))


def _unique(value: Any, expected: bool, _all: Any, _document: str) -> bool:
    if not expected or not isinstance(value, list):
        return True
    return not any(_equal(value[i], value[j]) for i in range(len(value)) for j in range(i + 1, len(value)))


def _if(value: Any, rule: Any, whole: dict[str, Any], document: str) -> bool:
    branch = "then" if _check(value, rule, document) else "else"
    return branch not in whole or _check(value, whole[branch], document)


def _number(test: Any) -> Any:
    def check(value: Any, limit: Any, _all: Any, _document: str) -> bool:
        return not _is(value, "number") or test(value, limit)

    return check


def _sized(kind: str, test: Any) -> Any:
    def check(value: Any, limit: int, _all: Any, _document: str) -> bool:
        return not _is(value, kind) or test(len(value), limit)

    return check


_KEYWORDS: dict[str, Any] = {
    "$ref": _ref,
    "type": lambda v, kinds, _a, _d: any(_is(v, k) for k in (kinds if isinstance(kinds, list) else [kinds])),
    "const": lambda v, c, _a, _d: _equal(v, c),
    "enum": lambda v, options, _a, _d: any(_equal(v, o) for o in options),
    "properties": _properties,
    "additionalProperties": _additional,
    "patternProperties": _pattern_properties,
    "required": lambda v, names, _a, _d: not isinstance(v, dict) or all(n in v for n in names),
    "propertyNames": lambda v, rule, _a, d: not isinstance(v, dict) or all(_check(k, rule, d) for k in v),
    "items": lambda v, rule, _a, d: not isinstance(v, list) or all(_check(i, rule, d) for i in v),
    "uniqueItems": _unique,
    "pattern": lambda v, p, _a, _d: not isinstance(v, str) or _pattern(p).search(v) is not None,
    "minLength": _sized("string", lambda n, m: n >= m),
    "maxLength": _sized("string", lambda n, m: n <= m),
    "minItems": _sized("array", lambda n, m: n >= m),
    "maxItems": _sized("array", lambda n, m: n <= m),
    "minProperties": _sized("object", lambda n, m: n >= m),
    "maxProperties": _sized("object", lambda n, m: n <= m),
    "minimum": _number(lambda v, m: v >= m),
    "maximum": _number(lambda v, m: v <= m),
    "exclusiveMinimum": _number(lambda v, m: v > m),
    "exclusiveMaximum": _number(lambda v, m: v < m),
    "if": _if,
    "allOf": lambda v, rules, _a, d: all(_check(v, r, d) for r in rules),
    "anyOf": lambda v, rules, _a, d: any(_check(v, r, d) for r in rules),
    "oneOf": lambda v, rules, _a, d: sum(_check(v, r, d) for r in rules) == 1,
    "not": lambda v, rule, _a, d: not _check(v, rule, d),
}
