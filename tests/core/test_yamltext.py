"""yamltext: hostile or broken YAML in a model or project file is an error at its line and column
with what to do, never a traceback, a crash or an hour of validation (issue 11, items 14-15;
issue 12, item 7)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from projector.core import model
from projector.core.errors import ModelError
from projector.core.resources import client_ids

HEAD = "version: 1\nproviders:\n  docs:\n    url: https://kb.example.com/mcp\n    token_env: DOCS_TOKEN\n"
STARTER = Path(model.__file__).resolve().parent.parent / "commands" / "starter.yaml"


def _error(tmp_path: Path, content: str | bytes) -> str:
    path = tmp_path / "projector.yaml"
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    with pytest.raises(ModelError) as raised:
        model.load(path, {"HOME": "/nonexistent"}, client_ids())
    return str(raised.value).replace(str(path), "projector.yaml")


def _nested(levels: int) -> str:
    return HEAD + "bindings:\n  /w:\n    docs: " + "[" * levels + "]" * levels + "\n"


def _alias_bomb(levels: int) -> str:
    """Each level a list of nine aliases of the one before: ``kbs: [*a9, *a9]`` is 2·9⁹ KB names."""
    lines = ["x0: &a0 [a, b, c, d, e, f, g, h, i]"]
    lines += [f"x{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 9) + "]" for n in range(1, levels + 1)]
    return "\n".join(lines) + f"\nbindings:\n  /w:\n    docs: [*a{levels}, *a{levels}]\n"


def test_deep_nesting_is_refused_at_its_place(tmp_path):
    assert _error(tmp_path, _nested(300)) == "projector.yaml:8:40: nested more than 32 levels deep; a model needs about 6: flatten it"


def test_nesting_at_the_limit_is_checked_like_any_value(tmp_path):
    """29 lists in the binding are 32 levels with the mappings around them: read and checked."""
    assert _error(tmp_path, _nested(29)) == "projector.yaml:8:12: bindings./w.docs[0]: expected a string, got a list"


def test_a_hundred_thousand_levels_do_not_crash_the_parser(sandbox):
    """The C composer recursed once per level and died with SIGSEGV, saying nothing."""
    config = sandbox.model(_nested(100_000))
    done = sandbox.run("diff", config=config)
    assert done.returncode == 2, done.stderr[-300:]
    assert done.stderr == f"error: {config}:8:40: nested more than 32 levels deep; a model needs about 6: flatten it\n"


def test_a_nul_byte_is_named_at_its_line_and_column(tmp_path):
    assert _error(tmp_path, HEAD.replace("DOCS_TOKEN", "DOCS\0TOKEN")) == (
        "projector.yaml:5:20: a control character (U+0000) YAML text may not hold: remove it"
    )


def test_bytes_that_are_not_utf8_are_named_by_line_and_column_not_offset(tmp_path):
    raw = HEAD.encode().replace(b"DOCS_TOKEN", "ÉDOCS".encode() + b"\xff")
    assert _error(tmp_path, raw) == "projector.yaml:5:21: not UTF-8 text (byte 0xff): save the file as UTF-8"


def test_an_alias_bomb_is_refused_before_validation(sandbox):
    """Validation walked every expansion (uniqueItems over 2·9⁹ names): hours. A subprocess with
    a timeout, so the test fails instead of hanging when the bound is missing."""
    config = sandbox.model(HEAD + _alias_bomb(9))
    done = sandbox.run("diff", config=config)
    assert done.returncode == 2
    assert re.fullmatch(rf"error: {config}:\d+:\d+: \*a\d and the aliases before it stand for more than 10,000 values: "
                        r"write the values out, or use fewer aliases\n", done.stderr), done.stderr


def test_trust_refuses_an_alias_bomb_in_a_project_file(sandbox):
    config = sandbox.model(HEAD)
    workspace = sandbox.file("work/a/.projector.yaml", _alias_bomb(9).replace("bindings:\n  /w:\n    docs:", "docs:")).parent
    done = sandbox.run("trust", str(workspace), config=config)
    assert done.returncode == 1 and "stand for more than 10,000 values" in done.stderr and "nothing was trusted" in done.stderr


def test_aliases_that_share_a_list_are_fine(tmp_path):
    path = tmp_path / "projector.yaml"
    path.write_text(HEAD + "    kbs: &all [a, b]\n    default: *all\nbindings:\n  /w:\n    docs: *all\n")
    loaded = model.load(path, {}, client_ids())
    assert loaded.provider("docs").default == ("a", "b") and loaded.bindings[0].settings("docs").kbs == ("a", "b")


# --------------------------------------------------------------------------- syntax errors


def _uncomment_the_example_provider() -> str:
    """What a new user does first: uncomment the docs example under `providers:`, leaving `{}`."""
    lines = STARTER.read_text().splitlines()
    start = lines.index("  # docs:")
    for index in range(start, start + 5):
        lines[index] = "  " + lines[index][4:]
    return "\n".join(lines) + "\n"


def test_the_starter_trap_points_at_the_leftover_braces(tmp_path):
    text = _uncomment_the_example_provider()
    braces = text.splitlines().index("  {}") + 1
    assert _error(tmp_path, text) == (
        f'projector.yaml:{braces}:3: not valid YAML: a leftover {{}} (which means "empty") after the entries above it: delete this line'
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: 1\nproviders: {}\n  docs:\n    url: https://x\n",
         "projector.yaml:3:3: not valid YAML: this line is indented under line 2, which already gives providers a value ({}): "
         "remove that value to put entries under it, or indent this line like its neighbours"),
        ("version: 1\nproviders:\n  docs:\n    url: https://x\n   token_env: T\n",
         "projector.yaml:5:4: not valid YAML: this line's indentation does not fit the lines above it: line it up with the keys of its level"),
        ("version: 1\nproviders:\n\tdocs: {}\n",
         "projector.yaml:3:1: not valid YAML: a tab: YAML indents with spaces only; replace it with spaces"),
        ('version: 1\nproviders:\n  docs:\n    url: "https://x\n    token_env: T\n',
         "projector.yaml:4:10: not valid YAML: a quote opened here is never closed: close it"),
        ("version: 1\nproviders:\n  docs:\n    kbs: [a, b\n    token_env: T\n",
         "projector.yaml:4:10: not valid YAML: this [ … ] is not closed where it should be: check for a missing ',' or closing bracket"),
        ("version: 1\nproviders:\n  docs:\n    url: https://x: y\n",
         "projector.yaml:4:19: not valid YAML: a ':' YAML cannot take here: quote a value that holds ': ', and check the line above "
         "(a key ends with ':', its value follows after a space)"),
        ("version: 1\nproviders: *docs\n",
         "projector.yaml:2:12: not valid YAML: 'docs' names no anchor (&name) above it: define the anchor first, or write the value out"),
    ],
    ids=["value-then-entries", "misindented", "tab", "open-quote", "open-list", "colon-in-value", "undefined-alias"],
)
def test_syntax_errors_point_at_the_wrong_line_and_say_what_to_do(tmp_path, text, message):
    assert _error(tmp_path, text) == message
