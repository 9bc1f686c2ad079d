"""The compiler end to end (in-process): model → every client's file, and what it refuses."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import paths
import pytest

from projector.compile import clients, engine, ledger
from projector.compile.system import RealSystem
from projector.core.resources import client_ids
from projector.core.modeltypes import Binding, Model, Provider

FIXTURES = paths.FIXTURES / "existing"
CLIENT_IDS = sorted(client_ids())  # file names: nothing is loaded (or cached) at collection

DOCS = Provider("docs", "https://kb.example.com/mcp/routed", "DOCS_TOKEN", ("handbook", "api-a"), None)
WEB = Provider("web", "https://web.example.com/mcp", "WEB_TOKEN", None, None)
BINDING = Binding("/home/me/work/a", (("docs", ("api-a",)),))


def model(*providers: Provider, bindings=(BINDING,)) -> Model:
    return Model(Path("projector.yaml"), None, tuple(providers), tuple(bindings))


SCENARIOS = {
    "bound-on-path": (model(DOCS), True, None),
    "bound-not-on-path": (model(Provider("docs", DOCS.url, "DOCS_TOKEN", None, ("handbook",))), False, None),
    "unbound-with-default": (model(Provider("docs", DOCS.url, "DOCS_TOKEN", None, ("handbook", "api-a")), bindings=()), True, None),
    "unbound-without-default": (model(DOCS, bindings=()), True, None),
    "default-none": (model(Provider("docs", DOCS.url, "DOCS_TOKEN", None, ()), bindings=()), True, None),
    "several-providers": (model(DOCS, WEB), True, None),
    "existing-file": (model(DOCS, WEB), True, "fixture"),
    "empty-file": (model(DOCS), True, ""),
}


class Home:
    def __init__(self, root: Path, on_path: bool = True):
        self.root = root
        self.environ = {"HOME": str(root / "home"), "PATH": str(root / "bin")}
        (root / "home").mkdir(parents=True, exist_ok=True)
        (root / "bin").mkdir(exist_ok=True)
        if on_path:
            launcher = root / "bin" / "projector"
            launcher.write_text("#!/bin/sh\n")
            launcher.chmod(0o755)
        self.ledger = ledger.Ledger()

    def path(self, client_id: str) -> Path:
        return clients.registry()[client_id].global_file(self.environ)

    def sync(self, m: Model, ids=CLIENT_IDS, force=False) -> engine.Outcome:
        outcome = engine.compute(m, [clients.registry()[i] for i in ids], self.environ, self.ledger, RealSystem(), force=force)
        self.ledger = engine.write(outcome, self.ledger).ledger
        return outcome


def _existing(client_id: str) -> str:
    return next(FIXTURES.glob(f"{client_id}.*")).read_text()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("client_id", CLIENT_IDS)
def test_written_file(client_id, scenario, tmp_path, snapshot):
    m, on_path, existing = SCENARIOS[scenario]
    home = Home(tmp_path, on_path)
    target = home.path(client_id)
    if existing is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_existing(client_id) if existing == "fixture" else existing)
    outcome = home.sync(m, [client_id])
    if clients.registry()[client_id].create is None and existing is None:
        # a client that writes its file itself first, with settings of its own: projector makes none
        said = f"{clients.registry()[client_id].name} writes {target.name} itself when it first starts (with settings of its own): start it once, then sync again; nothing written"
        assert [p.message for p in outcome.problems] in ([], [said]) and not target.exists()
        return
    assert outcome.problems == ()
    text = target.read_text() if target.exists() else "<no file>"
    assert {"file": text.replace(str(tmp_path), "/SANDBOX"), "warnings": list(outcome.warnings)} == snapshot
    assert home.sync(m, [client_id]).changed == (), "a second sync changes nothing"


def test_same_model_and_path_give_identical_bytes(tmp_path):
    first, second = Home(tmp_path / "1"), Home(tmp_path / "2", on_path=False)
    second.environ["PATH"] = first.environ["PATH"]  # the same projector on PATH
    first.sync(model(DOCS, WEB))
    second.sync(model(DOCS, WEB))
    for client_id in (i for i in CLIENT_IDS if clients.registry()[i].create is not None):
        assert first.path(client_id).read_bytes() == second.path(client_id).read_bytes()


def test_a_file_that_does_not_parse_is_left_and_the_others_are_synced(tmp_path):
    home = Home(tmp_path)
    broken = home.path("claude-code")
    broken.write_text('{"mcpServers": {},}\n')
    outcome = home.sync(model(DOCS))
    assert [str(p) for p in outcome.problems if p.file == "~/.claude.json"] == [
        "~/.claude.json:1:19: not valid JSON (this client reads strict JSON: no comments, no trailing commas): "
        "Expecting property name enclosed in double quotes"
    ]
    assert broken.read_text() == '{"mcpServers": {},}\n'
    assert all(home.path(i).exists() for i in CLIENT_IDS if i != "claude-code" and clients.registry()[i].create is not None)


def test_one_deeply_nested_file_is_that_files_error_and_the_other_clients_sync(sandbox):
    """A 5,000-deep array in ~/.claude.json or in Codex's TOML was a RecursionError traceback and
    no client synced at all (issue 11, item 8)."""
    from models import SIX_CLIENTS

    sandbox.install_projector()
    claude = sandbox.file(".claude.json", '{"deep": ' + "[" * 5000 + "]" * 5000 + ', "mcpServers": {}}\n')
    codex = sandbox.file(".codex/config.toml", "deep = " + "[" * 5000 + "]" * 5000 + "\n")
    before = claude.read_bytes(), codex.read_bytes()
    done = sandbox.run("sync", config=sandbox.model(SIX_CLIENTS))
    assert done.returncode == 1
    assert done.stderr.splitlines()[-2:] == [
        "error: ~/.claude.json:1:209: nested more than 200 levels deep; projector does not edit a file like this (left untouched)",
        "error: ~/.codex/config.toml:1:208: nested more than 200 levels deep; projector does not edit a file like this (left untouched)",
    ]
    assert (claude.read_bytes(), codex.read_bytes()) == before
    for relative in (".config/opencode/opencode.json", ".config/crush/crush.json", ".kiro/settings/mcp.json", ".copilot/mcp-config.json"):
        assert '"docs"' in sandbox.file(relative).read_text(), relative


def test_a_client_yaml_file_nested_100k_deep_or_an_alias_bomb_is_that_files_error(sandbox):
    """ruamel's C composer recursed once per level: a client's YAML file 100,000 levels deep
    killed the whole sync with SIGSEGV; an alias bomb is expanded by every later walk."""
    sandbox.install_projector()
    config = sandbox.model("version: 1\nclients: [goose, codex]\nproviders:\n  docs:\n    url: https://kb.example.com/mcp\n")
    goose = sandbox.file(".config/goose/config.yaml", "deep: " + "[" * 100_000 + "]" * 100_000 + "\nextensions: {}\n")
    done = sandbox.run("sync", config=config)
    assert done.returncode == 1, done.stderr[-500:]
    assert done.stderr.splitlines()[-1] == (
        "error: ~/.config/goose/config.yaml:1:206: nested more than 200 levels deep; projector does not edit a file like this (left untouched)"
    )
    assert "[mcp_servers.docs]" in sandbox.file(".codex/config.toml").read_text()
    bomb = ["a0: &a0 [a, b, c, d, e, f, g, h, i]"] + [f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 9) + "]" for n in range(1, 10)]
    goose.write_text("\n".join(bomb) + "\nextensions: {}\n")
    done = sandbox.run("sync", config=config)
    assert done.returncode == 1 and "stand for more than 10,000 values" in done.stderr.splitlines()[-1]


def test_an_entry_written_twice_is_that_files_error_not_a_crash(tmp_path):
    """Removing one of two same-name entries brought the other back, and the edit check stopped
    the whole sync with an AssertionError (issue 11, item 8)."""
    home = Home(tmp_path)
    home.sync(model(DOCS), ["kiro", "codex"])
    kiro = home.path("kiro")
    entry = json.dumps(json.loads(kiro.read_text())["mcpServers"]["docs"])  # one line
    twice = '{\n  "mcpServers": {\n    "docs": %s,\n    "docs": %s\n  }\n}\n' % (entry, entry)
    kiro.write_text(twice)
    outcome = home.sync(model(), ["kiro", "codex"])
    assert [str(p) for p in outcome.problems] == [
        '~/.kiro/settings/mcp.json:4:5: entry "docs" is written twice (lines 3 and 4) and clients read only the last: remove one'
    ]
    assert kiro.read_text() == twice and not home.path("codex").exists()


def test_any_failure_in_one_file_is_that_files_error(tmp_path, monkeypatch):
    """Whatever goes wrong with one file (here a fault injected into reading Kiro's), the other
    clients still sync and the sync reports that file."""
    from projector.compile.documents import jsonc

    servers = jsonc.JsonDocument.servers

    def faulty(document, key):
        if document.source.endswith("mcp.json") and "kiro" in document.source:
            raise KeyError("injected")
        return servers(document, key)

    monkeypatch.setattr(jsonc.JsonDocument, "servers", faulty)
    home = Home(tmp_path)
    outcome = home.sync(model(DOCS), ["kiro", "codex"])
    assert [str(p) for p in outcome.problems] == [
        "~/.kiro/settings/mcp.json: projector failed on this file (KeyError: 'injected'); left untouched (please report it)"
    ]
    assert home.path("codex").exists() and not home.path("kiro").exists()


def test_a_folder_where_the_file_should_be(tmp_path):
    home = Home(tmp_path)
    home.path("kiro").mkdir(parents=True)
    outcome = home.sync(model(DOCS), ["kiro", "codex"])
    assert [str(p) for p in outcome.problems] == ["~/.kiro/settings/mcp.json: is a folder, not a file; left untouched"]
    assert home.path("codex").exists()


def test_a_removed_provider_goes_from_every_client_and_what_was_ours_goes_with_it(tmp_path):
    home = Home(tmp_path)
    claude = home.path("claude-code")
    claude.write_text('{\n  "numStartups": 1\n}\n')
    home.sync(model(DOCS, WEB))
    home.sync(model(WEB))
    assert "docs" not in claude.read_text() and '"web"' in claude.read_text()
    home.sync(model())
    assert claude.read_text() == '{\n  "numStartups": 1\n}\n'  # the key projector added is gone too
    assert not any(home.path(i).exists() for i in CLIENT_IDS if i != "claude-code")  # files it created too
    assert home.ledger.files == {}


def test_a_hand_edited_entry_is_drift_kept_until_forced(tmp_path):
    home = Home(tmp_path)
    home.sync(model(DOCS), ["codex"])
    path = home.path("codex")
    path.write_text(path.read_text().replace('env_vars = ["DOCS_TOKEN"]', 'env_vars = ["DOCS_TOKEN", "MINE"]'))
    outcome = home.sync(model(DOCS, WEB), ["codex"])
    assert outcome.warnings == ('~/.codex/config.toml: entry "docs" was changed by hand since projector wrote it; kept '
                                '(`projector adopt codex docs` keeps it for good, --force overwrites)',)
    assert '"MINE"' in path.read_text() and "[mcp_servers.web]" in path.read_text()
    home.sync(model(DOCS, WEB), ["codex"], force=True)
    assert '"MINE"' not in path.read_text()


def test_an_http_entry_becomes_the_bridge_once_the_provider_is_bound(tmp_path):
    home = Home(tmp_path)
    path = home.path("claude-code")
    path.write_text('{"mcpServers": {"docs": {"type": "http", "url": "https://kb.example.com/mcp/routed?kbs=x"}}}\n')
    home.sync(model(DOCS), ["claude-code"])  # never written by projector, but its shape is projector's
    assert path.read_text() == (
        '{"mcpServers": {"docs": {"type": "stdio", "command": "%s", "args": ["mcp", "--provider", "docs"]}}}\n'
        % (tmp_path / "bin" / "projector")
    )


def test_a_users_own_same_name_entry_is_left_alone(tmp_path):
    home = Home(tmp_path)
    path = home.path("kiro")
    path.parent.mkdir(parents=True)
    path.write_text('{"mcpServers": {"docs": {"command": "my-docs"}}}\n')
    outcome = home.sync(model(DOCS), ["kiro"])
    assert outcome.changed == () and "not written by projector" in outcome.warnings[0]


def test_modes_and_symlinks(tmp_path):
    home = Home(tmp_path)
    home.sync(model(DOCS), ["codex"])
    assert stat.S_IMODE(home.path("codex").stat().st_mode) == 0o600  # new files: private
    kiro = home.path("kiro")
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text("{}\n")
    real.chmod(0o644)
    kiro.parent.mkdir(parents=True)
    kiro.symlink_to(real)
    home.sync(model(DOCS), ["kiro"])
    assert kiro.is_symlink() and '"docs"' in real.read_text()
    assert stat.S_IMODE(real.stat().st_mode) == 0o644


def test_a_symlink_to_nothing_is_refused_like_other_odd_files(tmp_path):
    """Written through, it created the link's target and the folders up to it wherever it
    pointed (issue 11, item 17)."""
    home = Home(tmp_path)
    kiro = home.path("kiro")
    kiro.parent.mkdir(parents=True)
    kiro.symlink_to(tmp_path / "dotfiles" / "gone" / "mcp.json")
    outcome = home.sync(model(DOCS), ["kiro", "codex"])
    assert [str(p) for p in outcome.problems] == [
        f"~/.kiro/settings/mcp.json: is a symbolic link to {tmp_path}/dotfiles/gone/mcp.json, which does not exist "
        "(fix or remove the link); left untouched"
    ]
    assert not (tmp_path / "dotfiles").exists() and kiro.is_symlink() and home.path("codex").exists()


def test_a_byte_order_mark_is_kept(tmp_path):
    home = Home(tmp_path)
    path = home.path("copilot")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xef\xbb\xbf{}\n")
    home.sync(model(DOCS), ["copilot"])
    assert path.read_bytes().startswith(b"\xef\xbb\xbf{\n")


def test_written_crush_files_pass_crushs_own_schema(tmp_path, reference):
    import json

    import jsonschema

    validator = jsonschema.Draft202012Validator(json.loads((reference / "crush-schema.json").read_text()))
    for existing in (None, _existing("crush")):
        home = Home(tmp_path / ("fresh" if existing is None else "existing"))
        if existing is not None:
            home.path("crush").parent.mkdir(parents=True)
            home.path("crush").write_text(existing)
        home.sync(model(DOCS, WEB), ["crush"])
        validator.validate(json.loads(home.path("crush").read_text()))
