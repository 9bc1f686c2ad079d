"""Property test: hostile values in the model (quotes, backslashes, template and TOML syntax,
newlines, non-ASCII, in URLs, folder names, the model's own path and projector's) go through
model → every client's file → the strict parsers, and come back exactly as rendered; or the model
is refused with the place of the problem. Nothing else may happen (issue 11, "Tests")."""

from __future__ import annotations

import json
import shutil
import tempfile
import tomllib
from pathlib import Path

import paths
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from projector.compile import clients, documents, engine, ledger
from projector.compile.system import RealSystem
from projector.core import model
from projector.core.errors import ModelError

FIXTURES = paths.FIXTURES / "existing"
EXISTING = {"claude-code": "claude-code.json", "codex": "codex.toml", "opencode": "opencode.json", "crush": "crush.json",
            "kiro": "kiro.json", "copilot": "copilot.json"}
NASTY = "\"'\\{}[]%#$`~:;,=&?!*<>|\t\n\r\u00e9\u2028\ufeff\U0001f600" + "{{ }}{% %}'''\"\"\"" + "abc"



def _folder_names(alphabet: str) -> st.SearchStrategy[str]:
    """What a folder name may hold on Linux (not "/" or NUL), biased to what breaks quoting."""
    return st.text(st.sampled_from(alphabet + "-_. "), min_size=1, max_size=10).filter(lambda s: s not in (".", ".."))


folder_names = _folder_names(NASTY)
url_tails = st.text(st.sampled_from([c for c in NASTY if not c.isspace()] + list("/-._")), max_size=20)
names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,8}", fullmatch=True)
variables = st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}", fullmatch=True)
kb_lists = st.lists(st.from_regex(r"[a-z0-9][a-z0-9._-]{0,5}", fullmatch=True), unique=True, max_size=3)


@st.composite
def worlds(draw) -> dict:
    remote, local = draw(names), draw(names.filter(lambda n: n.lower() != "x"))
    kbs = draw(kb_lists)
    provider = {"url": "https://kb.example.com/" + draw(url_tails), "token_env": draw(variables), "kbs": kbs}
    if draw(st.booleans()):
        provider["default"] = draw(st.lists(st.sampled_from(kbs), unique=True)) if kbs else []
    providers = {remote: provider}
    if local != remote:
        providers[local] = {"command": draw(folder_names), "args": draw(st.lists(folder_names, max_size=3)),
                            "env": {draw(variables): "${" + draw(variables) + "}" + draw(folder_names)}}
    return {
        "model_folder": draw(folder_names),
        "bin_folder": draw(_folder_names(NASTY.replace(":", ""))),  # PATH cannot name a folder with ":"
        "bound": draw(folder_names),
        "existing": draw(st.booleans()),
        "model": {"version": 1, "clients": sorted(clients.registry()), "providers": providers},
        "bind": draw(st.booleans()) and bool(kbs),
        "remote": remote,
    }


def _strict(format: str, text: str) -> object:
    """The file as a strict parser of its format reads it: the standard library's JSON (with
    comments, and for JSONC trailing commas, blanked as the document does to locate errors) and
    TOML parsers, ruamel's safe YAML loader (duplicate keys refused)."""
    if format == "toml":
        return tomllib.loads(text)
    if format == "yaml":
        from ruamel.yaml import YAML

        return YAML(typ="safe", pure=True).load(text)
    if format in ("jsonc", "json-comments"):
        from projector.compile.documents.jsonc import _blank_jsonc, _parser

        raw = text.encode("utf-8")
        return json.loads(_blank_jsonc(_parser().parse(raw).root_node, raw, commas=format == "jsonc").decode("utf-8"))
    return json.loads(text)


def _servers(value: object, key: tuple[str, ...]) -> dict:
    """The entries by name; a list of named tables (a key ending in "[FIELD]") by that field."""
    for step in key:
        if step.startswith("["):
            return {item[step[1:-1]]: item for item in value}
        value = value[step]
    return value


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=worlds())
def test_hostile_values_reach_every_client_file_intact_or_are_refused_with_their_place(world):
    root = Path(tempfile.mkdtemp(prefix="hostile-"))
    try:
        home, bin_folder = root / "home", root / world["bin_folder"] / "bin"
        home.mkdir()
        bin_folder.mkdir(parents=True)
        (bin_folder / "projector").write_text("#!/bin/sh\n")
        (bin_folder / "projector").chmod(0o755)
        environ = {"HOME": str(home), "PATH": str(bin_folder)}
        data = world["model"]
        if world["bind"]:
            data = dict(data, bindings={str(root / world["bound"]): {world["remote"]: data["providers"][world["remote"]]["kbs"][:1]}})
        source = root / world["model_folder"] / "projector.yaml"
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(json.dumps(data, ensure_ascii=False))  # JSON is YAML: every string quoted
        try:
            loaded = model.load(source, environ, tuple(clients.registry()))
        except ModelError as refused:
            assert all(p.file and p.message for p in refused.problems)
            event("refused: " + refused.problems[0].message.split(":")[0][:40])
            return
        event("written" + (" (bridge entries)" if world["bind"] else ""))
        chosen = list(clients.registry().values())  # every client, each file fresh or (six of them) a user's
        before: dict[str, str] = {}
        for client in chosen:
            path = client.global_file(environ)
            if (world["existing"] and client.id in EXISTING) or client.create is None:  # the latter only edit a file they wrote
                EXISTING.setdefault(client.id, next(FIXTURES.glob(f"{client.id}.*")).name)
                path.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(FIXTURES / EXISTING[client.id], path)
                before[client.id] = path.read_text()
        outcome = engine.compute(loaded, chosen, environ, ledger.Ledger(), RealSystem())
        assert outcome.problems == ()
        written = engine.write(outcome, ledger.Ledger())
        assert written.problems == ()
        for result in written.results:
            if result.target.is_project:
                continue
            if result.after is None:  # nothing to write there: no file is made
                assert not result.path.exists()
                continue
            client = result.client
            text = result.path.read_text()
            value = _strict(client.format, text)
            entries = _servers(value, client.servers_key)
            desired = dict(result.target.desired)
            assert {name: entries[name] for name in desired} == desired, client.id
            assert documents.parse(client.format, text, "f").servers(client.servers_key) == entries
            if client.id in before:  # the user's own entry is there as it was
                assert entries["filesystem"] == _servers(_strict(client.format, before[client.id]), client.servers_key)["filesystem"]
        again = engine.compute(loaded, chosen, environ, written.ledger, RealSystem())
        assert again.changed == () and again.problems == ()
    finally:
        shutil.rmtree(root, ignore_errors=True)
