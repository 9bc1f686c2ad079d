"""The model: what a person writes, and the exact message when it is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from projector.core import model
from projector.core.errors import ModelError

CLIENTS = ("claude-code", "codex", "opencode", "crush", "kiro", "copilot")

GOOD = """\
version: 1
clients: [codex, claude-code]
providers:
  docs:
    url: https://kb.example.com/mcp/routed
    token_env: DOCS_TOKEN
    kbs: [handbook, api-a, api-b]
    default: [handbook]
  github:
    url: https://api.githubcopilot.com/mcp/
    token_env: GITHUB_TOKEN
bindings:
  ~/work/project-a:
    docs: [api-a, handbook]
  $WORK/b:
    docs: []
"""


def load(tmp_path: Path, text: str, **env: str):
    path = tmp_path / "projector.yaml"
    path.write_text(text)
    environ = {"HOME": "/home/me", "WORK": "/srv/work", **env}
    return model.load(path, environ, CLIENTS)


def test_a_good_model_becomes_frozen_records(tmp_path):
    loaded = load(tmp_path, GOOD)
    assert loaded.clients == ("codex", "claude-code")
    docs, github = loaded.providers
    assert (docs.name, docs.kbs, docs.default, docs.token_env) == ("docs", ("handbook", "api-a", "api-b"), ("handbook",), "DOCS_TOKEN")
    assert (github.kbs, github.default) == (None, None)  # absent: every KB
    assert [b.path for b in loaded.bindings] == ["/home/me/work/project-a", "/srv/work/b"]
    assert loaded.bindings[1].settings("docs").kbs == ()  # [] stays "none", never "all"
    assert loaded.bindings_of("github") == ()
    with pytest.raises(AttributeError):
        docs.url = "x"  # type: ignore[misc]


def test_starter_model_is_valid(tmp_path):
    from projector.commands.init import STARTER as starter
    loaded = load(tmp_path, starter.read_text())
    assert loaded.providers == () and loaded.bindings == ()


BAD = [
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\n    token_env: T\n    oauth: true\n",
                 'projector.yaml:6:5: providers.docs.oauth: give either "token_env" (a token variable) or "oauth: true" (the client signs in), not both',
                 id="oauth-and-token"),
    pytest.param("version: 1\nproviders:\n  docs:\n    urll: https://x\n",
                 "projector.yaml:4:5: providers.docs.urll: unknown key (did you mean \"url\"?) (allowed: args, command, cwd, default, description, enabled, env, insecure, kbs, linger, listen, oauth, override, remove, shared, timeout, token_env, tools, url); remove it or fix its spelling",
                 id="unknown-key"),
    pytest.param("version: 1\nproviders:\n  docs:\n    token_env: T\n",
                 'projector.yaml:3:3: providers.docs: give either "url" (a remote provider) or "command" (a local one)', id="missing-url"),
    pytest.param("version: 1\nproviders:\n  lint:\n    command: x\n    token_env: T\n",
                 'projector.yaml:5:5: providers.lint.token_env: "token_env" is not a setting of a local provider; remove it', id="remote-key-on-local"),
    pytest.param("version: 1\nproviders:\n  lint:\n    command: x\nbindings:\n  ~/w:\n    lint: [a]\n",
                 'projector.yaml:7:11: bindings.~/w.lint: "lint" is a local provider: give settings (a mapping such as {enabled: true}), not a KB list',
                 id="kb-list-for-local"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\nbindings:\n  ~/w:\n    docs: {env: {A: b}}\n",
                 'projector.yaml:7:12: bindings.~/w.docs.env: "env" is not a setting of remote provider "docs" (it takes kbs, enabled and tools)',
                 id="env-for-remote"),
    pytest.param("version: 1\nproviders:\n  lint:\n    command: x\n    env: {1A: b}\n",
                 'projector.yaml:5:11: providers.lint.env.1A: "1A" is not a variable name: use letters, digits and "_"', id="bad-variable-name"),
    pytest.param("version: 1\nproviders:\n  lint:\n    command: x\nbindings:\n  ~/w:\n    lint: {enabled: maybe}\n",
                 "projector.yaml:7:21: bindings.~/w.lint.enabled: expected true or false, got a string", id="enabled-not-boolean"),
    pytest.param("version: 1\nproviders:\n  worktrees:\n    command: x\n",
                 'projector.yaml:3:3: providers.worktrees: "worktrees" is a reserved word in bindings; give the provider another name',
                 id="reserved-name"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\n    kbs: api-a\n",
                 "projector.yaml:5:10: providers.docs.kbs: expected a list, got a string", id="wrong-type"),
    pytest.param("version: 2\nproviders: {}\n",
                 "projector.yaml:1:10: version: unsupported version 2: this projector reads version 1", id="version"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\n    kbs: [api-a]\nbindings:\n  ~/work/a:\n    docs: [api-z]\n",
                 'projector.yaml:8:12: bindings.~/work/a.docs[0]: "api-z" is not a KB of provider "docs" (did you mean "api-a"?) (it mounts: api-a)',
                 id="unknown-kb"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\n    kbs: [a, b]\n    default: [c]\n",
                 'projector.yaml:6:15: providers.docs.default[0]: "c" is not a KB of provider "docs" (it mounts: a, b)',
                 id="unknown-default-kb"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\nbindings:\n  ~/work/a:\n    doc: [x]\n",
                 'projector.yaml:7:5: bindings.~/work/a.doc: no provider named "doc" (did you mean "docs"?) (providers: docs)', id="unknown-provider"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\nbindings:\n  work/a:\n    docs: [x]\n",
                 "projector.yaml:6:3: bindings.work/a: a binding is a folder given as an absolute path or one under ~, or a repository binding: a name with repo: <its git remote>",
                 id="relative-path"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\nbindings:\n  $NOPE/a:\n    docs: [x]\n",
                 "projector.yaml:6:3: bindings.$NOPE/a: $NOPE is not set in this environment; set it or write the folder out",
                 id="unset-variable"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\nbindings:\n  ~/w:\n    docs: [x]\n  /home/me/w/:\n    docs: [y]\n",
                 'projector.yaml:8:3: bindings./home/me/w/: the same folder as "~/w"; merge the two bindings', id="same-folder"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\n  docs:\n    url: https://y\n",
                 'projector.yaml:5:3: duplicate key "docs": a key may appear once; merge the two', id="duplicate-key"),
    pytest.param("version: 1\nproviders:\n  docs: [\n", "projector.yaml:4:1: not valid YAML: the file ends inside something opened above it (a [, a { or a quote): close it", id="not-yaml"),
    pytest.param("version: 1\nproviders:\n  my.docs:\n    url: https://x\n",
                 'projector.yaml:3:3: providers.my.docs: "my.docs" is not a usable name: use letters, digits, "-" and "_" (at most 64), the names every client accepts',
                 id="bad-provider-name"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: kb.example.com\n",
                 'projector.yaml:4:10: providers.docs.url: "kb.example.com" is not an http(s) URL', id="bad-url"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\n    token_env: $DOCS\n",
                 'projector.yaml:5:16: providers.docs.token_env: "$DOCS" is not a variable name: give the NAME of the variable that holds the token',
                 id="token-value-not-name"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\n    kbs: [a, 'b,c']\n",
                 'projector.yaml:5:14: providers.docs.kbs[1]: "b,c" is not a usable KB name: use letters, digits, ".", "-" and "_" (no commas)',
                 id="comma-in-kb"),
    pytest.param("version: 1\nclients: [claude]\nproviders: {}\n",
                 'projector.yaml:2:11: clients[0]: unknown client "claude" (did you mean "claude-code"?) (known: claude-code, codex, opencode, crush, kiro, copilot)',
                 id="unknown-client"),
    pytest.param("", "projector.yaml: the model is empty: run `projector init` to write a starter", id="empty"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\n    shared: true\n",
                 'projector.yaml:5:5: providers.docs.shared: "shared" is not a setting of a remote provider; remove it', id="shared-remote"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\nbindings:\n  ~/w:\n    docs: {shared: true}\n",
                 'projector.yaml:7:12: bindings.~/w.docs.shared: "shared" is not a setting of remote provider "docs" (it takes kbs, enabled and tools)',
                 id="shared-remote-binding"),
    pytest.param("version: 1\nproviders:\n  lint:\n    command: x\nbindings:\n  ~/w:\n    lint: {shared: true, linger: -1}\n",
                 "projector.yaml:7:34: bindings.~/w.lint.linger: -1 is less than the minimum of 0", id="negative-linger"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://kb/routed?team=1&kbs=handbook\n",
                 'projector.yaml:4:10: providers.docs.url: the URL sets "kbs=handbook" itself, but projector sets kbs for each '
                 "folder: take it out of the URL and say default: [...] (what folders under no binding see)", id="kbs-in-url"),
    # A value that ends in a newline is not the name or URL it looks like (issue 11, item 16).
    pytest.param('version: 1\nproviders:\n  "docs\\n":\n    url: https://x\n',
                 'projector.yaml:3:3: providers."docs\\n": "docs\\n" is not a usable name: use letters, digits, "-" and "_" (at most 64), the names every client accepts',
                 id="name-with-final-newline"),
    pytest.param('version: 1\nproviders:\n  docs:\n    url: "https://x\\n"\n',
                 'projector.yaml:4:10: providers.docs.url: "https://x\\n" is not an http(s) URL', id="url-with-final-newline"),
    pytest.param('version: 1\nproviders:\n  docs:\n    url: https://x\n    token_env: "DOCS_TOKEN\\n"\n',
                 'projector.yaml:5:16: providers.docs.token_env: "DOCS_TOKEN\\n" is not a variable name: give the NAME of the variable that holds the token',
                 id="token-env-with-final-newline"),
    pytest.param("version: 1\nproviders:\n  lint:\n    command: lint-mcp\n    env: {KEY: '${not a name}'}\n",
                 'projector.yaml:5:16: providers.lint.env.KEY: "${not a name}": each ${ starts a reference ${NAME} or '
                 '${NAME:-default}, where NAME is a variable name (letters, digits and "_")', id="env-reference-not-a-name"),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://x\n    kbs: [handbook]\nbindings:\n  ~/w:\n    docs: [handbok]\n",
                 'projector.yaml:8:12: bindings.~/w.docs[0]: "handbok" is not a KB of provider "docs" (did you mean "handbook"?) (it mounts: handbook)',
                 id="did-you-mean-kb"),
    # Issue 25: names a client folds together, variables in a URL, a token in clear.
    pytest.param("version: 1\nproviders:\n  Docs:\n    url: https://x\n  docs:\n    url: https://y\n",
                 'projector.yaml:5:3: providers.docs: "Docs" (projector.yaml:3:3) and "docs" differ only in case, and a client that '
                 "folds the case of server names takes them for one: rename one", id="names-differing-in-case"),
    *(pytest.param(f"version: 1\nproviders:\n  docs:\n    url: {url}\n    token_env: T\n",
                   f'projector.yaml:4:10: providers.docs.url: "{url}" refers to a variable ({ref}...), which clients copy as written '
                   "or expand on their own terms (a variable would decide where the token goes): write the URL out, and give a "
                   "token as token_env", id=f"variable-in-url-{ref}")
      for url, ref in [("https://${HOST}/mcp", "${H"), ("https://kb.example.com/$TEAM/mcp", "$T"), ("https://{env:HOST}/mcp", "{env:")]),
    pytest.param("version: 1\nproviders:\n  docs:\n    url: https://kb.example.com/{file:~/.ssh/id_ed25519}\n",
                 'projector.yaml:4:10: providers.docs.url: "https://kb.example.com/{file:~/.ssh/id_ed25519}" refers to a file '
                 "({file:...), whose text one client puts in its place, and so sends to that URL: write the URL out",
                 id="file-in-url"),
    *(pytest.param(f"version: 1\nproviders:\n  docs:\n    url: http://{host}/mcp\n    {token}\n",
                   f"projector.yaml:4:10: providers.docs.url: plain http:// would send {said} in clear to {name} (the MCP "
                   "authorization spec allows http:// only to this machine): use https://, or say insecure: true if you accept that",
                   id=f"token-in-clear-{host}")
      for host, name, token, said in [("203.0.113.9", "203.0.113.9", "token_env: DOCS_TOKEN", "$DOCS_TOKEN"),
                                      ("kb.example.com:8080", "kb.example.com", "oauth: true", "its OAuth token"),
                                      ("[2001:db8::1]", "2001:db8::1", "token_env: T", "$T")]),
    *(pytest.param(f"version: 1\nproviders:\n  my-docs:\n    url: https://x\n    token_env: {token}\n",
                   "projector.yaml:5:16: providers.my-docs.token_env: this looks like a token itself, not the NAME of a variable: keep "
                   "the token out of this file (export MY_DOCS_TOKEN=... in your shell's profile, or your secret manager) and write "
                   "token_env: MY_DOCS_TOKEN; if it is a real token, treat it as exposed and replace it", id=f"pasted-token-{kind}")
      for kind, token in [("github", "ghp_" + "aB3dE5fG7h" * 4), ("openai", "sk-proj-" + "aB3dE5fG7h" * 4), ("random", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z")]),
]


@pytest.mark.parametrize("name", ["DOCS_TOKEN", "GITHUB_PERSONAL_ACCESS_TOKEN_FOR_THE_CI_MACHINE_V2", "docs_token", "SK_TOKEN"])
def test_token_env_names_that_are_variable_names_are_accepted(tmp_path, name):
    loaded = load(tmp_path, f"version: 1\nproviders:\n  docs:\n    url: https://x\n    token_env: {name}\n")
    assert loaded.providers[0].token_env == name


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_models_name_file_line_column_and_what_to_do(tmp_path, text, message):
    with pytest.raises(ModelError) as raised:
        load(tmp_path, text)
    shown = str(raised.value).replace(str(tmp_path) + "/", "")
    assert message in shown.splitlines()


def test_every_problem_is_reported_at_once(tmp_path):
    text = "version: 1\nproviders:\n  docs:\n    url: https://x\n    kbs: [a]\nbindings:\n  ~/a:\n    docs: [x]\n  ~/b:\n    docs: [y]\n"
    with pytest.raises(ModelError) as raised:
        load(tmp_path, text)
    assert [p.line for p in raised.value.problems] == [8, 10]


def test_missing_model_says_how_to_start(tmp_path):
    with pytest.raises(ModelError, match=r"no model here: run `projector init`"):
        model.load(tmp_path / "nope.yaml", {"HOME": str(tmp_path)}, CLIENTS)


def test_model_path_precedence(tmp_path):
    env = {"HOME": "/h", "XDG_CONFIG_HOME": "/x", "PROJECTOR_CONFIG": "/p/m.yaml"}
    assert model.model_path("/c.yaml", env) == Path("/c.yaml")
    assert model.model_path(None, env) == Path("/p/m.yaml")
    assert model.model_path(None, {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}) == Path("/x/projector/projector.yaml")
    assert model.model_path(None, {"HOME": "/h"}) == Path("/h/.config/projector/projector.yaml")


def test_binding_paths_expand_home_and_variables():
    env = {"HOME": "/home/me", "W": "/srv"}
    assert model.expand_path("~/a/../b/", env) == "/home/me/b"
    assert model.expand_path("${W}/x", env) == "/srv/x"
    with pytest.raises(KeyError):
        model.expand_path("$MISSING/x", env)


def test_a_url_that_sets_kbs_is_refused_by_every_command_alike(sandbox):
    """Written as the plain URL, ``?kbs=handbook`` was dropped: every KB shown (issue 11, item 4).
    diff, explain and the bridge read one checked model, so none of them widens access."""
    sandbox.install_projector()
    config = sandbox.model("version: 1\nclients: [claude-code]\nproviders:\n  docs:\n    url: https://kb/routed?kbs=handbook\n")
    expected = f'{config}:5:10: providers.docs.url: the URL sets "kbs=handbook" itself'
    for command in (["diff"], ["sync"], ["explain", str(sandbox.home)], ["mcp", "--provider", "docs"]):
        done = sandbox.run(*command, config=config)
        assert done.returncode == 2 and expected in done.stderr and done.stdout == "", command
    assert not (sandbox.home / ".claude.json").exists()


def test_two_bindings_that_reach_one_folder_through_a_symlink_are_one_binding_twice(tmp_path):
    """Accepted, they made explain name one binding and resolve with the other (issue 11, item 17)."""
    (tmp_path / "w").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "w")
    text = f"version: 1\nproviders:\n  docs:\n    url: https://x\nbindings:\n  {tmp_path}/w:\n    docs: [a]\n  {tmp_path}/link:\n    docs: [b]\n"
    with pytest.raises(ModelError) as raised:
        load(tmp_path, text)
    assert str(raised.value).replace(str(tmp_path), "T").splitlines() == [
        'T/projector.yaml:8:3: bindings.T/link: the same folder as "T/w" (through a symlink: both are T/w); merge the two bindings'
    ]


def test_explain_names_the_binding_it_resolves_with_when_a_symlink_came_later(sandbox):
    """A symlink made after the model was checked makes two bindings one folder: explain's
    binding line and its provider line must still agree (the placement's choice)."""
    (sandbox.home / "w").mkdir()
    config = sandbox.model("version: 1\nclients: [claude-code]\nproviders:\n  docs:\n    url: https://x\n    token_env: T\n"
                           "bindings:\n  ~/w:\n    docs: [a]\n  ~/link:\n    docs: [b]\n")
    assert sandbox.run("explain", str(sandbox.home / "w"), config=config).returncode == 0  # checked and cached
    (sandbox.home / "link").symlink_to(sandbox.home / "w")
    lines = sandbox.run("explain", "--verbose", str(sandbox.home / "w"), config=config).stdout.splitlines()
    assert lines[1] == "binding: ~/w" and lines[3].startswith("provider docs: a — bound (~/w)"), lines


HOOKS = """\
version: 1
providers: {}
hooks:
  format: {event: PostToolUse, matcher: "Edit|Write", command: "ruff format .", timeout: 30}
  quiet: {event: Stop, command: "notify", enabled: false}
bindings:
  ~/work/a:
    hooks:
      format: {enabled: false}
      quiet: {enabled: true}
      guard: {event: PreToolUse, matcher: Bash, command: ./tools/guard.sh, env: {MODE: strict}, env_files: [.env]}
"""


def test_hooks_in_the_model_and_in_a_binding(tmp_path):
    from projector.core.hooks import Hook

    loaded = load(tmp_path, HOOKS)
    assert loaded.hooks == (Hook("format", "PostToolUse", "Edit|Write", "ruff format .", 30.0),
                            Hook("quiet", "Stop", None, "notify", None, False))
    binding = loaded.bindings[0]
    assert [h.name for h in binding.hooks] == ["format", "quiet", "guard"]
    assert binding.hooks[0] == Hook("format", enabled=False) and binding.hooks[2].env == (("MODE", "strict"),)
    assert binding.uses == (), '"hooks" is no provider'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hooks:\n  a: {event: PreTool, command: x}\n", '4:14: hooks.a.event: unknown event "PreTool" (events: PreToolUse, '),
        ("hooks:\n  a: {event: Stop, matcher: x, command: y}\n", "4:20: hooks.a.matcher: Stop hooks take no matcher"),
        ("hooks:\n  a: {event: PreToolUse, matcher: 'a(', command: y}\n", '4:35: hooks.a.matcher: "a(" is not a regular expression'),
        ("hooks:\n  a: {event: PreToolUse}\n", '4:6: hooks.a: missing "command"'),
        ("hooks:\n  a: {event: PreToolUse, command: x, timeout: 0}\n", "4:47: hooks.a.timeout: 0 is less than or equal to the minimum of 0"),
        ("hooks:\n  a: {event: PreToolUse, command: x, when: now}\n", "4:38: hooks.a.when: unknown key (allowed: command, description, "),
        ("bindings:\n  ~/w:\n    hooks:\n      b: {enabled: false}\n", '6:7: bindings.~/w.hooks.b: no hook named "b" to turn on or off'),
        ("bindings:\n  ~/w:\n    hooks:\n      b: {timeout: 3}\n", '6:11: bindings.~/w.hooks.b.timeout: "timeout" needs a command here'),
        ("bindings:\n  ~/w:\n    hooks:\n      b: {}\n", "6:10: bindings.~/w.hooks.b: an empty hook: give it a command"),
        ("providers:\n  hooks: {command: x}\n", '3:3: providers.hooks: "hooks" is a reserved word in bindings'),
    ],
)
def test_a_wrong_hook_is_named_at_its_place(tmp_path, text, message):
    head = "version: 1\n" + ("" if text.startswith("providers") else "providers: {}\n")
    with pytest.raises(ModelError) as raised:
        load(tmp_path, head + text)
    assert f"projector.yaml:{message}" in str(raised.value)


def test_the_checked_model_is_kept_while_its_text_and_the_known_clients_are_the_same(tmp_path, monkeypatch):
    path, cache = tmp_path / "projector.yaml", tmp_path / "state" / "model-cache.json"
    path.write_text(GOOD)
    environ = {"HOME": "/home/me", "WORK": "/srv/work"}
    from projector.core import layers

    checked = []
    original = layers.checked  # a model is checked with its layers (core.layers), whatever calls it
    monkeypatch.setattr(layers, "checked", lambda *args: checked.append(1) or original(*args))
    first = model.cached(path, environ, lambda: CLIENTS, cache)
    replacement = tmp_path / "new.yaml"
    replacement.write_text(GOOD)
    replacement.replace(path)  # the same text in a new file: an editor's save, a checkout
    assert model.cached(path, environ, lambda: CLIENTS, cache) == first and len(checked) == 1
    path.write_text(GOOD.replace("[api-a, handbook]", "[api-a]"))
    assert model.cached(path, environ, lambda: CLIENTS, cache).bindings[0].settings("docs").kbs == ("api-a",)
    assert len(checked) == 2


def test_a_client_the_model_names_that_is_gone_is_reported_though_the_model_is_unchanged(tmp_path):
    """A user's own descriptor removed: the kept model was checked against a list that named it."""
    path, cache = tmp_path / "projector.yaml", tmp_path / "state" / "model-cache.json"
    path.write_text(GOOD.replace("[codex, claude-code]", "[codex, mine]"))
    environ = {"HOME": "/home/me", "WORK": "/srv/work"}
    assert model.cached(path, environ, lambda: CLIENTS + ("mine",), cache).clients == ("codex", "mine")
    with pytest.raises(ModelError, match='unknown client "mine"'):
        model.cached(path, environ, lambda: CLIENTS, cache)


OAUTH = """\
version: 1
providers:
  figma:
    url: https://mcp.figma.com/mcp
    oauth:
      client_id: projector-figma
      client_secret_env: FIGMA_CLIENT_SECRET
      scopes: [files:read, offline_access]
      redirect_port: 8765
  linear:
    url: https://mcp.linear.app/mcp
    oauth: true
  notion:
    url: https://mcp.notion.com/mcp
    oauth: {client_metadata_url: https://tools.example.com/projector/client.json}
  slack:
    url: https://mcp.slack.com/mcp
    oauth: client
  ci:
    url: https://ci.example.com/mcp
    oauth:
      client_id: ci-bot
      client_credentials: {private_key_file: ~/keys/ci.pem, algorithm: ES256}
      issuer: https://auth.ci.example.com/tenant
  corp:
    url: https://corp.example.com/mcp
    oauth:
      client_id: mcp-client
      client_secret_env: CORP_SECRET
      enterprise: {issuer: https://auth.example.com, idp_token_endpoint: https://idp.example.com/token, idp_client_id: projector,
                   id_token_env: CORP_ID_TOKEN}
"""


def test_oauth_settings_become_a_record_per_provider(tmp_path):
    ci, corp, figma, linear, notion, slack = load(tmp_path, OAUTH).providers
    assert (notion.oauth.client_metadata_url, notion.oauth.client_id) == ("https://tools.example.com/projector/client.json", None)
    assert (figma.oauth.client_id, figma.oauth.client_secret_env, figma.oauth.scopes, figma.oauth.redirect_port, figma.oauth.grant) == (
        "projector-figma", "FIGMA_CLIENT_SECRET", ("files:read", "offline_access"), 8765, "authorization_code")
    assert (linear.oauth.by_client, linear.oauth.client_id) == (False, None)  # projector signs in, with discovery
    assert slack.oauth.by_client  # each client signs itself in
    assert (ci.oauth.grant, ci.oauth.private_key_file, ci.oauth.algorithm) == ("client_credentials", "~/keys/ci.pem", "ES256")
    assert (ci.oauth.issuer, ci.oauth.unpinned) == ("https://auth.ci.example.com/tenant", False)
    assert (corp.oauth.issuer, corp.oauth.unpinned) == ("https://auth.example.com", False)
    assert (corp.oauth.grant, corp.oauth.idp_token_endpoint, corp.oauth.idp_client_id, corp.oauth.id_token_env) == (
        "enterprise", "https://idp.example.com/token", "projector", "CORP_ID_TOKEN")
    assert load(tmp_path, "version: 1\nproviders:\n  docs:\n    url: https://x\n    oauth: false\n").providers[0].oauth is None


OAUTH_BAD = [
    pytest.param("    oauth: clinet\n", 'projector.yaml:5:12: providers.docs.oauth: "clinet" is not a way to sign in (did you mean "client"?): '
                 'give true (projector signs in once, for every client), "client" (each client signs in itself) or a mapping of settings',
                 id="oauth-word"),
    pytest.param("    oauth: {client_ib: x}\n", 'projector.yaml:5:13: providers.docs.oauth.client_ib: unknown key (did you mean "client_id"?) '
                 "(allowed: client_credentials, client_id, client_metadata_url, client_secret_env, enterprise, issuer, redirect_port, scopes); remove it or fix its spelling",
                 id="oauth-unknown-key"),
    pytest.param("    oauth: {redirect_port: 80}\n", "projector.yaml:5:28: providers.docs.oauth.redirect_port: 80 is less than the minimum of 1024",
                 id="privileged-port"),
    pytest.param("    oauth: {client_credentials: true}\n",
                 "projector.yaml:5:13: providers.docs.oauth.client_credentials: client_credentials needs the client registered with the "
                 "server beforehand: give client_id (and client_secret_env for its secret)", id="credentials-without-client-id"),
    pytest.param("    oauth: {client_id: c, client_credentials: true}\n",
                 "projector.yaml:5:27: providers.docs.oauth.client_credentials: client_credentials: true signs in with the client's secret: "
                 "give client_secret_env (the NAME of its variable), or a private key: {private_key_file: ~/key.pem, algorithm: ES256}",
                 id="credentials-without-secret"),
    pytest.param("    oauth: {client_id: c, client_credentials: {private_key_file: /k.pem, algorithm: ES265}}\n",
                 'projector.yaml:5:85: providers.docs.oauth.client_credentials.algorithm: "ES265" is not one of RS256, RS384, RS512, '
                 'PS256, PS384, PS512, ES256, ES384, ES512 (did you mean "ES256"?)', id="algorithm"),
    pytest.param("    oauth: {client_id: c, client_credentials: {private_key_file: keys/k.pem}}\n",
                 "projector.yaml:5:66: providers.docs.oauth.client_credentials.private_key_file: the key file is given as an absolute "
                 "path or one under ~", id="relative-key-file"),
    pytest.param("    oauth: {client_id: c, client_secret_env: S, client_credentials: true, redirect_port: 8000}\n",
                 "projector.yaml:5:75: providers.docs.oauth.redirect_port: client_credentials opens no browser, so there is no redirect; "
                 "remove redirect_port", id="port-without-browser"),
    pytest.param("    oauth: {client_id: c, enterprise: {idp_token_endpoint: https://idp/token}}\n",
                 'projector.yaml:5:39: providers.docs.oauth.enterprise: missing "id_token_env"', id="enterprise-without-token"),
    pytest.param("    oauth: {client_id: c, client_secret_env: S, enterprise: {issuer: https://auth.example.com, "
                 "idp_token_endpoint: http://idp.example.com/token, id_token_env: IDT}}\n",
                 "projector.yaml:5:116: providers.docs.oauth.enterprise.idp_token_endpoint: plain http:// would send the ID token "
                 "in clear to idp.example.com (the MCP authorization spec allows http:// only to this machine): use https://, or "
                 "say insecure: true of the provider if you accept that", id="identity-provider-in-clear"),
    pytest.param("    oauth: {client_id: c, client_secret_env: S, client_credentials: true, issuer: auth.example.com}\n",
                 'projector.yaml:5:83: providers.docs.oauth.issuer: "auth.example.com" is not an http(s) URL', id="issuer-not-a-url"),
    pytest.param("    oauth: {client_id: c, client_secret_env: S, client_credentials: true, issuer: http://auth.example.com}\n",
                 "projector.yaml:5:83: providers.docs.oauth.issuer: plain http:// would send the client's secret (or signed assertion) "
                 "in clear to auth.example.com (the MCP authorization spec allows http:// only to this machine): use https://, or "
                 "say insecure: true of the provider if you accept that", id="machine-issuer-in-clear"),
    pytest.param("    oauth: {client_id: c, client_secret_env: S, client_credentials: true, issuer: 'https://auth.example.com/?t=1'}\n",
                 'projector.yaml:5:83: providers.docs.oauth.issuer: "https://auth.example.com/?t=1" has a query or a fragment, which '
                 "an issuer never has (RFC 8414): give the issuer exactly as the authorization server's metadata says it",
                 id="issuer-with-query"),
    pytest.param("    oauth: {client_id: c, issuer: https://auth.example.com}\n",
                 "projector.yaml:5:27: providers.docs.oauth.issuer: issuer names where a machine's client_credentials sign-in sends "
                 "its secret; a person's sign-in takes the authorization server the MCP server names: remove it", id="person-issuer"),
    pytest.param("    oauth: {client_id: c, client_secret_env: S, issuer: https://a.example.com, enterprise: {issuer: https://a.example.com, "
                 "idp_token_endpoint: https://idp.example.com/token, id_token_env: IDT}}\n",
                 "projector.yaml:5:49: providers.docs.oauth.issuer: enterprise takes its issuer inside enterprise: {issuer: ...}; "
                 "remove this one", id="enterprise-issuer-twice"),
    pytest.param("    oauth: {client_id: c, client_secret_env: ghp_abcdefghijklmnopqrstuvwxyz0123}\n",
                 "projector.yaml:5:46: providers.docs.oauth.client_secret_env: this looks like a token itself, not the NAME of a variable: "
                 "keep the token out of this file (export DOCS_CLIENT_SECRET=... in your shell's profile, or your secret manager) and "
                 "write client_secret_env: DOCS_CLIENT_SECRET; if it is a real token, treat it as exposed and replace it",
                 id="pasted-secret"),
]


@pytest.mark.parametrize(("oauth", "message"), OAUTH_BAD)
def test_bad_oauth_settings_are_named_at_their_place(tmp_path, oauth, message):
    with pytest.raises(ModelError) as error:
        load(tmp_path, "version: 1\nproviders:\n  docs:\n    url: https://x\n" + oauth)
    assert message in str(error.value).replace(str(tmp_path) + "/", "").splitlines()


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/mcp", "http://localhost/mcp", "http://[::1]:9/mcp", "http://127.8.0.1/mcp"])
def test_a_token_over_plain_http_to_this_machine_is_accepted(tmp_path, url):
    assert load(tmp_path, f"version: 1\nproviders:\n  docs:\n    url: {url}\n    token_env: T\n").providers[0].url == url


def test_insecure_lets_a_token_go_over_plain_http_and_sync_and_doctor_say_so(sandbox):
    sandbox.install_projector()
    config = sandbox.model("version: 1\nclients: [codex]\nproviders:\n  docs:\n    url: http://203.0.113.9/mcp\n"
                           "    token_env: DOCS_TOKEN\n    insecure: true\n  plain:\n    url: http://203.0.113.9/open\n")
    said = 'provider "docs" sends $DOCS_TOKEN in clear over http:// to 203.0.113.9 (it says insecure: true)'
    synced = sandbox.run("sync", config=config)
    assert synced.returncode == 0, synced.stderr
    assert said in synced.stderr and "plain" not in synced.stderr, "a provider without a token has nothing to expose"
    assert "http://203.0.113.9/mcp" in (sandbox.home / ".codex" / "config.toml").read_text()
    doctor = sandbox.run("doctor", config=config).stdout
    assert f"note     {said}" in doctor
