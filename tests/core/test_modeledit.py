"""`bind` and `unbind`: the model's comments and order stay byte for byte outside the edit."""

from __future__ import annotations

import subprocess
import sys

MODEL = """\
# my projector model
version: 1
providers:
  docs:                      # the company KB
    url: https://kb.example.com/mcp
    token_env: DOCS_TOKEN    # never the value
    kbs: [handbook, api-a, api-b]

bindings:
  # the main project
  ~/work/a:
    docs: [api-a]            # only its API
  ~/work/b:
    docs: []
"""


def test_bind_a_new_folder_appends_and_keeps_everything_else(sandbox):
    config = sandbox.model(MODEL)
    result = sandbox.run("bind", str(sandbox.home / "work" / "c"), "--provider", "docs", "--kb", "api-b", "--kb", "handbook", config=config)
    assert result.returncode == 0, result.stderr
    assert config.read_text() == MODEL + "  ~/work/c:\n    docs: [api-b, handbook]\n"


def test_bind_an_existing_folder_replaces_only_its_set(sandbox):
    config = sandbox.model(MODEL)
    (sandbox.home / "work" / "a").mkdir(parents=True)
    (sandbox.root / "link").symlink_to(sandbox.home / "work" / "a")
    assert sandbox.run("bind", str(sandbox.root / "link"), "--provider", "docs", "--no-kb", config=config).returncode == 0
    assert config.read_text() == MODEL.replace("docs: [api-a]            # only its API", "docs: []                 # only its API")


def test_unbind_removes_the_binding_and_nothing_else(sandbox):
    config = sandbox.model(MODEL)
    assert sandbox.run("unbind", "~/work/b", config=config).returncode == 0
    assert config.read_text() == MODEL.replace("  ~/work/b:\n    docs: []\n", "")
    assert sandbox.run("unbind", "~/work/a", "--provider", "docs", config=config).returncode == 0
    assert config.read_text() == MODEL.split("bindings:")[0] + "bindings: {}\n"


def test_edits_are_checked_like_hand_edits(sandbox):
    config = sandbox.model(MODEL)
    bad = sandbox.run("bind", "~/x", "--provider", "docs", "--kb", "zzz", config=config)
    assert bad.returncode == 1 and '"zzz" is not a KB of provider "docs"' in bad.stderr
    assert sandbox.run("bind", "~/x", "--provider", "nope", "--kb", "a", config=config).returncode == 1
    assert sandbox.run("bind", "~/x", "--provider", "docs", config=config).returncode == 2
    missing = sandbox.run("unbind", "~/nowhere", config=config)
    assert missing.returncode == 1 and "no binding of ~/nowhere" in missing.stderr
    assert config.read_text() == MODEL


LOCAL = MODEL.replace("\nbindings:", "  lint:\n    command: lint-mcp\n    enabled: false\n\nbindings:")


def test_bind_on_and_off_writes_settings_and_keeps_the_others(sandbox):
    config = sandbox.model(LOCAL)
    assert sandbox.run("bind", "~/work/a", "--provider", "lint", "--on", config=config).returncode == 0
    assert config.read_text() == LOCAL.replace("# only its API\n", "# only its API\n    lint: {enabled: true}\n")
    assert sandbox.run("bind", "~/work/a", "--provider", "docs", "--off", config=config).returncode == 0
    assert "    docs: {kbs: [api-a], enabled: false}" in config.read_text()
    refused = sandbox.run("bind", "~/work/a", "--provider", "lint", "--kb", "x", config=config)
    assert refused.returncode == 1 and '"lint" is a local provider: it has no KBs; use --on or --off' in refused.stderr


def test_a_refused_edit_names_what_is_wrong_not_a_line_that_was_never_written(sandbox):
    config = sandbox.model(MODEL)
    bad = sandbox.run("bind", "~/x", "--provider", "docs", "--kb", "zzz", config=config)
    assert bad.returncode == 1
    assert bad.stderr == (
        f"error: {config}: this bind would make the model invalid:\n"
        '  bindings.~/x.docs[0]: "zzz" is not a KB of provider "docs" (it mounts: api-a, api-b, handbook)\n'
        "nothing was changed\n"
    )
    assert config.read_text() == MODEL


def test_a_model_wrong_before_the_edit_is_shown_with_its_own_lines(sandbox):
    config = sandbox.model(MODEL.replace("docs: []", "docs: [nope]"))
    bad = sandbox.run("bind", "~/x", "--provider", "docs", "--kb", "api-a", config=config)
    assert bad.returncode == 1
    assert bad.stderr.startswith(f'error: {config}:14:12: bindings.~/work/b.docs[0]: "nope" is not a KB of provider "docs"')
    assert bad.stderr.endswith("has mistakes of its own: fix them first (`projector edit`); nothing was changed\n")


def test_binding_a_folder_that_does_not_exist_warns(sandbox):
    config = sandbox.model(MODEL)
    (sandbox.home / "work" / "c").mkdir(parents=True)
    there = sandbox.run("bind", "~/work/c", "--provider", "docs", "--kb", "api-a", config=config)
    assert (there.returncode, there.stderr) == (0, "")
    missing = sandbox.run("bind", "~/work/typo", "--provider", "docs", "--kb", "api-a", config=config)
    assert missing.returncode == 0
    assert missing.stderr == "warning: ~/work/typo does not exist (yet): the binding applies once it does; check the spelling\n"


def test_bind_and_edit_check_a_model_in_layers_where_it_is(sandbox):
    """A model under ~ that includes a file by a relative path: the check of the edited text
    reads the include beside the model, not beside a folder named "~"."""
    sandbox.file(".config/projector/team.yaml", MODEL.replace("# my projector model\n", "").split("\nbindings:")[0] + "\n")
    config = sandbox.file(".config/projector/projector.yaml", "version: 1\ninclude: [team.yaml]\n")
    result = sandbox.run("bind", "~/work/c", "--provider", "docs", "--kb", "api-b", config=config)
    assert result.returncode == 0, result.stderr
    assert config.read_text() == "version: 1\ninclude: [team.yaml]\nbindings:\n  ~/work/c:\n    docs: [api-b]\n"
    editor = sandbox.bin / "append-editor"
    editor.write_text('#!/bin/sh\necho "# looked at" >> "$1"\n')
    editor.chmod(0o755)
    done = subprocess.run([sys.executable, "-m", "projector", "edit", "--config", str(config)], env={**sandbox.env, "EDITOR": str(editor)},
                          capture_output=True, text=True, timeout=60, cwd=sandbox.root)
    assert done.returncode == 0, done.stderr
    assert config.read_text().endswith("# looked at\n")
