"""One model for a team (issue 18), end to end with real `git`: a team layer in a git repository,
two people's personal layers over it, clones found by their remote, trust for the team's local
server, and a `git pull` picked up by the next sync and by the shell hook.

Alice keeps the team's repository at ~/team and her clones under ~/src; she turns the team's
`tickets` provider off. Bob keeps it at ~/work/team-config (included by a relative path) and
his clones GOPATH-style under ~/code, with a git worktree beside; he adds a KB to the team's
binding of the `api` repository. The team's local server is tests/servers/report_server.py.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import paths
import pytest
from sandbox import Sandbox
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed (.ci/run installs it)")

SERVER = paths.SERVERS / "report_server.py"

TEAM = """\
# The team's layer: the same on every laptop.
version: 1
providers:
  docs:
    url: http://127.0.0.1:9/mcp
    token_env: DOCS_TOKEN
    kbs: [handbook, api, runbooks]
    default: [handbook]
  tickets:
    url: https://tickets.example.com/mcp
    token_env: TICKETS_TOKEN
  lint:
    command: {python}
    args: [{server}, --tool, lint_report]
    enabled: false
bindings:
  api:
    repo: github.com/acme/api
    docs: [api]
    lint: {{enabled: true}}
"""

ALICE = """\
version: 1
include: [~/team/projector.yaml]
clients: [codex]
roots: [~/src]
providers:
  tickets: {enabled: false}
"""

BOB = """\
version: 1
include:
  - ../../work/team-config/projector.yaml
clients: [codex]
roots: [~/code]
bindings:
  api:
    docs: [api, runbooks]
"""


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main",
                           "-c", "protocol.file.allow=always", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


class Person(Sandbox):
    """A sandbox HOME whose model is at the default place, with projector on PATH."""

    def __init__(self, root: Path):
        root.mkdir()
        super().__init__(root)
        self.install_projector()
        self.spawns = root / "spawns.jsonl"
        self.env["REPORT_SPAWN_LOG"] = str(self.spawns)

    def personal(self, text: str) -> Path:
        return self.file(".config/projector/projector.yaml", text)

    def projector(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(*args)

    def clone_of_api(self, folder: str, remote: str) -> Path:
        path = self.home / folder
        path.mkdir(parents=True)
        git("init", "-q", cwd=path)
        git("remote", "add", "origin", remote, cwd=path)
        git("commit", "-q", "--allow-empty", "-m", "start", cwd=path)
        return path

    def codex(self) -> dict:
        return tomllib.loads((self.home / ".codex" / "config.toml").read_text()).get("mcp_servers", {})

    def explain(self, folder: Path) -> dict:
        done = self.projector("explain", "--json", str(folder))
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def tools(self, provider: str, folder: Path) -> list[str]:
        """The tools one session of ``provider`` started in ``folder`` offers (through the bridge)."""

        async def run() -> list[str]:
            params = StdioServerParameters(command=sys.executable, args=["-m", "projector", "mcp", "--provider", provider],
                                           env=self.env, cwd=str(folder))
            async with Client(params) as client:
                return [tool.name for tool in (await client.list_tools()).tools]

        return asyncio.run(run())

    def started(self) -> int:
        return len(self.spawns.read_text().splitlines()) if self.spawns.exists() else 0


def provider(report: dict, name: str) -> dict:
    return next(p for p in report["providers"] if p["name"] == name)


@pytest.fixture
def team(tmp_path) -> tuple[Path, Path]:
    """The team's repository (bare, as on a server) and the maintainer's clone of it."""
    origin, maintainer = tmp_path / "team.git", tmp_path / "maintainer"
    git("init", "-q", "--bare", str(origin))
    git("clone", "-q", str(origin), str(maintainer))
    (maintainer / "projector.yaml").write_text(TEAM.format(python=sys.executable, server=SERVER))
    git("add", "projector.yaml", cwd=maintainer)
    git("commit", "-q", "-m", "team model", cwd=maintainer)
    git("push", "-q", "origin", "HEAD", cwd=maintainer)
    return origin, maintainer


def test_two_people_share_a_team_layer_from_git(tmp_path, team):
    origin, maintainer = team
    alice, bob = Person(tmp_path / "alice"), Person(tmp_path / "bob")
    git("clone", "-q", str(origin), str(alice.home / "team"))
    git("clone", "-q", str(origin), str(bob.home / "work" / "team-config"))
    alice.personal(ALICE)
    bob.personal(BOB)
    alice_api = alice.clone_of_api("src/api", "git@github.com:acme/api.git")
    bob_api = bob.clone_of_api("code/github.com/acme/api", "https://github.com/Acme/api.git")
    bob_hotfix = bob.home / "code" / "api-hotfix"
    git("worktree", "add", "-q", str(bob_hotfix), cwd=bob_api)

    for person in (alice, bob):
        done = person.projector("sync")
        assert done.returncode == 0, done.stderr
        assert "the providers it sends a token to are left out (docs: $DOCS_TOKEN to http://127.0.0.1:9/mcp; " in done.stderr
    assert sorted(alice.codex()) == sorted(bob.codex()) == ["lint"], "the team's layer sends no token anywhere until it is trusted"

    # Each reads what the team's layer runs and where it sends tokens, and trusts it.
    trusted = alice.projector("trust", str(alice.home / "team" / "projector.yaml"))
    assert trusted.returncode == 0, trusted.stderr
    assert "  provider docs: sends $DOCS_TOKEN to http://127.0.0.1:9/mcp\n" in trusted.stdout
    assert f"  local server lint: runs {sys.executable} {SERVER} --tool lint_report\n" in trusted.stdout
    assert bob.projector("trust", str(bob.home / "work" / "team-config" / "projector.yaml")).returncode == 0
    for person in (alice, bob):
        done = person.projector("sync")
        assert done.returncode == 0, done.stderr
    assert sorted(alice.codex()) == ["docs", "lint"], "Alice turned the team's tickets off"
    assert sorted(bob.codex()) == ["docs", "lint", "tickets"]
    assert alice.codex()["docs"]["command"] == str(alice.bin / "projector"), "the api binding makes docs the bridge"

    # Both get the team's binding at their own clone, matched by its remote; Bob's KB added.
    here = alice.explain(alice_api)
    assert provider(here, "docs")["kbs"] == ["api"]
    not_yet = ("~/src/api (under root ~/src) says it is a clone of github.com/acme/api (remote origin git@github.com:acme/api.git) "
               "and is not trusted, so binding api runs nothing there (local servers, hooks, env files, direnv): review that "
               "folder, then run `projector trust ~/src/api`")
    assert here["bindings"][0]["repo"] == {"name": "api", "repo": "github.com/acme/api", "remote": "origin git@github.com:acme/api.git",
                                           "found": "under root ~/src", "distrust": not_yet}
    assert provider(here, "docs")["from"]["url"] == "~/team/projector.yaml:5"
    assert provider(here, "docs")["from"]["here: kbs"] == "~/team/projector.yaml:19"
    assert provider(bob.explain(bob_api), "docs")["kbs"] == ["api", "runbooks"]
    assert provider(bob.explain(bob_api), "docs")["from"]["here: kbs"] == "~/.config/projector/projector.yaml:8"
    assert provider(bob.explain(bob_hotfix), "docs")["kbs"] == ["api", "runbooks"], "a worktree of the clone is bound too"
    assert provider(alice.explain(alice.home), "docs")["kbs"] == ["handbook"], "elsewhere: the team's default"

    # The team's local server runs in a clone found by its remote only once that folder is trusted.
    lint = provider(here, "lint")
    assert not lint["runs"] and lint["blocked"] == not_yet
    assert f"note     {not_yet}" in alice.projector("doctor").stdout
    assert alice.tools("lint", alice_api) == [] and alice.started() == 0
    trusted = alice.projector("trust", str(alice_api))
    assert trusted.returncode == 0, trusted.stderr
    assert trusted.stdout.splitlines()[:2] == ["trusted ~/src/api as a clone of github.com/acme/api (its remote origin "
                                               "git@github.com:acme/api.git): binding api runs there", "  local server lint: turns it on"]
    assert alice.tools("lint", alice_api) == ["lint_report"] and alice.started() == 1

    # The maintainer changes the team's layer; a `git pull` is picked up by the next sync.
    edited = (maintainer / "projector.yaml").read_text().replace("    enabled: false\n", "    enabled: false\n    env: {MODE: strict}\n")
    edited += "  wiki-repo:\n    repo: github.com/acme/wiki\n    docs: [runbooks]\n"
    edited = edited.replace("providers:\n", "providers:\n  wiki:\n    url: https://wiki.example.com/mcp\n", 1)
    (maintainer / "projector.yaml").write_text(edited)
    git("commit", "-q", "-am", "wiki; lint in strict mode", cwd=maintainer)
    git("push", "-q", "origin", "HEAD", cwd=maintainer)

    git("pull", "-q", cwd=bob.home / "work" / "team-config")
    done = bob.projector("sync")
    assert done.returncode == 0, done.stderr
    assert "wiki" in bob.codex(), "the next sync picked up the pulled layer"

    # Alice's team layer changed since she trusted it: its server stops until she trusts it again.
    git("pull", "-q", cwd=alice.home / "team")
    assert alice.tools("lint", alice_api) == [] and alice.started() == 1
    doctor = alice.projector("doctor")
    assert "PROBLEM  ~/team/projector.yaml changed since it was trusted, so the local servers it declares or sets (lint) do not run" in doctor.stdout


def test_the_hook_picks_up_a_pull_and_says_once_that_the_layer_needs_trust(tmp_path, team):
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    origin, maintainer = team
    alice = Person(tmp_path / "alice")
    git("clone", "-q", str(origin), str(alice.home / "team"))
    alice.personal(ALICE)
    alice.clone_of_api("src/api", "git@github.com:acme/api.git")
    hook = 'eval "$(projector hook bash)"'
    first = subprocess.run(["bash", "--norc", "--noprofile", "-c", f"{hook}; _projector_hook; _projector_hook"],
                           env=alice.env, capture_output=True, text=True, timeout=120, cwd=alice.home)
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("is not trusted, so the local servers") == 1, first.stderr
    assert "wiki" not in alice.codex()

    (maintainer / "projector.yaml").write_text((maintainer / "projector.yaml").read_text().replace(
        "providers:\n", "providers:\n  wiki:\n    url: https://wiki.example.com/mcp\n", 1))
    git("commit", "-q", "-am", "wiki", cwd=maintainer)
    git("push", "-q", "origin", "HEAD", cwd=maintainer)
    steps = "git -C ~/team pull -q; _projector_hook; _projector_hook; _projector_hook"
    second = subprocess.run(["bash", "--norc", "--noprofile", "-c", f"{hook}; {steps}"],
                            env=alice.env, capture_output=True, text=True, timeout=120, cwd=alice.home)
    assert second.returncode == 0, second.stderr
    assert "wiki" in alice.codex(), "the hook watches the team's layer: the pull made one sync"
    assert second.stderr.count("is not trusted, so the local servers") == 1, second.stderr


def test_a_shared_server_starts_no_host_in_a_clone_until_it_is_trusted(tmp_path):
    """Issue 25, item 2, through the host: a clone that names the repository in its own
    .git/config gets no shared server (no host, no spawn) until the folder is trusted."""
    alice = Person(tmp_path / "alice")
    alice.personal(f"version: 1\nclients: [codex]\nroots: [~/src]\nproviders:\n  lint:\n    command: {sys.executable}\n"
                   f"    args: [{SERVER}, --tool, lint_report]\n    enabled: false\n    shared: true\n    linger: 60\n"
                   "bindings:\n  api:\n    repo: github.com/acme/api\n    lint: {enabled: true}\n")
    evil = alice.clone_of_api("src/downloads/evil", "git@github.com:acme/api.git")
    hosts = lambda: json.loads(alice.projector("ps", "--json").stdout)["hosts"]  # noqa: E731
    try:
        assert alice.tools("lint", evil) == [] and alice.started() == 0 and hosts() == []
        assert alice.projector("trust", str(evil)).returncode == 0
        assert alice.tools("lint", evil) == ["lint_report"] and alice.started() == 1
        assert [h["provider"] for h in hosts()] == ["lint"]
        untrusted = alice.projector("untrust", str(evil))
        assert untrusted.returncode == 0 and "run nothing there any more" in untrusted.stdout
        assert alice.tools("lint", evil) == [], "the host still runs, but no session in that clone reaches it"
    finally:
        alice.projector("stop", str(evil))
