"""Real config files from public dotfiles (../shared/corpus): projector's edits leave every byte
it does not own exactly as it was.

For each file, as the global file of its client: a sync adds projector's entries (the original
is still there byte for byte, only insertions around it), and a sync with the providers removed
gives back the original, byte for byte.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import paths
import pytest

from projector.compile import clients, engine, ledger
from projector.compile.system import RealSystem
from projector.core.modeltypes import Binding, Model, Provider, Settings

FOLDERS = {"claude": "claude-code", "codex": "codex", "opencode": "opencode", "crush": "crush", "kiro": "kiro", "copilot-cli": "copilot",
           "gemini": "gemini", "qwen": "qwen", "cursor": "cursor", "vscode": "vscode", "windsurf": "windsurf", "zed": "zed",
           "goose": "goose", "claude-desktop": "claude-desktop", "antigravity": "antigravity", "amp": "amp"}
CORPUS = paths.CORPUS
# Without the corpus (a user's clone) one placeholder runs, and the `corpus` fixture skips it.
FILES = sorted(p for folder in FOLDERS for p in (CORPUS / folder).glob("*")) if CORPUS.is_dir() else [CORPUS / "absent" / "-"]

PROVIDERS = (
    Provider("projector-docs", "https://kb.example.com/mcp", "DOCS_TOKEN", ("a", "b"), ("a",)),
    Provider("projector-web", "https://web.example.com/mcp/", "WEB_TOKEN", None, None),
)
BOUND = Model(Path("m.yaml"), None, PROVIDERS, (Binding("/w/a", (("projector-docs", Settings(kbs=("b",))),)),))
EMPTY = Model(Path("m.yaml"), None, (), ())


def _sync(model: Model, client: clients.Client, environ: dict, state: ledger.Ledger):
    outcome = engine.compute(model, [client], environ, state, RealSystem())
    assert outcome.problems == ()
    return outcome, engine.write(outcome, state).ledger


@pytest.mark.parametrize("original", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_round_trip_is_byte_identical(corpus, original, tmp_path):
    client = clients.registry()[FOLDERS[original.parent.name]]
    environ = {"HOME": str(tmp_path), "PATH": str(tmp_path / "bin")}
    (tmp_path / "bin").mkdir()
    launcher = tmp_path / "bin" / "projector"
    launcher.write_text("#!/bin/sh\n")
    launcher.chmod(0o755)
    target = client.global_file(environ)
    target.parent.mkdir(parents=True, exist_ok=True)
    source = original.read_bytes()
    target.write_bytes(source)

    outcome, state = _sync(BOUND, client, environ, ledger.Ledger())
    added = target.read_text(encoding="utf-8")
    assert outcome.changed, "the entries were added"
    operations = {op for op, *_ in difflib.SequenceMatcher(None, source.decode(), added, autojunk=False).get_opcodes()}
    assert operations <= {"equal", "insert"}, "after the add, every original byte is still there, in order"
    written = engine.compute(BOUND, [client], environ, state, RealSystem())
    assert written.changed == (), "a second sync changes nothing"

    _sync(EMPTY, client, environ, state)
    assert target.read_bytes() == source
