"""compile.importing: an entry as a provider of the model, with nothing secret in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from projector.compile.clients import registry
from projector.compile.importing import Found, gather, provider_name, same_server, secret_argument, server_of


def _found(client: str, name: str, value, folder: str | None = None) -> Found:
    return Found(registry()[client], Path("/h/f"), "~/f", name, value, folder)


def test_a_written_out_token_becomes_a_variable_and_a_reference_stays_one():
    written = server_of(_found("claude-code", "sentry", {"type": "http", "url": "https://s.dev/mcp",
                                                         "headers": {"Authorization": "Bearer abc123def456ghi789jkl012mno"}}))
    assert written.spec == {"url": "https://s.dev/mcp", "token_env": "SENTRY_TOKEN"} and written.secrets == ("SENTRY_TOKEN",)
    referenced = server_of(_found("opencode", "docs", {"type": "remote", "url": "https://d.dev/mcp", "headers": {"Authorization": "Bearer {env:DOCS}"}}))
    assert referenced.spec == {"url": "https://d.dev/mcp", "token_env": "DOCS"} and referenced.secrets == ()
    codex = server_of(_found("codex", "docs", {"url": "https://d.dev/mcp", "bearer_token_env_var": "DOCS"}))
    assert codex.spec == {"url": "https://d.dev/mcp", "token_env": "DOCS"}


def test_env_values_that_look_secret_become_references_others_stay():
    server = server_of(_found("claude-code", "gh", {"command": "gh-mcp", "env": {"GH_TOKEN": "x", "LEVEL": "debug", "OTHER": "sk-live0123456789",
                                                                                  "PASSED": "${HOME_DIR}"}}))
    assert server.spec["env"] == {"GH_TOKEN": "${GH_TOKEN}", "LEVEL": "debug", "OTHER": "${OTHER}", "PASSED": "${HOME_DIR}"}
    assert server.secrets == ("GH_TOKEN", "OTHER")


def test_a_secret_in_args_keeps_the_entry_out():
    for args in (["--api-key", "abc"], ["--token=abc"], ["X-Api-Key: abc"], ["API_KEY=abc"], ["ghp_0123456789abcdef0123456789ab"]):
        assert any(secret_argument(args, i) for i in range(len(args))), args
    for args in (["--api-key", ""], ["--api-key", "${KEY}"], ["-y", "@scope/pkg@1.2.3"], ["--port", "8080"], ["/home/me/projects"]):
        assert not any(secret_argument(args, i) for i in range(len(args))), args
    assert isinstance(server_of(_found("claude-code", "x", {"command": "x", "args": ["--token", "abc"]})), str)


def test_turned_off_and_unreadable_entries_are_reported_not_imported():
    imported = gather([_found("claude-code", "off", {"command": "x", "disabled": True}), _found("claude-code", "odd", {"weird": 1})], {})
    assert imported.providers == {} and imported.claims == ()
    assert imported.report == ("not imported: odd in ~/f: neither a URL nor a command projector can read; left as it is",
                               "not imported: off in ~/f: turned off in the client; left as it is")


ZAPIER_KEY = "sk-ak-Qm3xT9vLp2Rk7Wn4Yb8Zc1Hd"
PATH_KEY = "7c9e6679-7425-40de-944b-e07fc1f90ae7"


def test_a_secret_in_a_urls_path_keeps_the_entry_out_and_is_not_repeated():
    """A key in the URL's path (Zapier's /mcp/sk-ak-.../sse, others' /mcp/<uuid>/...) would be
    copied into the model, which teams share: the entry stays the user's, said without the key;
    a path of words, versions or a commit id under /commit/ is imported."""
    for url in (f"https://actions.zapier.com/mcp/{ZAPIER_KEY}/sse", f"https://mcp.example.com/mcp/{PATH_KEY}/sse",
                "https://m.dev/s/0123456789abcdef0123456789abcdef"):
        why = server_of(_found("cursor", "zapier", {"url": url}))
        assert isinstance(why, str) and "its URL's path carries what may be a secret" in why, url
        assert ZAPIER_KEY not in why and PATH_KEY not in why and "0123456789abcdef" not in why
    imported = gather([_found("cursor", "zapier", {"url": f"https://actions.zapier.com/mcp/{ZAPIER_KEY}/sse"})], {})
    assert imported.providers == {} and imported.claims == ()
    assert imported.report[0].startswith("not imported: zapier in ~/f: its URL's path carries what may be a secret "
                                         "(https://actions.zapier.com/mcp/.../sse: "), imported.report
    for url in ("https://api.githubcopilot.com/mcp/x/repos/readonly", "https://mcp.deepwiki.com/v1/mcp",
                "https://m.dev/commit/0123456789abcdef0123456789abcdef0123abcd/mcp"):
        assert not isinstance(server_of(_found("cursor", "ok", {"url": url})), str), url


def test_a_password_in_a_urls_userinfo_keeps_the_entry_out_and_is_not_repeated():
    """https://user:secret@host/mcp carries its secret before the host: copied into the model
    (which teams share) it would leak, so the entry stays the user's, said without it."""
    why = server_of(_found("cursor", "kb", {"url": "https://bot:s3cr3t-Pa55word@kb.example.com/mcp"}))
    assert isinstance(why, str) and "its URL carries a password" in why, why
    assert "s3cr3t" not in why and "https://kb.example.com/mcp" in why


def test_one_provider_per_server_each_named_as_its_entries_are():
    """The same server under two names is one provider; a name two servers share goes to the one
    that has no other (nothing needs renaming then)."""
    found = [_found("claude-code", "db", {"command": "pg", "args": ["--prod"]}), _found("codex", "db", {"command": "pg", "args": ["--dev"]}),
             _found("codex", "database", {"command": "pg", "args": ["--prod"]})]
    imported = gather(found, {})
    assert imported.providers == {"database": {"command": "pg", "args": ["--prod"]}, "db": {"command": "pg", "args": ["--dev"]}}
    assert [(c.client.id, c.name, c.replaced_by) for c in imported.claims] == [("codex", "database", None), ("claude-code", "db", "database"),
                                                                              ("codex", "db", None)]
    clash = gather([_found("claude-code", "db", {"command": "pg"}), _found("codex", "db", {"command": "mysql"})], {})
    assert set(clash.providers) == {"db", "db-codex"}
    assert "db in ~/f becomes provider db-codex (another server has that name)" in clash.report


def test_a_secret_in_a_urls_query_keeps_the_entry_out_and_is_not_repeated():
    """A URL cannot name a variable (issue 25), so an entry whose query carries a key stays the user's."""
    exa = "https://mcp.exa.ai/mcp?exaApiKey=9f8e7d6c-live&tools=web_search_exa"
    for url in (exa, "https://m.dev/sse?token=YOUR_TOKEN", "https://m.dev/mcp?access_token=abc", "https://m.dev/mcp?x=sk-live0123456789"):
        why = server_of(_found("opencode", "exa", {"type": "remote", "url": url}))
        assert isinstance(why, str) and "its URL's query carries a secret" in why, url
    assert "9f8e7d6c" not in server_of(_found("opencode", "exa", {"type": "remote", "url": exa}))
    imported = gather([_found("opencode", "exa", {"type": "remote", "url": exa})], {})
    assert imported.providers == {} and imported.claims == ()
    assert imported.report[0].startswith("not imported: exa in ~/f: its URL's query carries a secret (exaApiKey=...)")
    kept = server_of(_found("opencode", "supa", {"type": "remote", "url": "https://mcp.supabase.com/mcp?project_ref=cnlutbuzjqtuicngldak&key="}))
    assert kept.spec == {"url": "https://mcp.supabase.com/mcp?project_ref=cnlutbuzjqtuicngldak&key="}, "no secret: imported as it is"
    assert isinstance(server_of(_found("claude-code", "v", {"type": "http", "url": "https://m.dev/mcp?key=${KEY}"})), str), \
        "a variable in a URL is refused by the model: reported, not a failed import"


def test_a_reference_in_a_codex_header_is_text_and_said_so():
    """Codex expands no variable (rmcp-client build_default_headers sends http_headers as written):
    "Bearer ${X}" sends that text. The user plainly meant the variable X: imported as token_env X, and said."""
    codex = _found("codex", "sentry", {"url": "https://s.dev/mcp", "http_headers": {"Authorization": "Bearer ${SENTRY_TOKEN}"}})
    server = server_of(codex)
    assert server.spec == {"url": "https://s.dev/mcp", "token_env": "SENTRY_TOKEN"} and server.secrets == ()
    assert ("sentry in ~/f: this entry sends the text ${SENTRY_TOKEN} literally; Codex CLI reads variables only through "
            "bearer_token_env_var, env_http_headers or env_vars; imported as token_env SENTRY_TOKEN, which is what it plainly meant "
            "(the next sync's entry reads the variable: set $SENTRY_TOKEN)") in gather([codex], {}).report
    claude = server_of(_found("claude-code", "sentry", {"type": "http", "url": "https://s.dev/mcp", "headers": {"Authorization": "Bearer ${SENTRY_TOKEN}"}}))
    assert claude.spec == server.spec and claude.notes == (), "a client that expands ${X} reads it as the variable"
    assert not same_server(registry()["codex"], "sentry", codex.value, {"url": "https://s.dev/mcp", "bearer_token_env_var": "SENTRY_TOKEN"}), \
        "the sync that writes bearer_token_env_var changes what Codex sends: a change, not a restyle"


def test_a_reference_in_a_codex_env_value_is_text_and_the_entry_stays_the_users():
    """Codex hands a stdio server its env table as written (rmcp-client create_env_for_mcp_server):
    the server of env = {Y = "${Y}"} gets the text ${Y}. The model cannot say that text (it reads
    ${Y} as the variable), so the entry is not imported: it stays as it is, and the report says why."""
    codex = _found("codex", "lint", {"command": "lint-mcp", "env": {"Y": "${Y}", "LEVEL": "debug"}})
    server = server_of(codex)
    assert server.unsaid == ("env Y (Codex CLI hands the server the text ${Y} as it is: it expands no variable, and reads one only "
                             "through bearer_token_env_var, env_http_headers or env_vars; the model would read it as a variable)",)
    assert gather([codex], {}).claims == (), "not projector's: its entry would hand the server the variable's value instead"
    claude = server_of(_found("claude-code", "lint", {"command": "lint-mcp", "env": {"Y": "${Y}", "LEVEL": "debug"}}))
    assert claude.spec["env"] == {"Y": "${Y}", "LEVEL": "debug"} and claude.unsaid == (), "a client that expands ${Y} passes the variable"


def test_a_codex_entry_keeps_both_its_env_vars_and_its_env_table():
    """Codex passes the variables env_vars names and sets its env table too: neither is lost."""
    server = server_of(_found("codex", "lint", {"command": "lint-mcp", "env_vars": ["B", {"name": "C"}], "env": {"A": "1"}}))
    assert server.spec["env"] == {"B": "${B}", "C": "${C}", "A": "1"} and server.unsaid == ()


def test_a_key_projector_writes_in_one_kind_of_entry_only_is_kept_out_of_the_other():
    """Copilot CLI's bridge entry turns its tool cache off; projector's HTTP entry does not say
    that, so an HTTP entry of the user's that does is listed, not imported without it."""
    remote = server_of(_found("copilot", "t", {"type": "http", "url": "https://t.dev/mcp", "tools": ["*"], "disableToolCache": True}))
    assert remote.unsaid == ("disableToolCache",)
    local = server_of(_found("copilot", "fs", {"type": "local", "command": "fs-mcp", "tools": ["*"], "disableToolCache": True}))
    assert local.unsaid == ()  # the bridge that runs it says so too


def test_same_server_is_the_same_read_back_over_the_same_transport_and_nothing_secret():
    """What a restyle is: the client reads the same server from both spellings. A written-out
    token read from a variable, an SSE entry written as streamable HTTP, an entry the client skips
    for want of its type, another URL, the bridge for a command: real changes."""
    def same(client, before, after):
        return same_server(registry()[client], "s", before, after)

    assert same("cursor", {"type": "http", "url": "https://t.dev/mcp", "headers": {}}, {"url": "https://t.dev/mcp"})
    assert not same("qwen", {"type": "http", "url": "https://t.dev/mcp"}, {"httpUrl": "https://t.dev/mcp"}), "url: SSE, whatever type says"
    assert same("copilot", {"type": "http", "url": "https://t.dev/mcp", "headers": {}, "tools": ["*"], "source": "user"},
                {"type": "http", "url": "https://t.dev/mcp", "tools": ["*"]})
    assert not same("claude-code", {"type": "http", "url": "https://s.dev/mcp", "headers": {"Authorization": "Bearer sntrys_0123456789abcdef0123456789"}},
                    {"type": "http", "url": "https://s.dev/mcp", "headers": {"Authorization": "Bearer ${S_TOKEN}"}})
    assert not same("windsurf", {"type": "sse", "url": "http://127.0.0.1:5001/mcp/sse"}, {"serverUrl": "http://127.0.0.1:5001/mcp/sse"})
    assert not same("amp", {"url": "http://localhost:6/sse", "transport": "sse"}, {"url": "http://localhost:6/sse"})
    assert not same("claude-code", {"url": "https://c.dev/mcp"}, {"type": "http", "url": "https://c.dev/mcp"})
    assert not same("cursor", {"url": "https://t.dev/mcp?"}, {"url": "https://t.dev/mcp"})
    assert not same("claude-code", {"type": "stdio", "command": "npx", "args": ["-y", "fs"]},
                    {"type": "stdio", "command": "/bin/projector", "args": ["mcp", "--provider", "s"]})
    assert not same("cursor", {"url": "https://t.dev/mcp", "timeout": 5}, {"url": "https://t.dev/mcp"}), "what the model cannot say"


def test_a_vibe_entry_naming_its_token_variable_is_imported_with_it():
    """Mistral Vibe names an HTTP entry's token variable in api_key_env (MCPStaticAuth, sent as
    "Authorization: Bearer <token>"): the provider's token_env, and the entry projector's."""
    vibe = _found("vibe", "docs", {"name": "docs", "transport": "streamable-http", "url": "https://d.dev/mcp", "api_key_env": "DOCS"})
    server = server_of(vibe)
    assert server.spec == {"url": "https://d.dev/mcp", "token_env": "DOCS"} and server.unsaid == ()
    assert [c.name for c in gather([vibe], {}).claims] == ["docs"]
    kimi = server_of(_found("kimi", "docs", {"transport": "http", "url": "https://d.dev/mcp", "bearerTokenEnvVar": "DOCS"}))
    assert kimi.spec == server.spec and kimi.unsaid == (), "Kimi Code's key for it: bearerTokenEnvVar"
    other = server_of(_found("claude-code", "docs", {"type": "http", "url": "https://d.dev/mcp", "api_key_env": "DOCS"}))
    assert other.unsaid == ("api_key_env",), "a key another client names its token in is nothing Claude Code reads"


def test_a_reference_in_a_vibe_or_kimi_env_value_is_text_and_the_entry_stays_the_users():
    """Vibe hands a stdio server its env as written (registry.py: StdioServerParameters(env=srv.env)),
    and so does Kimi Code (client-stdio.ts mergeStdioEnv): ${Y} there is that text, which the
    model cannot say."""
    vibe = _found("vibe", "lint", {"name": "lint", "transport": "stdio", "command": "lint-mcp", "env": {"Y": "${Y}"}})
    assert server_of(vibe).unsaid == ("env Y (Mistral Vibe hands the server the text ${Y} as it is: it expands no variable, and reads one "
                                      "only through api_key_env; the model would read it as a variable)",)
    assert gather([vibe], {}).claims == ()
    kimi = _found("kimi", "lint", {"transport": "stdio", "command": "lint-mcp", "env": {"Y": "${Y}"}})
    assert server_of(kimi).unsaid == ("env Y (Kimi Code hands the server the text ${Y} as it is: it expands no variable, and reads one "
                                      "only through bearerTokenEnvVar; the model would read it as a variable)",)


def _vibe(name: str, auth) -> Found:
    return _found("vibe", name, {"name": name, "transport": "streamable-http", "url": f"https://{name}.dev/mcp", "auth": auth})


def test_a_vibe_auth_table_signing_in_with_oauth_becomes_the_providers_oauth_settings():
    """Vibe's [mcp_servers.auth] (vibe/core/config/models.py MCPOAuth, told apart by type =
    "oauth"): Vibe signs itself in; in the model, projector does, with the same settings."""
    linear = _vibe("linear", {"type": "oauth", "scopes": ["read", "write"]})
    assert server_of(linear).spec == {"url": "https://linear.dev/mcp", "oauth": {"scopes": ["read", "write"]}}
    assert server_of(linear).unsaid == ()
    assert server_of(_vibe("d", {"type": "oauth", "scopes": []})).spec["oauth"] is True, "[]: the server's own scopes, as the model's default"
    pre = server_of(_vibe("d", {"type": "oauth", "scopes": [], "client_id": "vibe-app", "client_metadata_url": "https://o.dev/c.json"}))
    assert pre.spec["oauth"] == {"client_id": "vibe-app", "client_metadata_url": "https://o.dev/c.json", "redirect_port": 47823}, \
        "a pre-registered client redirects where Vibe sends it: 47823 unless said"
    assert server_of(_vibe("d", {"type": "oauth", "scopes": [], "redirect_port": 50000})).spec["oauth"] == {"redirect_port": 50000}
    imported = gather([linear], {})
    assert imported.providers == {"linear": {"url": "https://linear.dev/mcp", "oauth": {"scopes": ["read", "write"]}}}
    assert [c.name for c in imported.claims] == ["linear"], "its sign-in is said: the entry becomes projector's"
    assert ("provider linear signs in with OAuth, as its entry in Mistral Vibe did: once the next sync has written projector's "
            "entries, run `projector login linear` (once, for every client)") in imported.report


def test_a_vibe_auth_table_the_model_cannot_say_is_listed_and_its_static_form_read_as_the_entrys_own_keys():
    refused = server_of(_vibe("d", {"type": "oauth", "scopes": [], "redirect_port": 80}))
    assert refused == ("its auth table's OAuth settings are not ones the model takes (oauth.redirect_port: 80 is less than the minimum "
                       "of 1024); left as it is (write the provider's oauth: settings by hand)")
    static = server_of(_vibe("d", {"type": "static", "api_key_env": "D_TOKEN"}))
    assert static.spec == {"url": "https://d.dev/mcp", "token_env": "D_TOKEN"} and static.unsaid == ()
    other_header = server_of(_vibe("d", {"type": "static", "api_key_env": "D_TOKEN", "api_key_header": "X-Api-Key"}))
    assert other_header.unsaid == ("api_key_header",), "the token in another header: not the model's bearer token"
    assert server_of(_vibe("d", {"scopes": []})).unsaid == ("auth",), "no type: a table Vibe refuses, nothing the model says"
    assert server_of(_vibe("d", {"type": "oauth", "scopes": [], "extra": 1})).unsaid == ("auth.extra",)


def test_an_oauth_entry_gives_its_sign_in_to_the_provider_other_clients_reach_without_one():
    """Claude Code signs in by discovery and writes nothing of it: the same server's Vibe entry says how."""
    claude = _found("claude-code", "linear", {"type": "http", "url": "https://linear.dev/mcp"})
    imported = gather([claude, _vibe("linear", {"type": "oauth", "scopes": ["read"]})], {})
    assert imported.providers == {"linear": {"url": "https://linear.dev/mcp", "oauth": {"scopes": ["read"]}}}


def test_a_url_narrowed_by_kbs_becomes_the_providers_url_and_its_default_set():
    """projector's own ?kbs= (a lost ledger, or written by hand): the KBs that entry shows
    everywhere, which is what a provider's default says where no binding narrows it."""
    docs = _found("cursor", "docs", {"url": "https://d.dev/mcp?team=7&kbs=api-a,handbook"})
    assert server_of(docs).spec == {"url": "https://d.dev/mcp?team=7", "default": ["api-a", "handbook"]}
    imported = gather([docs], {})
    assert imported.providers == {"docs": {"url": "https://d.dev/mcp?team=7", "default": ["api-a", "handbook"]}}
    assert [c.name for c in imported.claims] == ["docs"] and not any(line.startswith("not") for line in imported.report)
    assert server_of(_found("cursor", "docs", {"url": "https://d.dev/mcp?kbs=a%2Cb"})).spec["default"] == ["a", "b"], "as the server decodes it"
    every = server_of(_found("cursor", "docs", {"url": "https://d.dev/mcp?kbs="}))
    assert every.spec == {"url": "https://d.dev/mcp"}, "an empty kbs= is every KB to the server: no default"
    assert "which the server reads as every KB" in every.notes[0]
    assert server_of(_found("cursor", "docs", {"url": "https://d.dev/mcp?kbs=a+b"})).startswith(
        "its URL's kbs=a+b names KBs the model cannot (default[0]: \"a b\" is not a usable KB name")
    assert same_server(registry()["cursor"], "docs", {"url": "https://d.dev/mcp?kbs=a,b"}, {"url": "https://d.dev/mcp?kbs=a,b"})
    assert not same_server(registry()["cursor"], "docs", {"url": "https://d.dev/mcp?kbs=a,b"}, {"url": "https://d.dev/mcp?kbs=a"})


def test_an_entry_showing_other_kbs_than_the_providers_default_stays_the_users_said_what_to_write():
    cursor = _found("cursor", "docs", {"url": "https://d.dev/mcp?kbs=a,b"})
    codex = _found("codex", "docs", {"url": "https://d.dev/mcp?kbs=c"})
    imported = gather([cursor, codex], {})
    assert imported.providers == {"docs": {"url": "https://d.dev/mcp", "default": ["c"]}}
    assert [c.client.id for c in imported.claims] == ["codex"], "the other set is never given to cursor's entry"
    assert ("not imported: docs in ~/f: it shows the KBs a, b everywhere, and provider docs shows the KBs c where no binding says "
            "otherwise: a provider has one default set; left as it is, yours (bind each folder that should see them "
            "(`projector bind DIR --provider docs --kb a --kb b`))") in imported.report
    model = gather([cursor], {"docs": ("url", "https://d.dev/mcp")}, {"docs": None})
    assert model.claims == () and "provider docs shows every KB" in model.report[0], "the model's provider shows every KB"
    plain = gather([_found("cursor", "docs", {"url": "https://d.dev/mcp"})], {"docs": ("url", "https://d.dev/mcp")}, {"docs": ["a"]})
    assert plain.claims == () and "drop `default:` from provider docs" in plain.report[0]
    assert gather([cursor], {"docs": ("url", "https://d.dev/mcp")}, {"docs": ["a", "b"]}).claims[0].name == "docs"


def test_a_folders_entry_narrowed_by_kbs_becomes_that_folders_binding():
    folder = _found("claude-code", "docs", {"type": "http", "url": "https://d.dev/mcp?kbs=api-a"}, "/w/a")
    imported = gather([folder], {})
    assert imported.providers == {"docs": {"url": "https://d.dev/mcp", "enabled": False}}
    assert imported.bindings == {"/w/a": {"docs": {"enabled": True, "kbs": ["api-a"]}}}
    both = gather([_found("cursor", "docs", {"url": "https://d.dev/mcp?kbs=handbook"}), folder], {})
    assert both.providers == {"docs": {"url": "https://d.dev/mcp", "default": ["handbook"]}}
    assert both.bindings == {"/w/a": {"docs": {"kbs": ["api-a"]}}}


def test_ordinary_long_values_stay_as_written_and_a_token_under_any_name_becomes_a_variable():
    """One notion of a token (core.checking.looks_like_token): a Node option, a commit id after a
    flag that says so, or a digest under a name that says so, in env or args, is no secret; a token
    under a name that says nothing still is."""
    sha = "2c20141b13bec5a64cd2874d8e2df011430d5b1a70e4f5425aa10d01743311a8"  # ../shared/corpus/codex/divkix-dotfiles.toml
    server = server_of(_found("claude-code", "ts", {"command": "node", "args": ["--max-old-space-size=4096", "--commit", "c7c2448b8153e7375980ce439d50d7228552e1ac"],
                                                    "env": {"NODE_OPTIONS": "--max-old-space-size=4096", "TRUSTED_CLIENT_SHA256S": sha,
                                                            "OTHER": "xoxa-2-1234567890-abcdefghij"}}))
    assert server.spec["args"] == ["--max-old-space-size=4096", "--commit", "c7c2448b8153e7375980ce439d50d7228552e1ac"]
    assert server.spec["env"] == {"NODE_OPTIONS": "--max-old-space-size=4096", "TRUSTED_CLIENT_SHA256S": sha, "OTHER": "${OTHER}"}
    assert server.secrets == ("OTHER",)


GITHUB_40_HEX, TODOIST, EXA_UUID = "3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39", "0123456789abcdef0123456789abcdef01234567", "8e2f6c1a-3b4d-4e5f-9a0b-1c2d3e4f5a6b"


@pytest.mark.parametrize("secret", [GITHUB_40_HEX, TODOIST, EXA_UUID, EXA_UUID.upper()])
def test_a_hex_or_uuid_secret_under_a_plain_name_or_in_args_keeps_the_entry_out_of_the_model(secret):
    """A value of 32 or more hex digits or a UUID, which looks_like_token leaves alone (the model's
    check must not refuse an id), may be a secret (an old GitHub token, Todoist's, an Exa key): the
    entry stays the user's, said, and the value is never copied into the model nor said back."""
    for value in ({"command": "todoist-mcp", "args": [secret]}, {"command": "todoist-mcp", "args": ["--project", secret]},
                  {"command": "todoist-mcp", "args": [f"--workspace={secret}"]}, {"command": "exa-mcp", "env": {"EXA": secret}},
                  {"url": f"https://d.dev/mcp?workspace={secret}"}):
        imported = gather([_found("claude-code", "todo", value)], {})
        assert imported.providers == {} and imported.claims == (), value
        assert len(imported.report) == 1 and "left as it is" in imported.report[0] and secret not in imported.report[0], imported.report
    said = gather([_found("claude-code", "todo", {"command": "exa-mcp", "env": {"EXA": secret}})], {}).report[0]
    assert "env EXA may hold a secret (a UUID or 32 or more hex digits" in said and '"${EXA}"' in said


def test_names_are_the_models_whole_names():
    """The model's name rule, matched whole: a name ending in a newline is no provider's name, and
    a variable a client passes by a name the model cannot take is said, not dropped."""
    assert provider_name("docs\n") == "docs"
    assert gather([_found("cursor", "docs\n", {"url": "https://d.dev/mcp"})], {}).providers == {"docs": {"url": "https://d.dev/mcp"}}
    codex = server_of(_found("codex", "lint", {"command": "lint-mcp", "env_vars": ["LINT_HOME", "my-var"]}))
    assert codex.spec["env"] == {"LINT_HOME": "${LINT_HOME}"}
    assert codex.unsaid == ("env_vars 'my-var' (not a variable name the model takes)",)
    claude = server_of(_found("claude-code", "lint", {"command": "lint-mcp", "env": {"LEVEL": "debug", "my-var": "x"}}))
    assert claude.spec["env"] == {"LEVEL": "debug"} and claude.unsaid == ("env 'my-var' (not a variable name the model takes)",)


def test_a_provider_whose_default_shows_no_kb_is_said_so_when_an_entry_shows_every_kb():
    """The model's provider says `default: []` (no KB where no binding turns some on); an entry
    without kbs= shows every KB: the line says "no KB", never an empty list of names."""
    plain = gather([_found("cursor", "docs", {"url": "https://d.dev/mcp"})], {"docs": ("url", "https://d.dev/mcp")}, {"docs": []})
    assert plain.claims == ()
    assert "it shows every KB everywhere, and provider docs shows no KB where no binding says otherwise" in plain.report[0], plain.report


def test_an_entry_with_a_token_gives_it_to_a_provider_new_here_and_stays_the_users_beside_the_models_without_one():
    """The same server without auth in Claude Code (first in order) and with a bearer token in
    Cursor: the provider, written by nothing yet, sends the token, so Cursor's entry keeps it
    (it was claimed and rewritten without it); against the model's provider without auth, an
    entry with a token or signing in with OAuth stays the user's, said."""
    claude = _found("claude-code", "docs", {"type": "http", "url": "https://docs.dev/mcp"})
    cursor = _found("cursor", "docs", {"url": "https://docs.dev/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}})
    imported = gather([cursor, claude], {})
    assert imported.providers == {"docs": {"url": "https://docs.dev/mcp", "token_env": "DOCS_TOKEN"}}
    assert [c.client.id for c in imported.claims] == ["claude-code", "cursor"]
    assert "provider docs sends the token from $DOCS_TOKEN, as docs in ~/f does: its entries that sent none will send it too" in imported.report
    for entry in (cursor, _vibe("docs", {"type": "oauth", "scopes": ["read"]})):
        kept = gather([entry], {"docs": ("url", "https://docs.dev/mcp")}, {"docs": None}, {"docs": None})
        assert kept.claims == () and kept.providers == {}
        assert kept.report[0].startswith("not imported: docs in ~/f: it ") and "and provider docs does neither" in kept.report[0], kept.report


def test_an_entry_reading_its_token_from_another_variable_than_its_provider_stays_the_users():
    """The same server with its token from $DOCS_KEY in Claude Code (first in order) and from
    $DOCS_TOKEN in Cursor: claimed, Cursor's entry would read $DOCS_KEY, which Cursor may not be
    given; it stays the user's, said with what to write there to unify them. The same against the
    model's provider, and for a token written out (its made-up variable is no one's)."""
    claude = _found("claude-code", "docs", {"type": "http", "url": "https://docs.dev/mcp", "headers": {"Authorization": "Bearer ${DOCS_KEY}"}})
    cursor = _found("cursor", "docs", {"url": "https://docs.dev/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}})
    imported = gather([cursor, claude], {})
    assert imported.providers == {"docs": {"url": "https://docs.dev/mcp", "token_env": "DOCS_KEY"}}
    assert [c.client.id for c in imported.claims] == ["claude-code"]
    assert ("not imported: docs in ~/f: it sends its token from $DOCS_TOKEN, and provider docs sends it from $DOCS_KEY: "
            "taken, this entry would read $DOCS_KEY, which Cursor may not be given; left as it is, yours (to unify them, "
            "write Authorization: Bearer ${env:DOCS_KEY} in it in place of $DOCS_TOKEN, then import again)") in imported.report, imported.report
    kept = gather([cursor], {"docs": ("url", "https://docs.dev/mcp")}, {"docs": None}, {"docs": {"token_env": "DOCS_KEY"}})
    assert kept.claims == () and "and provider docs sends it from $DOCS_KEY" in kept.report[0], kept.report
    same = gather([cursor], {"docs": ("url", "https://docs.dev/mcp")}, {"docs": None}, {"docs": {"token_env": "DOCS_TOKEN"}})
    assert [c.client.id for c in same.claims] == ["cursor"]
    codex = _found("codex", "docs", {"url": "https://docs.dev/mcp", "http_headers": {"Authorization": "Bearer abc123def456ghi789jkl012mno"}})
    written = gather([claude, codex], {})
    assert [c.client.id for c in written.claims] == ["claude-code"]
    line = next(line for line in written.report if line.startswith("not imported: docs"))
    assert line.startswith("not imported: docs in ~/f: it sends a token written in it, and provider docs sends it from $DOCS_KEY")
    assert "bearer_token_env_var: DOCS_KEY in it in place of the token," in line and "abc123def456" not in "\n".join(written.report)
    assert not any("set $DOCS_TOKEN" in line for line in written.report), "the variable made up for it is set by no one"


def test_report_lines_show_a_name_with_a_newline_or_a_control_character_escaped():
    """An entry's name is the user's text: a newline in it would break a report line in two (and
    could forge one), an escape sequence would reach the terminal; an empty one would vanish."""
    found = [_found("cursor", "docs\n", {"url": "https://d.dev/mcp"}), _found("cursor", "\x1b[2Kred", {"url": "https://r.dev/mcp", "disabled": True}),
             _found("cursor", "", {"url": "https://e.dev/mcp", "disabled": True}), _found("cursor", "文档", {"url": "https://w.dev/mcp", "disabled": True})]
    report = gather(found, {}).report
    assert not [line for line in report if not line.isprintable()], report
    assert 'docs\\n" in ~/f becomes provider docs' in "\n".join(report)
    assert 'not imported: "\\u001b[2Kred" in ~/f: turned off' in "\n".join(report)
    assert 'not imported: "" in ~/f: turned off' in "\n".join(report)
    assert "not imported: 文档 in ~/f: turned off" in "\n".join(report), "a name in another script is printable: as it is"
