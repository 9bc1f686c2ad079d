"""A YAML file checked (the model's layers, project files): parsed, checked by one of projector's
JSON schemas and then by a semantic pass the caller gives, every problem at its file, line and
column, found through ruamel.yaml's round-trip positions.

A good file is read once with the fast (C) parser and said yes to by core.quickschema; the
round-trip parser and jsonschema are brought in only when there is a problem to point at.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from projector.core.errors import ModelError, Problem, did_you_mean, quoted
from projector.core.record import Record
from projector.core.resources import validator

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from typing import Any


def checked_yaml(text: str, shown: str, schema: str, semantic: Callable[[Any], list[Problem]]) -> Any:
    """Text parsed and checked by ``schema`` and then ``semantic``.

    A good file is read once with the fast (C) parser; the round-trip parser, which knows where
    every key and value stands, reads it again only when there is a problem to point at.
    """
    from projector.core import yamltext  # here: a bridge start with a valid cache reads no YAML

    yamltext.screen(text, shown)
    quick = quick_yaml(text)
    if quick is not None and conforms(quick, shown, schema) and not semantic(quick):
        return quick
    data = parse_yaml(text, shown)
    problems = schema_problems(data, shown, schema)
    if not problems:
        problems = semantic(data)
    if problems:
        raise ModelError(sorted(problems, key=lambda p: (p.line or 0, p.column or 0)))
    return data



def quick_yaml(text: str) -> Any:
    """The data, or None when the text needs the careful parser (an error, or it is empty)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        return YAML(typ="safe").load(text)
    except (YAMLError, ValueError):
        return None


def parse_yaml(text: str, shown: str) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import DuplicateKeyError
    from ruamel.yaml.error import MarkedYAMLError

    try:
        data = YAML(typ="rt").load(text)
    except DuplicateKeyError as exc:
        mark = exc.problem_mark
        key = re.search(r'duplicate key "([^"]*)"', str(exc.problem))
        name = f'"{key.group(1)}"' if key else "a key"
        raise ModelError(
            Problem(shown, mark.line + 1, mark.column + 1, f"duplicate key {name}: a key may appear once; merge the two")
        ) from None
    except MarkedYAMLError as exc:
        from projector.core import yamltext

        raise ModelError(yamltext.syntax_problem(exc, text, shown)) from None
    if data is None:
        raise ModelError(Problem(shown, None, None, "the model is empty: run `projector init` to write a starter"))
    return data


# --------------------------------------------------------------------------- positions


def position(data: Any, path: tuple[Any, ...], *, key: bool = False) -> tuple[int | None, int | None]:
    """1-based line and column of the value at ``path`` (or of its key, with ``key=True``)."""
    node, position = data, None
    for index, step in enumerate(path):
        lc = getattr(node, "lc", None)
        last = index == len(path) - 1
        try:
            if isinstance(step, int):
                position = lc.item(step) if lc else position
            else:
                position = (lc.key(step) if key and last else lc.value(step)) if lc else position
            node = node[step]
        except (KeyError, IndexError, TypeError, AttributeError):
            break
    if position is None:
        lc = getattr(data, "lc", None)
        position = (lc.line, lc.col) if lc else (0, 0)
    return position[0] + 1, position[1] + 1


def dotted(path: tuple[Any, ...]) -> str:
    text = ""
    for step in path:
        name = str(step) if str(step).isprintable() else quoted(str(step))
        text += f"[{step}]" if isinstance(step, int) else (f".{name}" if text else name)
    return text


def problem(data: Any, shown: str, path: tuple[Any, ...], message: str, *, key: bool = False) -> Problem:
    line, col = position(data, path, key=key)
    prefix = f"{dotted(path)}: " if path else ""
    return Problem(shown, line, col, prefix + message)

# --------------------------------------------------------------------------- schema pass

_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "null": "nothing",
    "boolean": "true or false",
}


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "nothing"
    return "a string"


def conforms(data: Any, shown: str, schema: str) -> bool:
    """A yes without importing jsonschema where core.quickschema can tell (a bridge start after a
    model edit); jsonschema otherwise."""
    from projector.core import quickschema

    verdict = quickschema.conforms(data, schema)
    return verdict if verdict is not None else not schema_problems(data, shown, schema)


def schema_problems(data: Any, shown: str, schema: str = "model") -> list[Problem]:
    return [_schema_problem(data, shown, error) for error in validator(schema).iter_errors(data)]


def _schema_problem(data: Any, shown: str, error: Any) -> Problem:
    path = tuple(error.absolute_path)
    validator, instance = error.validator, error.instance
    if validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extras = sorted(set(instance) - set(allowed))
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        guess = did_you_mean(extras[0], allowed)
        return problem(data, shown, path + (extras[0],), f"unknown key{guess}{hint}; remove it or fix its spelling", key=True)
    if validator == "required":
        missing = re.search(r"'([^']+)' is a required property", error.message)
        name = missing.group(1) if missing else "a key"
        return problem(data, shown, path, f'missing "{name}"')
    if validator == "type":
        expected = error.validator_value
        words = " or ".join(_TYPE_WORDS.get(t, t) for t in (expected if isinstance(expected, list) else [expected]))
        return problem(data, shown, path, f"expected {words}, got {_kind(instance)}")
    if validator == "const" and path == ("version",):
        return problem(data, shown, path, f"unsupported version {instance!r}: this projector reads version 1")
    if validator == "const" and path and path[-1] == "oauth":
        return problem(data, shown, path, f"{quoted(instance)} is not a way to sign in{did_you_mean(instance, ['client'])}: give true "
                       '(projector signs in once, for every client), "client" (each client signs in itself) or a mapping of settings')
    if validator == "enum":
        options = [str(option) for option in error.validator_value]
        return problem(data, shown, path, f"{quoted(instance)} is not one of {', '.join(options)}{did_you_mean(instance, options)}")
    if validator == "uniqueItems":
        return problem(data, shown, path, "an item is listed twice; list each once")
    if validator == "pattern":
        return _pattern_problem(data, shown, path, error)
    return problem(data, shown, path, error.message)


def _pattern_problem(data: Any, shown: str, path: tuple[Any, ...], error: Any) -> Problem:
    value = error.instance
    shown_value = quoted(value)
    if "propertyNames" in error.schema_path and path and path[-1] == "env":
        return problem(data, shown, path + (value,), f'{shown_value} is not a variable name: use letters, digits and "_"', key=True)
    if "propertyNames" in error.schema_path:  # a bad key: the error's path is the mapping's
        return problem(
            data,
            shown,
            path + (value,),
            f'{shown_value} is not a usable name: use letters, digits, "-" and "_" (at most 64), '
            "the names every client accepts",
            key=True,
        )
    field = path[-1] if path else ""
    if len(path) > 1 and path[-2] == "env":
        return problem(
            data, shown, path, f"{shown_value}: each ${{ starts a reference ${{NAME}} or ${{NAME:-default}}, where NAME is "
            'a variable name (letters, digits and "_")'
        )
    if field == "url":
        return problem(data, shown, path, f"{shown_value} is not an http(s) URL")
    if field == "token_env":
        pasted = pasted_token(str(value), str(path[-2]) if len(path) > 1 else "")
        return problem(data, shown, path, pasted or f"{shown_value} is not a variable name: give the NAME of the variable that holds the token")
    pattern = error.schema.get("pattern")
    if pattern == f"^{VARIABLE_NAME.pattern}$" and (pasted := pasted_token(str(value), _provider_of(path), str(field), "_" + str(field).removesuffix("_env").upper())):
        return problem(data, shown, path, pasted)  # never said back: it may be a secret
    return problem(data, shown, path, f"{shown_value} {_PATTERN_WORDS.get(pattern, f'does not have the form it needs ({pattern})')}")


def _provider_of(path: tuple[Any, ...]) -> str:
    """The provider a path under ``providers`` is in ("" elsewhere)."""
    return str(path[1]) if len(path) > 1 and path[0] == "providers" else ""


# What a value a pattern refused should have been, by the schema's patterns (schemas/model.schema.json).
_PATTERN_WORDS = {
    "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$": 'is not a usable KB name: use letters, digits, ".", "-" and "_" (no commas)',
    "^[A-Za-z_][A-Za-z0-9_]*$": 'is not a variable name: use letters, digits and "_", not starting with a digit',
    "^\\S+$": "has white space in it, which it cannot have",
    "^https://[^\\s/]+/\\S+$": "is not an https:// URL with a path (https://host/path)",
    "^https?://[^\\s]+$": "is not an http(s) URL",
    "^[!#-\\[\\]-~]+$": "is not an OAuth scope: printable characters without spaces, quotes or backslashes",
}


# Where the model's name rules live (schemas/model.schema.json $defs name and varName), for the
# code that must tell a name without the schema: use fullmatch (``$`` would let a newline end one).
PROVIDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")  # a provider's: also every client's entry name, a token file's
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # an environment variable's (token_env, env keys)

# Known token prefixes (GitHub, OpenAI, Stripe, Slack, GitLab, AWS, Google OAuth, a JWT, a header's value).
_TOKEN_PREFIXES = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "sk-", "sk_live_", "sk_test_", "xoxa-", "xoxb-", "xoxp-",
                   "xoxr-", "glpat-", "AKIA", "ya29.", "eyJ", "Bearer ")
_TOKEN_CHARACTERS = re.compile(r"[A-Za-z0-9_\-.+/=]+")  # base64, base64url, hex and the separators tokens carry


def looks_like_token(value: str) -> bool:
    """Whether ``value`` is shaped like a secret: a known token prefix with a token's length and
    characters, or a long random string (24 characters or more of those tokens are made of, with lower
    case, upper case and digits, spread as evenly as a generated secret's). Strict on purpose: an
    option (``--max-old-space-size=4096``), a UUID, a commit id, an UPPER_SNAKE name or a sentence
    is none, so import keeps such a value as it is and the model refuses none of them."""
    import math

    if value.startswith(_TOKEN_PREFIXES):  # "Bearer ${X}" is a reference, not a token
        return len(value) >= 16 and _TOKEN_CHARACTERS.fullmatch(value.removeprefix("Bearer ")) is not None
    if len(value) < 24 or _TOKEN_CHARACTERS.fullmatch(value) is None:
        return False
    if not all(re.search(kind, value) for kind in ("[a-z]", "[A-Z]", "[0-9]")):
        return False
    return -sum(n / len(value) * math.log2(n / len(value)) for n in map(value.count, set(value))) >= 3.5


# A value that may be a secret though looks_like_token says not: 32 or more hex digits (an old
# GitHub token, Todoist's or Trello's, an Exa key) or a UUID (many APIs' keys). No variable's name
# either: where a name belongs (token_env) it is taken for a token; import keeps such a value out.
HEX_OR_UUID = re.compile(r"[0-9a-fA-F]{32,}|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


def pasted_token(value: str, provider: str, key: str = "token_env", suffix: str = "_TOKEN") -> str | None:
    """What to say when ``token_env`` holds what looks like a token itself (``looks_like_token``,
    or all hex digits or a UUID: ``HEX_OR_UUID``, never a name anyone gives a variable); None when
    it reads as a variable's name. The message never repeats the value: it may be a secret."""
    if not (looks_like_token(value) or HEX_OR_UUID.fullmatch(value)):
        return None
    name = re.sub(r"\W", "_", provider).upper() + suffix
    return (f"this looks like a token itself, not the NAME of a variable: keep the token out of this file (export "
            f"{name}=... in your shell's profile, or your secret manager) and write {key}: {name}; if it is a real "
            "token, treat it as exposed and replace it")


class Text(Record):
    """One file's text, as Places reads it (a layer's ``Read`` has the same two fields)."""

    shown: str  # as a person reads its path
    text: str


class Places:
    """Where a value of the merged model stands: the layer it came from (core.layers: each read
    has the ``shown`` and ``text`` of a ``Text``), and its line and column there, found with the
    careful parser only when a problem needs them."""

    def __init__(self, reads: list[Any], origins: Any = None):
        self._reads = reads
        self._origins = origins
        self._careful: dict[int, Any] = {}

    @classmethod
    def single(cls, shown: str, text: str) -> Places:
        """One file's places (a project file)."""
        return cls([Text(shown, text)])

    def _where(self, path: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
        found = self._origins.find(path) if self._origins is not None else None
        if found is None:
            return self._reads[-1], path  # the model's own file
        return self._reads[found[0]], found[1]

    def _data(self, read: Any) -> Any:
        if id(read) not in self._careful:
            self._careful[id(read)] = parse_yaml(read.text, read.shown)
        return self._careful[id(read)]

    def _place(self, read: Any, local: tuple[Any, ...], key: bool) -> tuple[int | None, int | None]:
        return position(self._data(read), local, key=key)

    def at(self, path: tuple[Any, ...], *, key: bool = False) -> str:
        """``file:line:col`` of the value at merged ``path`` (a place named in a message)."""
        read, local = self._where(path)
        return self.at_in(read, local, key=key)

    def at_in(self, read: Any, local: tuple[Any, ...], *, key: bool = False) -> str:
        line, col = self._place(read, local, key)
        return f"{read.shown}:{line}:{col}"

    def problem(self, path: tuple[Any, ...], message: str, *, key: bool = False) -> Problem:
        read, local = self._where(path)
        return self.problem_in(read, local, message, key=key)

    def problem_in(self, read: Any, local: tuple[Any, ...], message: str, *, key: bool = False) -> Problem:
        line, col = self._place(read, local, key)
        prefix = f"{dotted(local)}: " if local else ""
        return Problem(read.shown, line, col, prefix + message)

    def finding(self, finding: Any) -> Problem:
        message = finding.message
        if finding.other is not None:
            message = message.replace("{other}", self.at_in(*finding.other, key=True))
        return self.problem_in(finding.read, finding.path, message, key=finding.key)
