"""Layered models (issue 18): includes, the merge rules, the errors that name the layer and line,
repository bindings, trust for a layer's local servers, and the checked-model cache over layers."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from projector.core import model, projects, repos
from projector.core.errors import ModelError
from projector.core.modeltypes import Model

CLIENTS = ("codex", "claude-code")

TEAM = """\
version: 1
providers:
  docs:
    url: https://kb.example.com/mcp
    token_env: DOCS_TOKEN
    kbs: [handbook, api, runbooks]
    default: [handbook]
  tickets:
    url: https://tickets.example.com/mcp
bindings:
  ~/src/api:
    docs: [api]
"""


class Files:
    def __init__(self, root: Path):
        self.root = root
        self.environ = {"HOME": str(root / "home"), "XDG_STATE_HOME": str(root / "state")}

    def write(self, name: str, text: str) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def load(self, name: str = "me.yaml", **env: str) -> Model:
        return model.load(self.root / name, {**self.environ, **env}, CLIENTS)

    def error(self, name: str = "me.yaml", **env: str) -> str:
        with pytest.raises(ModelError) as raised:
            self.load(name, **env)
        return str(raised.value).replace(str(self.root) + "/", "")


@pytest.fixture
def files(tmp_path) -> Files:
    return Files(tmp_path)


def test_the_including_file_is_the_last_layer_and_merges_key_by_key(files):
    files.write("team/projector.yaml", TEAM)
    files.write("me.yaml", "version: 1\ninclude: [team/projector.yaml]\nproviders:\n  docs:\n    default: [runbooks]\n"
                           "  tickets: {enabled: false}\nbindings:\n  $HOME/src/api:\n    docs: {kbs: [api, handbook]}\n"
                           "  ~/notes:\n    docs: []\n")
    loaded = files.load()
    docs = loaded.provider("docs")
    assert (docs.url, docs.token_env, docs.kbs, docs.default) == ("https://kb.example.com/mcp", "DOCS_TOKEN",
                                                                   ("handbook", "api", "runbooks"), ("runbooks",))
    assert loaded.provider("tickets").enabled is False
    home = files.environ["HOME"]
    assert [b.path for b in loaded.bindings] == [f"{home}/notes", f"{home}/src/api"], "~/src/api and $HOME/src/api are one folder"
    assert loaded.bindings[1].settings("docs").kbs == ("api", "handbook")
    assert [layer.path for layer in loaded.layers] == [str(files.root / "team/projector.yaml"), str(files.root / "me.yaml")]
    assert loaded.layers[0].included_by == (1, 0) and loaded.layers[1].included_by is None


def test_a_url_from_another_layer_changes_only_with_override(files):
    files.write("team.yaml", TEAM)
    files.write("me.yaml", "version: 1\ninclude: [team.yaml]\nproviders:\n  docs:\n    url: https://mine.example.com/mcp\n")
    assert files.error() == ("me.yaml:5:10: providers.docs.url: changes what team.yaml:4:5 gives (https://kb.example.com/mcp); "
                             "a layer may change the url, token_env, command another layer gave only where it says override: true")
    files.write("me.yaml", "version: 1\ninclude: [team.yaml]\nproviders:\n  docs:\n    token_env: MY_TOKEN\n    override: true\n")
    assert files.load().provider("docs").token_env == "MY_TOKEN"


def test_a_change_of_kind_needs_override_and_then_replaces_the_provider(files):
    files.write("team.yaml", TEAM)
    files.write("me.yaml", "version: 1\ninclude: [team.yaml]\nproviders:\n  docs:\n    command: docs-mcp\n")
    assert "me.yaml:5:14: providers.docs.command: makes a local provider of what team.yaml:4:5 declares a remote one (url)" in files.error()
    files.write("me.yaml", "version: 1\ninclude: [team.yaml]\nproviders:\n  docs:\n    command: docs-mcp\n    override: true\n"
                           "bindings:\n  ~/src/api:\n    remove: true\n")
    docs = files.load().provider("docs")
    assert docs.local and docs.command == "docs-mcp" and docs.kbs is None


def test_remove_takes_an_inherited_provider_out_of_every_binding_and_a_binding_out(files):
    files.write("team.yaml", TEAM + "  ~/src/web:\n    tickets: {enabled: true}\n")
    files.write("me.yaml", "version: 1\ninclude: [team.yaml]\nproviders:\n  tickets: {remove: true}\nbindings:\n  ~/src/api: {remove: true}\n")
    loaded = files.load()
    assert [p.name for p in loaded.providers] == ["docs"]
    assert [(b.path.rsplit("/", 1)[1], b.uses) for b in loaded.bindings] == [("web", ())]


@pytest.mark.parametrize(("personal", "message"), [
    ("providers:\n  wiki: {remove: true}\n", 'me.yaml:4:10: providers.wiki.remove: no earlier layer has provider "wiki": nothing to remove'),
    ("bindings:\n  ~/elsewhere: {remove: true}\n", 'me.yaml:4:17: bindings.~/elsewhere.remove: no earlier layer binds "~/elsewhere": nothing to remove'),
    ("providers:\n  docs: {remove: true, default: []}\n", "me.yaml:4:24: providers.docs.default: remove: true stands alone: remove this, or the remove"),
    ("bindings:\n  ~/src/api:\n    docs: [nope]\n", 'me.yaml:5:12: bindings.~/src/api.docs[0]: "nope" is not a KB of provider "docs" (it mounts: api, handbook, runbooks)'),
], ids=["remove-unknown-provider", "remove-unknown-binding", "remove-not-alone", "kb-not-mounted-by-the-team"])
def test_a_personal_layers_mistake_is_named_at_its_own_line(files, personal, message):
    files.write("team.yaml", TEAM)
    files.write("me.yaml", "version: 1\ninclude: [team.yaml]\n" + personal)
    assert message in files.error().splitlines()


def test_a_mistake_in_an_included_layer_names_that_layer(files):
    files.write("team.yaml", TEAM.replace("token_env: DOCS_TOKEN", "tokn_env: DOCS_TOKEN"))
    files.write("me.yaml", "version: 1\ninclude: [team.yaml]\n")
    assert files.error().startswith("team.yaml:5:5: providers.docs.tokn_env: unknown key")
    files.write("team.yaml", TEAM.replace("docs: [api]", "docs: [api, wiki]"))
    assert files.error() == 'team.yaml:12:17: bindings.~/src/api.docs[1]: "wiki" is not a KB of provider "docs" (it mounts: api, handbook, runbooks)'


def test_a_missing_include_names_the_including_line_unless_optional(files):
    files.write("me.yaml", "version: 1\nproviders: {}\ninclude:\n  - ~/team/projector.yaml\n")
    assert files.error() == ("me.yaml:4:5: include[0]: ~/team/projector.yaml does not exist: fix the path, or write "
                             "{path: ..., optional: true} for a file that may be absent")
    files.write("me.yaml", "version: 1\ninclude:\n  - {path: ~/team/projector.yaml, optional: true}\n  - $TEAM/p.yaml\n")
    assert files.error() == ("me.yaml:4:5: include[1]: $TEAM is not set in this environment; set it, or write "
                             "{path: ..., optional: true} for a file that may be absent")
    files.write("elsewhere/p.yaml", TEAM)
    loaded = files.load(TEAM=str(files.root / "elsewhere"))
    assert [p.name for p in loaded.providers] == ["docs", "tickets"]
    assert "TEAM" in loaded.variables and str(files.root / "home/team/projector.yaml") in loaded.watched


def test_an_include_cycle_is_named_with_its_route(files):
    files.write("me.yaml", "version: 1\ninclude: [team/a.yaml]\n")
    files.write("team/a.yaml", "version: 1\ninclude: [b.yaml]\n")
    files.write("team/b.yaml", "version: 1\ninclude: [../team/a.yaml]\n")
    assert files.error() == "team/b.yaml:2:11: include[0]: a cycle: team/a.yaml -> team/b.yaml -> team/a.yaml; remove one of these includes"
    files.write("me.yaml", "version: 1\ninclude: [me.yaml]\n")
    assert files.error() == "me.yaml:2:11: include[0]: a cycle: me.yaml -> me.yaml; remove one of these includes"


def test_globs_are_read_in_order_and_a_file_reached_twice_counts_once(files):
    files.write("conf.d/10-team.yaml", TEAM)
    files.write("conf.d/20-extra.yaml", "version: 1\ninclude: [10-team.yaml]\nproviders:\n  docs:\n    default: [api]\n")
    files.write("me.yaml", "version: 1\ninclude: [conf.d/*.yaml]\n")
    loaded = files.load()
    assert [Path(layer.path).name for layer in loaded.layers] == ["10-team.yaml", "20-extra.yaml", "me.yaml"]
    assert loaded.provider("docs").default == ("api",)
    assert str(files.root / "conf.d") in loaded.watched, "a file added to the folder is a new layer"


TEAM_HOOKS = """\
version: 1
hooks:
  fmt: {event: PostToolUse, matcher: Edit, command: ruff format .}
  old: {event: Stop, command: notify}
bindings:
  ~/src/api:
    hooks:
      guard: {event: PreToolUse, matcher: Bash, command: ./guard.sh}
"""


def test_an_included_layers_hooks_merge_by_name_key_by_key(files):
    from projector.core.hooks import Hook

    files.write("team.yaml", TEAM_HOOKS)
    files.write("me.yaml", "version: 1\ninclude: [team.yaml]\nhooks:\n  fmt: {timeout: 30}\n  old: {remove: true}\n"
                           "  mine: {event: Stop, command: say done}\nbindings:\n  ~/src/api:\n    hooks:\n      guard: {enabled: false}\n"
                           "      own: {event: PreToolUse, command: ./own.sh}\n")
    loaded = files.load()
    assert loaded.hooks == (Hook("fmt", "PostToolUse", "Edit", "ruff format .", 30.0), Hook("mine", "Stop", None, "say done"))
    guard, own = loaded.bindings[0].hooks
    assert guard == Hook("guard", "PreToolUse", "Bash", "./guard.sh", enabled=False) and own.command == "./own.sh"
    assert loaded.layers[0].hooks == ("fmt", "guard") and loaded.layers[1].hooks == (), "what each included layer says of hooks"


def test_a_hooks_command_from_another_layer_changes_only_with_override(files):
    files.write("team.yaml", TEAM_HOOKS)
    files.write("me.yaml", "version: 1\ninclude: [team.yaml]\nhooks:\n  fmt: {command: black .}\n")
    assert files.error() == ("me.yaml:4:18: hooks.fmt.command: changes what team.yaml:3:44 gives (ruff format .); "
                             "a layer may change the command another layer gave only where it says override: true")
    files.write("me.yaml", "version: 1\ninclude: [team.yaml]\nhooks:\n  fmt: {command: black ., override: true}\n")
    assert files.load().hooks[0].command == "black ."
    files.write("me.yaml", "version: 1\ninclude: [team.yaml]\nhooks:\n  new: {enabled: false}\n")
    assert files.error().startswith('me.yaml:4:8: hooks.new: missing "event": a hook here is a definition')


def test_an_included_layers_hooks_run_only_while_it_is_trusted(files):
    team = files.write("team.yaml", TEAM_HOOKS)
    files.write("me.yaml", "version: 1\ninclude: [team.yaml]\nhooks:\n  mine: {event: Stop, command: say done}\n")
    loaded = files.load()
    assert "team.yaml is not trusted, so the hooks it declares or sets (fmt, guard, old) do not run" in loaded.hook_blocked("guard")
    assert loaded.hook_blocked("mine") is None, "the model's own file needs no trust"
    assert any("team.yaml is not trusted" in w for w in __import__("projector.compile.plan", fromlist=["plan"]).plan(loaded, None).warnings)
    projects.trust_layer(str(team), team.read_bytes(), files.environ)
    assert files.load().hook_blocked("fmt") is None
    team.write_text(team.read_text() + "# pulled\n")
    assert "team.yaml changed since it was trusted" in files.load().hook_blocked("fmt")


def test_an_included_layers_local_server_runs_only_while_it_is_trusted(files):
    team = files.write("team.yaml", TEAM.replace("providers:\n", "providers:\n  lint:\n    command: lint-mcp\n    enabled: false\n", 1))
    files.write("me.yaml", "version: 1\ninclude: [team.yaml]\nproviders:\n  mine:\n    command: my-mcp\n")
    loaded = files.load()
    assert loaded.layers[0].local == ("lint",) and loaded.layers[1].local == ()
    assert "team.yaml is not trusted, so the local servers it declares or sets (lint) do not run" in loaded.blocked("lint")
    assert loaded.blocked("mine") is None and loaded.blocked("docs") is None, "the model's own file needs no trust"
    projects.trust_layer(str(team), team.read_bytes(), files.environ)
    assert files.load().blocked("lint") is None
    team.write_text(team.read_text() + "# pulled\n")
    assert "team.yaml changed since it was trusted" in files.load().blocked("lint")


def test_an_included_layers_settings_for_my_own_server_need_trust_too(files):
    """An env (LD_PRELOAD), env_files or cwd is as good as a command."""
    files.write("team.yaml", "version: 1\nbindings:\n  ~/w:\n    mine: {env: {LD_PRELOAD: /tmp/x.so}}\n")
    files.write("me.yaml", "version: 1\ninclude: [team.yaml]\nproviders:\n  mine:\n    command: my-mcp\n")
    assert "team.yaml is not trusted" in files.load().blocked("mine")


def test_the_cache_sees_an_edit_of_an_included_layer_and_a_new_glob_match(files, tmp_path):
    files.write("conf.d/10-team.yaml", TEAM)
    files.write("me.yaml", "version: 1\ninclude: [conf.d/*.yaml]\n")
    cache = tmp_path / "cache.json"
    load = lambda: model.cached(files.root / "me.yaml", files.environ, lambda: CLIENTS, cache)  # noqa: E731
    assert load().provider("docs").default == ("handbook",)
    files.write("conf.d/10-team.yaml", TEAM.replace("default: [handbook]", "default: [api]"))
    assert load().provider("docs").default == ("api",)
    files.write("conf.d/20-more.yaml", "version: 1\nproviders:\n  wiki:\n    url: https://wiki.example.com/mcp\n")
    assert load().provider("wiki") is not None


# --------------------------------------------------------------------------- repository bindings


@pytest.mark.parametrize("remote", ["git@github.com:Acme/api.git", "https://github.com/acme/api", "ssh://git@github.com:22/acme/api.git/",
                                    "github.com/acme/api", "https://user@github.com/acme/api.git"])
def test_remotes_as_git_writes_them_are_one_repository(remote):
    assert repos.normalise(remote) == "github.com/acme/api"


@pytest.mark.parametrize("remote", ["/srv/git/api.git", "file:///srv/api.git", "../api", "api"])
def test_a_local_path_is_no_remote(remote):
    assert repos.normalise(remote) is None


def test_remotes_are_read_from_git_config_text():
    config = '[core]\n\tbare = false\n[remote "origin"]\n\turl = git@github.com:acme/api.git\n\tfetch = +refs/*\n' \
             '[remote "up stream"]\n\tURL = "https://github.com/up/api" ; a comment\n[branch "main"]\n\turl = not-a-remote\n'
    assert repos.remotes(config) == (("origin", "git@github.com:acme/api.git"), ("up stream", "https://github.com/up/api"))


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.skipif(subprocess.run(["which", "git"], capture_output=True).returncode != 0, reason="git is not installed")
def test_every_clone_under_the_roots_is_bound_but_not_a_forged_worktree(files):
    home = files.root / "home"
    for clone, remote in (("src/api", "git@github.com:acme/api.git"), ("src/github.com/acme/api", "https://github.com/acme/api"),
                          ("src/other", "git@github.com:acme/other.git")):
        (home / clone).mkdir(parents=True)
        _git("init", "-q", cwd=home / clone)
        _git("remote", "add", "origin", remote, cwd=home / clone)
    forged = home / "src" / "downloads"
    forged.mkdir()
    (forged / ".git").write_text(f"gitdir: {home}/src/api/.git\n")
    files.write("me.yaml", "version: 1\nroots: [~/src]\nproviders:\n  docs:\n    url: https://kb.example.com/mcp\n"
                           "bindings:\n  api:\n    repo: github.com/acme/api\n    docs: []\n")
    loaded = files.load()
    real = os.path.realpath(home)
    assert [b.path for b in loaded.bindings] == [f"{real}/src/api", f"{real}/src/github.com/acme/api"]
    assert all(b.worktrees and b.repo == "api" for b in loaded.bindings)
    assert [c.remote for c in loaded.repo("api").clones] == ["origin git@github.com:acme/api.git", "origin https://github.com/acme/api"]
    assert f"{real}/src" in loaded.watched and f"{real}/src/api/.git/config" in loaded.watched


def test_two_bindings_of_one_repository_are_refused_with_both_places(files):
    files.write("team.yaml", "version: 1\nproviders:\n  docs:\n    url: https://x.example.com/mcp\nbindings:\n  api:\n    repo: github.com/acme/api\n")
    files.write("me.yaml", "version: 1\ninclude: [team.yaml]\nbindings:\n  my-api:\n    repo: git@github.com:acme/api.git\n")
    assert files.error() == 'me.yaml:5:11: bindings.my-api.repo: the same repository as binding "api" (team.yaml:6:3); merge the two bindings'
    files.write("me.yaml", "version: 1\ninclude: [team.yaml]\nbindings:\n  api:\n    repo: /srv/api.git\n")
    assert "bindings.api.repo: \"/srv/api.git\" is not a git remote" in files.error()
