"""Real clients as the judge: after `projector sync`, each client's own reader must parse exactly
projector's plan — names, transport, command and args or URL (with kbs), the variable passed on —
and still list the user's own entries."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import paths
import pytest
from servers import TOKEN, KbServer

TOOLS = paths.TOOLS
sys.path.insert(0, str(TOOLS))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import npm_tools  # noqa: E402
import real  # noqa: E402

from projector.compile import clients as registry  # noqa: E402
from projector.compile import engine  # noqa: E402
from projector.compile.plan import for_client, plan  # noqa: E402
from projector.compile.system import RealSystem
from projector.core import model  # noqa: E402
from projector.core.invocation import bridge_options  # noqa: E402

CLIENTS = ["claude-code", "codex", "copilot", "opencode", "gemini", "qwen", "amp", "cline", "augment"]
CORPUS = paths.CORPUS
USERS_FILE = {
    "claude-code": "claude/modelcontextprotocol-servers-mcp.json",
    "codex": "codex/kazuyamiyagi-dotfiles.toml",
    "copilot": "copilot-cli/caarlos0-dotfiles.json",
    "opencode": "opencode/glips-dotfiles.jsonc",
    "gemini": "gemini/lovekhatri-dotagents.json",
    "qwen": "qwen/gerald-ica-dev-tool-configs.json",
    "amp": "amp/nffdiogosilva-dotfiles.json",
}


@pytest.fixture(autouse=True)
def _tools():
    reason = npm_tools.missing_reason()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def models(work: Path) -> dict[str, str]:
    docs = "  docs:\n    url: http://127.0.0.1:9/mcp/routed\n    token_env: DOCS_TOKEN\n    kbs: [handbook, api-a]\n"
    return {
        "bridge": f"version: 1\nproviders:\n{docs}bindings:\n  {work}:\n    docs: [api-a]\n",
        "http": "version: 1\nproviders:\n  web:\n    url: http://127.0.0.1:9/mcp?team=x\n    token_env: WEB_TOKEN\n    default: [a, b]\n",
        "several": f"version: 1\nproviders:\n{docs}  web:\n    url: http://127.0.0.1:9/web\n    token_env: WEB_TOKEN\n"
                   f"  open:\n    url: http://127.0.0.1:9/open\nbindings:\n  {work}:\n    docs: [handbook]\n",
        "none": "version: 1\nproviders: {}\n",
        "local": "version: 1\nproviders:\n  lint:\n    command: lint-mcp\n    env: {LINT_TOKEN: '${LINT_TOKEN}'}\n"
                 f"    enabled: false\nbindings:\n  {work}:\n    lint: {{enabled: true}}\n",
    }


class Home:
    def __init__(self, root: Path, client: str):
        self.root, self.client = root, client
        self.home, self.bin, self.work = root / "home", root / "bin", root / "home" / "work"
        self.work.mkdir(parents=True)
        self.bin.mkdir()
        launcher = self.bin / "projector"
        launcher.write_text(f"#!/bin/sh\nexec {sys.executable} -m projector \"$@\"\n")
        launcher.chmod(0o755)
        self.environ = {"HOME": str(self.home), "PATH": str(self.bin)}
        self.state = None

    def sync(self, text: str) -> list:
        from projector.compile import ledger

        path = self.root / "projector.yaml"
        path.write_text(text)
        loaded = model.load(path, self.environ, tuple(registry.registry()))
        chosen = [registry.registry()[self.client]]
        state = self.state or ledger.Ledger()
        outcome = engine.compute(loaded, chosen, self.environ, state, RealSystem())
        assert outcome.problems == ()
        written = engine.write(outcome, state)
        assert written.problems == ()
        self.state = written.ledger
        compiled = plan(loaded, engine.projector_on_path(self.environ), bridge_options(loaded.source, self.environ))
        descriptor = registry.registry()[self.client]
        return list(for_client(compiled, descriptor.remote, descriptor.name)[0])  # a bridge where the client takes no token

    def read(self, cwd: Path | None = None) -> dict:
        return real.READERS[self.client](self.home, cwd or self.root)

    def global_file(self) -> Path:
        return registry.registry()[self.client].global_file(self.environ)


@pytest.mark.parametrize("scenario", ["bridge", "http", "several", "local"])
@pytest.mark.parametrize("client", CLIENTS)
def test_the_client_parses_exactly_the_plan(client, scenario, tmp_path):
    home = Home(tmp_path, client)
    servers = home.sync(models(home.work)[scenario])
    assert home.read() == real.planned(servers, client)


def _users_home(client: str, tmp_path: Path) -> tuple[Home, Path]:
    """A home whose client file is a user's own, from the corpus (skipped where it has none)."""
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is absent (a user's clone)")
    if client not in USERS_FILE:
        pytest.skip(f"no file of {client} in ../shared/corpus yet")
    home = Home(tmp_path, client)
    target = home.global_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes((CORPUS / USERS_FILE[client]).read_bytes())  # the corpus is read-only: not its mode
    return home, target


@pytest.mark.parametrize("client", CLIENTS)
def test_the_users_own_entries_are_still_there(client, tmp_path):
    home, _ = _users_home(client, tmp_path)
    before = home.read()
    assert before, "the user's file has servers of its own"
    servers = home.sync(models(home.work)["bridge"])
    after = home.read()
    assert {k: v for k, v in after.items() if k not in dict(servers)} == before
    assert {k: after[k] for k in dict(servers)} == real.planned(servers, client)


@pytest.mark.parametrize("client", CLIENTS)
def test_a_removed_provider_is_gone_in_the_client_too(client, tmp_path):
    home = Home(tmp_path, client)
    home.sync(models(home.work)["several"])
    servers = home.sync(models(home.work)["http"])
    assert home.read() == real.planned(servers, client)
    home.sync(models(home.work)["none"])
    assert home.read() == {}


# A legacy project entry (an older projector wrote the provider's URL into the repository),
# in a project the client trusts: once sync prunes it, the client resolves the global entry there.
LEGACY = {
    "claude-code": (".mcp.json", {"mcpServers": {"docs": {"type": "http", "url": "http://127.0.0.1:9/mcp/routed?kbs=api-a"}}}),
    "copilot": (".mcp.json", {"mcpServers": {"docs": {"type": "http", "url": "http://127.0.0.1:9/mcp/routed?kbs=api-a"}}}),
    "opencode": ("opencode.json", {"mcp": {"docs": {"type": "remote", "url": "http://127.0.0.1:9/mcp/routed?kbs=api-a"}}}),
    "codex": (".codex/config.toml", None),
    "gemini": (".gemini/settings.json", {"mcpServers": {"docs": {"httpUrl": "http://127.0.0.1:9/mcp/routed?kbs=api-a"}}}),
    "qwen": (".qwen/settings.json", {"mcpServers": {"docs": {"httpUrl": "http://127.0.0.1:9/mcp/routed?kbs=api-a"}}}),
    "amp": (".amp/settings.json", {"amp.mcpServers": {"docs": {"url": "http://127.0.0.1:9/mcp/routed?kbs=api-a"}}}),
}


def _trust(home: Home, project: Path) -> None:
    """Trust/approval the way real-clients.md describes, in the client's own state files."""
    if home.client == "claude-code":
        state = home.home / ".claude.json"
        data = json.loads(state.read_text()) if state.exists() else {}
        data.setdefault("projects", {})[str(project)] = {"hasTrustDialogAccepted": True, "enabledMcpjsonServers": ["docs"]}
        state.write_text(json.dumps(data))
    elif home.client == "copilot":
        (home.home / ".copilot").mkdir(exist_ok=True)
        (home.home / ".copilot" / "config.json").write_text(json.dumps({"trusted_folders": [str(project)]}))
    elif home.client == "codex":
        config = home.global_file()
        config.parent.mkdir(parents=True, exist_ok=True)
        with config.open("a") as handle:
            handle.write(f'[projects."{project}"]\ntrust_level = "trusted"\n')


@pytest.mark.parametrize("client", CLIENTS)
def test_a_pruned_legacy_project_entry_lets_the_global_entry_through(client, tmp_path):
    if client not in LEGACY:
        pytest.skip(f"{client} reads no project file")
    home = Home(tmp_path, client)
    project = home.work
    relative, content = LEGACY[client]
    legacy = project / relative
    legacy.parent.mkdir(parents=True, exist_ok=True)
    if content is None:
        legacy.write_text('[mcp_servers.docs]\nurl = "http://127.0.0.1:9/mcp/routed?kbs=api-a"\n')
    else:
        legacy.write_text(json.dumps(content, indent=2) + "\n")
    _trust(home, project)
    (project / ".git").mkdir()  # a repository root, as clients look for one
    shadowed = home.read(project)
    assert shadowed["docs"]["transport"] == "http", "before the sync the project entry wins"
    servers = home.sync(models(home.work)["bridge"])
    assert legacy.exists(), "a project file is never deleted: only the entry goes"
    assert home.read(project)["docs"] == real.planned(servers, client)["docs"]


# A client that health-checks its servers starts the bridge: the bridge must get the token (Gemini
# strips secret-looking variables from a stdio server's environment unless its entry names them)
# and the folder's KBs.
@pytest.mark.parametrize("client", ["gemini", "qwen"])
def test_the_client_reaches_the_provider_through_the_bridge(client, tmp_path):
    server = KbServer(tmp_path, "stateful", None, "handbook,api-a,api-b")
    try:
        home = Home(tmp_path, client)
        home.sync(f"version: 1\nproviders:\n  docs:\n    url: {server.url}\n    token_env: DOCS_TOKEN\n"
                  f"bindings:\n  {home.work}:\n    docs: [api-a]\n")
        trust = home.home / ".gemini" / "trustedFolders.json"  # Gemini connects only in a trusted folder
        trust.parent.mkdir(parents=True, exist_ok=True)
        trust.write_text(json.dumps({str(home.work): "TRUST_FOLDER"}))
        done = real.run(home.home, home.work, [real._bin(client), "mcp", "list"], extra_env={"DOCS_TOKEN": TOKEN})
        listing = real._plain(done.stdout + done.stderr)
        assert "docs: " in listing and " - Connected" in listing, listing
        reached = [r for r in server.requests() if r["rpc"] == "initialize"]
        assert reached and all(r["query"] == "kbs=api-a" and r["auth"] == f"Bearer {TOKEN}" for r in reached)
    finally:
        server.stop()


def test_codex_starts_the_bridge_in_its_cleared_environment_and_it_finds_model_and_trust_store(tmp_path):
    """XDG_CONFIG_HOME and XDG_STATE_HOME away from their defaults; real `codex exec` starts the
    entry as it starts any stdio server (HOME, PATH and a few more only). A launcher in front of
    projector adds --check, so the bridge says which model and state folder it found, then exits."""
    import signal
    import subprocess
    import time

    home, xdg_config, xdg_state = tmp_path / "home", tmp_path / "xdg-config", tmp_path / "xdg-state"
    (home / "work" / "a").mkdir(parents=True)
    (home / ".codex").mkdir()
    (xdg_config / "projector").mkdir(parents=True)
    model_file = xdg_config / "projector" / "projector.yaml"
    model_file.write_text(f"version: 1\nclients: [codex]\nproviders:\n  docs:\n    url: http://127.0.0.1:9/mcp\nbindings:\n  {home}/work/a:\n    docs: []\n")
    found = tmp_path / "found.txt"
    launcher = tmp_path / "bin" / "projector"
    launcher.parent.mkdir()
    rename = f"import os; os.rename('{found}.part', '{found}')"  # the PATH holds node and git only
    launcher.write_text(f'#!/bin/sh\n{sys.executable} -m projector "$@" --check > {found}.part 2>&1\nexec {sys.executable} -c "{rename}"\n')
    launcher.chmod(0o755)
    environ = {"HOME": str(home), "PATH": f"{launcher.parent}:{real.tool_path()}", "XDG_CONFIG_HOME": str(xdg_config),
               "XDG_STATE_HOME": str(xdg_state), "CI": "1", "TERM": "dumb", "NO_COLOR": "1"}
    synced = subprocess.run([sys.executable, "-m", "projector", "sync"], env=environ, capture_output=True, text=True, timeout=60)
    assert synced.returncode == 0, synced.stderr
    with (home / ".codex" / "config.toml").open("a") as config:  # a model that answers nothing: the session still starts its servers
        config.write('model = "gpt-test"\nmodel_provider = "mock"\n\n[model_providers.mock]\nname = "mock"\n'
                     'base_url = "http://127.0.0.1:9/v1"\nwire_api = "responses"\n')
    codex = subprocess.Popen([str(npm_tools.binary("codex")), "exec", "--skip-git-repo-check", "hello"], cwd=home / "work" / "a", env=environ,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not found.exists() and time.monotonic() < deadline and codex.poll() is None:
            time.sleep(0.1)
    finally:
        os.killpg(codex.pid, signal.SIGKILL)
        codex.wait()
    assert found.exists(), "codex did not start the bridge entry"
    assert found.read_text() == f"model: {model_file}\nstate: {xdg_state / 'projector'}\n"


@pytest.mark.parametrize("client", CLIENTS)
def test_after_import_and_sync_the_client_lists_the_same_servers_and_remove_gives_the_file_back(client, tmp_path):
    """Issue 27: the user's own file (a real one from the corpus) imported, then synced: each server
    the client listed is still listed under its name (a remote one at the same URL; a local one
    now through the bridge, which runs the same command); and `remove` gives the file back."""
    import subprocess

    home, target = _users_home(client, tmp_path)
    before = home.read()
    config = tmp_path / "projector.yaml"
    config.write_text(f"version: 1\nclients: [{client}]\nproviders: {{}}\n")

    def projector(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "projector", *args, "--config", str(config)], env=home.environ, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done

    as_left = target.read_bytes()  # some clients rewrite their file when they run (Claude Code, Qwen Code)
    projector("import")
    projector("sync")
    projector("remove")
    assert target.read_bytes() == as_left, "remove gives back the file byte for byte"

    projector("import")
    projector("sync")
    after = home.read()
    assert set(before) <= set(after), "every server the client listed is still there"
    for name, entry in before.items():
        if entry["transport"] == "http":
            assert after[name]["url"] == entry["url"], name
