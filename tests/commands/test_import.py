"""`projector import`: the entries the clients already have become providers of the model (issue
27, story 1), no secret written in an entry reaches the model, and `projector remove` later gives
every file back as it was before the import."""

from __future__ import annotations

import json
import tomllib

import pytest

from models import USERS_CODEX

CLAUDE = """{
  "numStartups": 7,
  "mcpServers": {
    "fs": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me"],
           "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_0123456789abcdefABCDEF0123456789", "LOG_LEVEL": "debug"}},
    "sentry": { "type": "http",  "url": "https://mcp.sentry.dev/mcp", "headers": {"Authorization": "Bearer sntrys_0123456789abcdef0123456789"} }
  }
}
"""
CODEX = USERS_CODEX + """bearer_token_env_var = "SENTRY_TOKEN"

[mcp_servers.docs]
url = "https://docs.example.com/mcp"
startup_timeout_sec = 30
"""
MODEL = """\
# my model: keep this comment
version: 1
clients: [claude-code, codex]  # only these two
providers:
  web:                           # the web search
    url: https://web.example.com/mcp
"""
SECRETS = ("ghp_0123456789abcdefABCDEF0123456789", "sntrys_0123456789abcdef0123456789")


def _imported(sandbox, relative: str, text: str, client: str):
    """``text`` as a client's file (``relative`` to HOME), a model of that client alone, and
    `projector import` run on them: the file, the model, the import's result."""
    sandbox.install_projector()
    path = sandbox.file(relative, text)
    config = sandbox.model(f"version: 1\nclients: [{client}]\nproviders: {{}}\n")
    imported = sandbox.run("import", config=config)
    assert imported.returncode == 0, imported.stderr
    return path, config, imported


def _given_back(sandbox, relative: str, text: str, client: str, gone: str) -> str:
    """``text`` as a client's file, imported, synced (``gone``, an entry's text, is out of it then)
    and removed: the file's text at the end."""
    path = sandbox.file(relative, text)
    config = sandbox.model(f"version: 1\nclients: [{client}]\nproviders: {{}}\n")
    assert sandbox.run("import", config=config).returncode == 0
    assert sandbox.run("sync", config=config).returncode == 0 and gone not in path.read_text()
    assert sandbox.run("remove", config=config).returncode == 0
    return path.read_text()


def _imported_beside(sandbox, kept: tuple[str, str, str], other: tuple[str, str, str]):
    """Two clients' files (client, relative path, text), ``kept``'s entry meant to stay the user's
    beside the provider ``other``'s becomes, imported: ``kept``'s path, the model, the run."""
    sandbox.install_projector()
    path = sandbox.file(kept[1], kept[2])
    sandbox.file(other[1], other[2])
    config = sandbox.model(f"version: 1\nclients: [{kept[0]}, {other[0]}]\nproviders: {{}}\n")
    imported = sandbox.run("import", config=config)
    assert imported.returncode == 0, imported.stderr
    return path, config, imported


def _files(sandbox):
    return {".claude.json": sandbox.file(".claude.json", CLAUDE), ".codex/config.toml": sandbox.file(".codex/config.toml", CODEX)}


def test_import_brings_each_server_once_names_the_secrets_and_remove_gives_everything_back(sandbox):
    sandbox.install_projector()
    files = _files(sandbox)
    config = sandbox.model(MODEL)

    dry = sandbox.run("import", "--dry-run", config=config)
    assert dry.returncode == 0, dry.stderr
    assert config.read_text() == MODEL, "a dry run writes nothing"
    assert "+  sentry:\n+    url: https://mcp.sentry.dev/mcp\n+    token_env: SENTRY_TOKEN\n" in dry.stdout

    imported = sandbox.run("import", config=config)
    assert imported.returncode == 0, imported.stderr
    text = config.read_text()
    assert text.startswith(MODEL), "the model's comments and order are kept; providers are added after"
    assert not any(secret in text for secret in SECRETS), "no secret value in the model"
    assert text[len(MODEL):] == (
        "  context7:\n    command: npx\n    args: [-y, '@upstash/context7-mcp']\n"
        "  docs:\n    url: https://docs.example.com/mcp\n"
        "  fs:\n    command: npx\n    args: [-y, '@modelcontextprotocol/server-filesystem', /home/me]\n"
        "    env: {GITHUB_PERSONAL_ACCESS_TOKEN: '${GITHUB_PERSONAL_ACCESS_TOKEN}', LOG_LEVEL: debug}\n"
        "  sentry:\n    url: https://mcp.sentry.dev/mcp\n    token_env: SENTRY_TOKEN\n")
    report = imported.stdout.splitlines()
    assert "provider sentry: from Claude Code, Codex CLI" in report, "one provider for the same server in two clients"
    assert "set $GITHUB_PERSONAL_ACCESS_TOKEN: its value was written in ~/.claude.json; the model names the variable only" in report
    assert "set $SENTRY_TOKEN: its value was written in ~/.claude.json; the model names the variable only" in report
    assert ("not in the model: docs in ~/.codex/config.toml: startup_timeout_sec; that entry stays as it is, yours "
            "(projector's entry would not have it)") in report, "what the model cannot say is listed"
    assert not any(secret in imported.stdout + imported.stderr for secret in SECRETS)

    synced = sandbox.run("sync", config=config)
    assert synced.returncode == 0, synced.stderr
    assert 'entry "docs" was not written by projector; left as it is' in synced.stderr
    claude = json.loads(files[".claude.json"].read_text())["mcpServers"]
    assert claude["fs"]["args"][:3] == ["mcp", "--provider", "fs"], "a local server runs through the bridge"
    assert claude["sentry"]["headers"] == {"Authorization": "Bearer ${SENTRY_TOKEN}"}
    assert sandbox.run("diff", config=config).returncode == 0

    removed = sandbox.run("remove", config=config)
    assert removed.returncode == 0, removed.stderr
    assert {name: path.read_text() for name, path in files.items()} == {".claude.json": CLAUDE, ".codex/config.toml": CODEX}


def test_import_dry_run_marks_a_model_s_last_line_without_its_newline_as_diff_does(sandbox):
    """The model's last line loses nothing but gains its newline: the diff marks the old line
    as git does, or it would show the same line removed and added."""
    _files(sandbox)
    config = sandbox.model(MODEL.rstrip("\n"))
    dry = sandbox.run("import", "--dry-run", config=config).stdout
    assert "-    url: https://web.example.com/mcp\n\\ No newline at end of file\n+    url: https://web.example.com/mcp\n" in dry



def test_the_same_name_for_another_server_is_kept_apart_and_folder_entries_become_bindings(sandbox):
    claude = {"mcpServers": {"db": {"command": "pg-mcp", "args": ["--prod"]}},
              "projects": {str(sandbox.home / "work" / "a"): {"mcpServers": {"lint": {"command": "lint-mcp"}}}}}
    sandbox.file(".claude.json", json.dumps(claude, indent=2) + "\n")
    sandbox.file(".codex/config.toml", '[mcp_servers.db]\ncommand = "pg-mcp"\nargs = ["--dev"]\n')
    config = sandbox.model("version: 1\nclients: [claude-code, codex]\nproviders: {}\n")
    imported = sandbox.run("import", config=config)
    assert imported.returncode == 0, imported.stderr
    assert "db in ~/.codex/config.toml becomes provider db-codex (another server has that name)" in imported.stdout
    assert config.read_text() == (
        "version: 1\nclients: [claude-code, codex]\nproviders:\n"
        "  db:\n    command: pg-mcp\n    args: [--prod]\n"
        "  db-codex:\n    command: pg-mcp\n    args: [--dev]\n"
        "  lint:\n    command: lint-mcp\n    enabled: false\n"
        "bindings:\n  ~/work/a:\n    lint: {enabled: true}\n")


def test_import_without_a_model_starts_from_the_starter(sandbox):
    sandbox.file(".codex/config.toml", '[mcp_servers.docs]\nurl = "https://docs.example.com/mcp"\n')
    sandbox.file(".codex/auth.json", "{}")
    imported = sandbox.run("import")
    assert imported.returncode == 0, imported.stderr
    model = (sandbox.home / ".config/projector/projector.yaml").read_text()
    assert model.startswith("# yaml-language-server: $schema=/") and "{schema}" not in model  # the starter as init writes it
    assert "\n# projector model:" in model and "  docs:\n    url: https://docs.example.com/mcp\n" in model
    again = sandbox.run("import")
    assert (again.returncode, again.stdout) == (0, "nothing new to import: every entry is a provider of the model already\n")
    assert (sandbox.home / ".config/projector/projector.yaml").read_text() == model


def test_first_contact_init_offers_import_and_status_and_doctor_count_what_projector_does_not_manage(sandbox):
    _files(sandbox)
    init = sandbox.run("init")
    assert init.returncode == 0, init.stderr
    assert ("found MCP entries in your clients (Claude Code 2, Codex CLI 3): `projector import` brings them into this model "
            "(`projector import --dry-run` shows how)") in init.stdout.splitlines()
    config = sandbox.model(MODEL)
    status = sandbox.run("status", config=config)
    assert "entries projector does not manage: Claude Code 2, Codex CLI 3 (`projector import` brings them into the model)" in status.stdout
    doctor = sandbox.run("doctor", config=config)
    assert ("note     Codex CLI: 3 entries projector does not manage (context7, sentry, docs): `projector import` brings them into "
            "the model") in doctor.stdout.splitlines()
    assert sandbox.run("import", config=config).returncode == 0
    after = [line for line in sandbox.run("doctor", config=config).stdout.splitlines() if "does not manage" in line]
    assert after == ["note     Codex CLI: 1 entry projector does not manage (docs): `projector import` brings them into the model"]


def test_the_same_server_under_another_name_is_one_provider_whose_entry_stands_in_for_it(sandbox):
    sandbox.install_projector()
    claude = '{\n  "mcpServers": {\n    "sentry": {"type": "http", "url": "https://mcp.sentry.dev/mcp"}\n  }\n}\n'
    codex = '[mcp_servers.sentry-prod]\nurl = "https://mcp.sentry.dev/mcp?org=me"\n\n[mcp_servers."my.tool"]\ncommand = "tool-mcp"\n'
    files = {".claude.json": sandbox.file(".claude.json", claude), ".codex/config.toml": sandbox.file(".codex/config.toml", codex)}
    config = sandbox.model("version: 1\nclients: [claude-code, codex]\nproviders: {}\n")
    imported = sandbox.run("import", config=config)
    assert imported.returncode == 0, imported.stderr
    assert ("sentry-prod in ~/.codex/config.toml: the same server as provider sentry, whose entry stands in for it there "
            "(`projector remove` puts it back)") in imported.stdout.splitlines()
    assert "my.tool in ~/.codex/config.toml becomes provider my-tool" in imported.stdout.splitlines()
    assert config.read_text().count("url: https://mcp.sentry.dev/mcp") == 1, "one provider for one server"
    assert sandbox.run("sync", config=config).returncode == 0
    text = files[".codex/config.toml"].read_text()
    assert "sentry-prod" not in text and "[mcp_servers.sentry]" in text and '"my.tool"' not in text and "[mcp_servers.my-tool]" in text
    assert sandbox.run("diff", config=config).returncode == 0, "a second sync changes nothing"
    assert sandbox.run("remove", config=config).returncode == 0
    assert {name: path.read_text() for name, path in files.items()} == {".claude.json": claude, ".codex/config.toml": codex}


def test_an_entry_taken_out_under_its_own_name_comes_back_byte_for_byte(sandbox):
    """The only entry of its object, then one among others: back in its place, in its own spacing."""
    sandbox.install_projector()
    alone = '{\n    "mcpServers": {\n      "my.db":   {"command": "db-mcp"}\n    }\n}\n'
    among = '{\n  "mcpServers": {\n    "a": {"command": "a"},\n    "my.db":   {"command": "db-mcp"},\n    "z": {"command": "z"}\n  }\n}\n'
    for text in (alone, among):
        assert _given_back(sandbox, ".claude.json", text, "claude-code", '"my.db"') == text


def test_a_second_import_brings_in_nothing_of_projectors_own(sandbox):
    """After a sync, the clients hold projector's own entries (a local server as the bridge): a
    second import took each bridge for a new server (fs-claude-code running `projector mcp
    --provider fs`)."""
    sandbox.install_projector()
    files = _files(sandbox)
    config = sandbox.model(MODEL)
    assert sandbox.run("import", config=config).returncode == 0
    assert sandbox.run("sync", config=config).returncode == 0
    model = config.read_text()

    again = sandbox.run("import", config=config)
    assert again.returncode == 0, again.stderr
    assert config.read_text() == model
    assert "nothing new to import" in again.stdout or "-claude-code" not in again.stdout
    assert sandbox.run("remove", config=config).returncode == 0
    assert {name: path.read_text() for name, path in files.items()} == {".claude.json": CLAUDE, ".codex/config.toml": CODEX}


def test_an_entry_taken_out_for_its_stand_in_is_kept_while_the_models_own_entry_holds_its_name(sandbox):
    """The user's Codex fs is another server than the model's fs: import makes it fs-codex, whose
    entry stands in for it, and the model's fs then takes the name. Dropping fs-codex found the
    name taken and forgot the user's entry; remove then left the file without it."""
    sandbox.install_projector()
    mine = '# mine\n[mcp_servers.fs]\ncommand = "npx"\nargs = ["-y", "my-fs"]\n'
    codex = sandbox.file(".codex/config.toml", mine)
    model = "version: 1\nclients: [codex]\nproviders:\n  fs:\n    url: https://fs.example.com/mcp\n"
    config = sandbox.model(model)
    assert sandbox.run("import", config=config).returncode == 0
    assert "fs-codex" in config.read_text()
    assert sandbox.run("sync", config=config).returncode == 0
    config.write_text(model)  # fs-codex dropped: the model's fs is written under the name
    assert sandbox.run("sync", config=config).returncode == 0
    assert "https://fs.example.com/mcp" in codex.read_text()

    removed = sandbox.run("remove", config=config)
    assert removed.returncode == 0, removed.stderr
    back = codex.read_text()
    assert tomllib.loads(back) == tomllib.loads(mine) and back.startswith("# mine\n")
    assert back == mine, "its own text, byte for byte"


def test_a_file_with_a_byte_order_mark_is_imported_and_given_back_with_it(sandbox):
    """sync reads a byte-order mark aside (as it does for every client); import read it as text,
    and a client's strict JSON did not parse."""
    sandbox.install_projector()
    mine = '\ufeff{\r\n  "mcpServers": {\r\n    "fs": {"command": "npx", "args": ["-y", "my-fs"]}\r\n  }\r\n}\r\n'.encode()
    claude = sandbox.file(".claude.json")
    claude.write_bytes(mine)
    config = sandbox.model("version: 1\nclients: [claude-code]\nproviders: {}\n")
    imported = sandbox.run("import", config=config)
    assert imported.returncode == 0, imported.stderr
    assert "my-fs" in config.read_text()
    assert sandbox.run("sync", config=config).returncode == 0
    assert b"--provider" in claude.read_bytes()
    assert sandbox.run("remove", config=config).returncode == 0
    assert claude.read_bytes() == mine


def test_the_name_a_stand_in_frees_is_written_by_the_same_sync(sandbox):
    """The sync after the import warned that the user's fs was 'left as it is', took it out
    for fs-codex, and did not write the model's fs in its place: status said pending, yet the
    next sync said nothing to do."""
    sandbox.install_projector()
    codex = sandbox.file(".codex/config.toml", '# mine\n[mcp_servers.fs]\ncommand = "npx"\nargs = ["-y", "my-fs"]\n')
    config = sandbox.model("version: 1\nclients: [codex]\nproviders:\n  fs:\n    url: https://fs.example.com/mcp\n")
    assert sandbox.run("import", config=config).returncode == 0
    synced = sandbox.run("sync", config=config)
    assert synced.returncode == 0 and "left as it is" not in synced.stderr, synced.stderr
    assert tomllib.loads(codex.read_text())["mcp_servers"]["fs"] == {"url": "https://fs.example.com/mcp"}
    assert sandbox.run("status", config=config).returncode == 0


def test_a_codex_header_that_names_a_variable_is_said_to_send_it_as_text_and_sync_makes_it_the_variable(sandbox):
    """Codex sends http_headers as written: "Bearer ${SENTRY_TOKEN}" is that text, not the token.
    Imported as token_env (what the user meant), said so; sync writes bearer_token_env_var; remove gives it back."""
    codex = '[mcp_servers.sentry]\nurl = "https://mcp.sentry.dev/mcp"\nhttp_headers = { Authorization = "Bearer ${SENTRY_TOKEN}" }\n'
    path, config, imported = _imported(sandbox, ".codex/config.toml", codex, "codex")
    assert ("sentry in ~/.codex/config.toml: this entry sends the text ${SENTRY_TOKEN} literally; Codex CLI reads variables only "
            "through bearer_token_env_var, env_http_headers or env_vars; imported as token_env SENTRY_TOKEN, which is what it plainly meant "
            "(the next sync's entry reads the variable: set $SENTRY_TOKEN)") in imported.stdout.splitlines()
    assert "  sentry:\n    url: https://mcp.sentry.dev/mcp\n    token_env: SENTRY_TOKEN\n" in config.read_text()
    assert sandbox.run("sync", config=config).returncode == 0
    text = path.read_text()
    assert 'bearer_token_env_var = "SENTRY_TOKEN"' in text and "http_headers" not in text
    assert sandbox.run("remove", config=config).returncode == 0
    assert path.read_text() == codex


KEYS_IN_URLS = {  # where the key stands: the key, the entry's URL around it, what import says
    "query": ("0123abcd-4567-efab-89cd-0123456789ab", "https://mcp.exa.ai/mcp?exaApiKey={}&tools=web_search_exa",
              "its URL's query carries a secret (exaApiKey=...)"),
    "path": ("sk-ak-Qm3xT9vLp2Rk7Wn4Yb8Zc1Hd", "https://actions.zapier.com/mcp/{}/sse",
             "its URL's path carries what may be a secret (https://actions.zapier.com/mcp/.../sse: "),
}


@pytest.mark.parametrize("where", sorted(KEYS_IN_URLS))
def test_an_entry_with_a_key_in_its_url_stays_out_of_the_model_and_is_listed(sandbox, where):
    """A key in the URL's query or path (a URL names no variable): the entry is listed, the key
    repeated nowhere, and after a sync the entry is as it was."""
    key, url, said = KEYS_IN_URLS[where]
    claude = '{\n  "mcpServers": {\n    "exa": {"type": "http", "url": "' + url.format(key) + '"}\n  }\n}\n'
    path = sandbox.file(".claude.json", claude)
    config = sandbox.model("version: 1\nclients: [claude-code]\nproviders: {}\n")
    imported = sandbox.run("import", config=config)
    assert imported.returncode == 0, imported.stderr
    assert f"not imported: exa in ~/.claude.json: {said}" in imported.stdout, imported.stdout
    assert key not in config.read_text() + imported.stdout + imported.stderr
    assert sandbox.run("sync", config=config).returncode == 0
    assert path.read_text() == claude


def test_an_entry_reading_its_token_from_another_variable_stays_the_users_and_keeps_it(sandbox):
    """Claude Code reads the server's token from $DOCS_KEY, Cursor from $DOCS_TOKEN: the provider
    takes Claude Code's; Cursor's entry is said and, after a sync, still reads $DOCS_TOKEN."""
    cursor = '{\n  "mcpServers": {\n    "docs": {"url": "https://docs.dev/mcp", "headers": {"Authorization": "Bearer ${env:DOCS_TOKEN}"}}\n  }\n}\n'
    path, config, imported = _imported_beside(sandbox, ("cursor", ".cursor/mcp.json", cursor), (
        "claude-code", ".claude.json", '{"mcpServers": {"docs": {"type": "http", "url": "https://docs.dev/mcp", '
                                       '"headers": {"Authorization": "Bearer ${DOCS_KEY}"}}}}\n'))
    assert "  docs:\n    url: https://docs.dev/mcp\n    token_env: DOCS_KEY\n" in config.read_text()
    assert ("not imported: docs in ~/.cursor/mcp.json: it sends its token from $DOCS_TOKEN, and provider docs sends it "
            "from $DOCS_KEY") in imported.stdout, imported.stdout
    assert sandbox.run("sync", config=config).returncode == 0
    assert path.read_text() == cursor


def test_after_an_import_the_diff_tells_a_restyle_from_a_real_change(sandbox):
    """A sync after an import may write an entry in projector's own spelling: diff, diff --stat,
    diff --json, sync --dry-run and sync say so per entry, and a real change stays a change."""
    sandbox.install_projector()
    cursor = '{\n  "mcpServers": {\n    "temporal-docs": {"type": "http", "url": "https://temporal.mcp.kapa.ai", "headers": {}}\n  }\n}\n'
    claude = ('{\n  "mcpServers": {\n    "feed": {"type": "sse", "url": "https://feed.example.com/sse"},\n'
              '    "sentry": {"type": "http", "url": "https://mcp.sentry.dev/mcp", "headers": {"Authorization": "Bearer sntrys_0123456789abcdef0123456789"}}\n'
              '  }\n}\n')
    files = {".cursor/mcp.json": sandbox.file(".cursor/mcp.json", cursor), ".claude.json": sandbox.file(".claude.json", claude)}
    config = sandbox.model("version: 1\nclients: [cursor, claude-code]\nproviders: {}\n")
    imported = sandbox.run("import", config=config)
    assert ("not in the model: feed in ~/.claude.json: transport SSE (projector's entry would speak streamable HTTP); that entry "
            "stays as it is, yours (projector's entry would not have it)") in imported.stdout.splitlines()

    said = ("restyles temporal-docs in ~/.cursor/mcp.json (the same server, in projector's spelling; "
            "`projector remove` gives back your text)")
    diff = sandbox.run("diff", config=config)
    assert diff.returncode == 1, diff.stderr
    assert f"# {said}\n--- ~/.cursor/mcp.json\n" in diff.stdout
    assert "restyles feed" not in diff.stdout and "restyles sentry" not in diff.stdout, \
        "an SSE entry written as streamable HTTP, a written-out token read from a variable: real changes"
    assert said in sandbox.run("diff", "--stat", config=config).stdout.splitlines()
    listed = {f["path"]: f["restyles"] for f in json.loads(sandbox.run("diff", "--json", config=config).stdout)["files"]}
    assert listed == {"~/.cursor/mcp.json": ["temporal-docs"], "~/.claude.json": []}
    dry = sandbox.run("sync", "--dry-run", config=config).stdout.splitlines()
    assert "would update ~/.cursor/mcp.json (Cursor): restyles temporal-docs (the same server, in projector's spelling; " \
           "`projector remove` gives back your text)" in dry
    assert not any("restyle" in line for line in dry if "claude" in line)
    synced = sandbox.run("sync", config=config)
    assert "updated ~/.cursor/mcp.json (Cursor): restyled temporal-docs (the same server, in projector's spelling; " \
           "`projector remove` gives back your text)" in synced.stdout.splitlines()
    assert json.loads(files[".cursor/mcp.json"].read_text())["mcpServers"]["temporal-docs"] == {"url": "https://temporal.mcp.kapa.ai"}
    assert json.loads(files[".claude.json"].read_text())["mcpServers"]["feed"] == {"type": "sse", "url": "https://feed.example.com/sse"}
    assert sandbox.run("remove", config=config).returncode == 0
    assert files[".cursor/mcp.json"].read_text() == cursor


def test_a_vibe_server_signing_in_with_oauth_comes_in_as_an_oauth_provider_and_goes_back_as_it_was(sandbox):
    """Vibe's [mcp_servers.auth] type = "oauth" (as `/mcp add` writes it): the provider signs in
    with OAuth, with Vibe's scopes; the sync writes the bridge there (one `projector login` for
    every client); remove gives back the file byte for byte (the entry's text, its
    [mcp_servers.auth] sub-table a table still, not an inline table)."""
    vibe = ('[[mcp_servers]]\nname = "linear"\ntransport = "streamable-http"\nurl = "https://mcp.linear.app/mcp"\n\n'
            '[mcp_servers.auth]\ntype = "oauth"\nscopes = ["read", "write"]\n')
    path, config, imported = _imported(sandbox, ".vibe/config.toml", vibe, "vibe")
    assert "  linear:\n    url: https://mcp.linear.app/mcp\n    oauth: {scopes: [read, write]}\n" in config.read_text()
    assert "run `projector login linear`" in imported.stdout and "not in the model" not in imported.stdout
    assert sandbox.run("sync", config=config).returncode == 0
    entry = tomllib.loads(path.read_text())["mcp_servers"][0]
    assert entry["name"] == "linear" and entry["args"][:3] == ["mcp", "--provider", "linear"] and "auth" not in entry
    assert sandbox.run("remove", config=config).returncode == 0
    assert path.read_text() == vibe


# Entries as people write them by hand, nested tables and comments inside, each a server the model
# can say (so `import` takes it and the sync writes projector's entry in its place).
BY_HAND = {
    "vibe": (".vibe/config.toml", 'active_model = "devstral-2"\n\n[[mcp_servers]]\n# the files\nname = "fs"  # mine\n'
             'transport = "stdio"\ncommand = "npx"\nargs = ["-y", "fs"]\n# its env\n[mcp_servers.env]\nLOG_LEVEL = "debug"\n\n'
             '[[mcp_servers]]\nname = "web"\ntransport = "http"\nurl = "https://web.example.com/mcp"\n\n[tools]\nx = 1\n'),
    "codex": (".codex/config.toml", 'model = "o3"\n\n[mcp_servers.fs]\ncommand = "npx" # mine\nargs = ["-y", "fs"]\n# its env\n'
              '[mcp_servers.fs.env]\nLOG_LEVEL = "debug"\n\n[tui]\nx = 1\n'),
    "continue": (".continue/config.yaml", "name: Local\nversion: 1.0.0\nschema: v1\nmcpServers:\n  - name: fs # mine\n"
                 "    # the files\n    command: npx\n    args: [-y, fs]\n    env:\n      LOG_LEVEL: debug\n  - name: other\n"
                 "    command: uvx\n    args: [other]\n"),
    # These two came back so before (a map's entry kept its text): held to it here.
    "cursor": (".cursor/mcp.json", '{\n  // servers\n  "mcpServers": {\n    "fs": {\n      // mine\n      "command": "npx", "args": ["-y", "fs"],\n'
               '      "env": { /* level */ "LOG_LEVEL": "debug" },\n    },\n    "web": {"url": "https://web.example.com/mcp"}\n  }\n}\n'),
    "goose": (".config/goose/config.yaml", "extensions:\n  fs:\n    # the files\n    cmd: npx\n    args: [-y, fs]  # mine\n    bundled: null\n"
              "    description: files\n    enabled: true\n    env_keys: []\n    envs: {}\n    name: fs\n    timeout: 300\n    type: stdio\n"
              "GOOSE_MODEL: x\n"),
}


@pytest.mark.parametrize("client", sorted(BY_HAND))
def test_entries_written_by_hand_come_back_byte_for_byte_after_import_sync_and_remove(sandbox, client):
    """A sub-table (Vibe's [mcp_servers.env] of a [[mcp_servers]] item, Codex's
    [mcp_servers.fs.env]), a comment inside an entry, a list item (Continue's) in flow style:
    the sync writes projector's entry there, and remove gives back the user's own text."""
    relative, text = BY_HAND[client]
    path, config, imported = _imported(sandbox, relative, text, client)
    assert "provider fs: from" in imported.stdout
    assert sandbox.run("sync", config=config).returncode == 0
    assert "--provider" in path.read_text() and "mine" not in path.read_text()
    assert sandbox.run("remove", config=config).returncode == 0
    assert path.read_text() == text


def test_an_entry_narrowed_by_kbs_comes_in_with_its_kbs_as_the_default_and_sync_keeps_what_the_client_shows(sandbox):
    """A user who lost projector's ledger (or wrote ?kbs= by hand): the provider's URL without
    kbs, its KBs as the default; the next sync's entry shows the same KBs; remove gives it back."""
    cursor = '{\n  "mcpServers": {\n    "docs": {"url": "https://docs.example.com/mcp?kbs=api-a,handbook"}\n  }\n}\n'
    path, config, imported = _imported(sandbox, ".cursor/mcp.json", cursor, "cursor")
    assert "not imported" not in imported.stdout
    assert "  docs:\n    url: https://docs.example.com/mcp\n    default: [api-a, handbook]\n" in config.read_text()
    assert sandbox.run("sync", config=config).returncode == 0
    assert json.loads(path.read_text())["mcpServers"]["docs"]["url"] == "https://docs.example.com/mcp?kbs=api-a,handbook"
    assert sandbox.run("remove", config=config).returncode == 0
    assert path.read_text() == cursor


def test_a_vibe_entry_another_names_entry_stands_in_for_comes_back_where_it_stood(sandbox):
    """Vibe's linear-server is Claude Code's linear: the provider's entry stands in for it while
    projector manages them, and remove puts its text back between the items it stood between."""
    vibe = ('[[mcp_servers]]\nname = "a"\ntransport = "stdio"\ncommand = "a"\n\n[[mcp_servers]]\nname = "linear-server"\n# mine\n'
            'transport = "streamable-http"\nurl = "https://mcp.linear.app/mcp"\n\n[[mcp_servers]]\nname = "b"\ntransport = "stdio"\n'
            'command = "b"\n[mcp_servers.env]\nK = "v"\n')
    sandbox.install_projector()
    path = sandbox.file(".vibe/config.toml", vibe)
    sandbox.file(".claude.json", '{"mcpServers": {"linear": {"type": "http", "url": "https://mcp.linear.app/mcp"}}}\n')
    config = sandbox.model("version: 1\nclients: [claude-code, vibe]\nproviders: {}\n")
    imported = sandbox.run("import", config=config)
    assert "linear-server in ~/.vibe/config.toml: the same server as provider linear" in imported.stdout
    assert sandbox.run("sync", config=config).returncode == 0
    assert [item["name"] for item in tomllib.loads(path.read_text())["mcp_servers"]] == ["a", "b", "linear"]
    assert sandbox.run("remove", config=config).returncode == 0
    assert path.read_text() == vibe


ALONE = {
    "vibe": (".vibe/config.toml", 'active_model = "x"\n\n[[mcp_servers]]\nname = "linear-server"\ntransport = "streamable-http"\n'
             'url = "https://mcp.linear.app/mcp"\n\n[tools]\nx = 1\n'),
    "codex": (".codex/config.toml", 'model = "o3"\n\n[mcp_servers.linear-server]\nurl = "https://mcp.linear.app/mcp"\n\n# ui\n[tui]\nx = 1\n'),
    "continue": (".continue/config.yaml", "name: Local\nmcpServers:\n  - name: linear-server # mine\n    type: streamable-http\n"
                 "    url: https://mcp.linear.app/mcp\nrules: []\n"),
}


@pytest.mark.parametrize("client", sorted(ALONE))
def test_the_only_entry_another_names_entry_stands_in_for_comes_back_where_it_stood(sandbox, client):
    """The client's only server is Claude Code's linear under another name: the provider's entry
    stands in for it (written where entries are added, at the end), and remove puts its text back
    where it stood, before the table that followed it, or in its list emptied to []."""
    relative, text = ALONE[client]
    sandbox.install_projector()
    path = sandbox.file(relative, text)
    sandbox.file(".claude.json", '{"mcpServers": {"linear": {"type": "http", "url": "https://mcp.linear.app/mcp"}}}\n')
    config = sandbox.model(f"version: 1\nclients: [claude-code, {client}]\nproviders: {{}}\n")
    assert "the same server as provider linear" in sandbox.run("import", config=config).stdout
    assert sandbox.run("sync", config=config).returncode == 0
    assert "linear-server" not in path.read_text()
    assert sandbox.run("remove", config=config).returncode == 0
    assert path.read_text() == text


def test_a_vibe_entry_with_a_token_variable_and_an_oauth_table_stays_the_users_and_the_others_come_in(sandbox):
    """An entry that names its token's variable (api_key_env) and signs in with OAuth too
    ([mcp_servers.auth] type "oauth"): the model takes one of them, so that entry is said and left
    as it is; it stops neither the import of the file's other entries nor gets lost."""
    vibe = ('[[mcp_servers]]\nname = "linear"\ntransport = "http"\nurl = "https://mcp.linear.app/mcp"\napi_key_env = "LINEAR_TOKEN"\n\n'
            '[mcp_servers.auth]\ntype = "oauth"\nscopes = ["read"]\n\n'
            '[[mcp_servers]]\nname = "docs"\ntransport = "http"\nurl = "https://docs.example.com/mcp"\n')
    path, config, imported = _imported(sandbox, ".vibe/config.toml", vibe, "vibe")
    assert "not imported: linear in ~/.vibe/config.toml: " in imported.stdout and "api_key_env" in imported.stdout
    assert "  docs:\n    url: https://docs.example.com/mcp\n" in config.read_text() and "linear" not in config.read_text()
    assert sandbox.run("sync", config=config).returncode == 0
    assert tomllib.loads(path.read_text())["mcp_servers"][0] == tomllib.loads(vibe)["mcp_servers"][0]


VIBE_OAUTH = ('[[mcp_servers]]\nname = "linear"\ntransport = "http"\nurl = "https://mcp.linear.app/mcp"\n\n'
              '[mcp_servers.auth]\ntype = "oauth"\nscopes = ["read"]\n')


def test_an_entry_signing_in_with_oauth_is_not_taken_by_a_provider_that_sends_a_token(sandbox):
    """The same server in two clients, Cursor sending a token from a variable and Vibe signing in
    with OAuth: the provider sends the token (Cursor's entry comes first), so Vibe's entry stays
    the user's and keeps signing in (no `projector login` to run for a provider that has no
    OAuth); the same against a provider the model already has."""
    vibe, config, imported = _imported_beside(sandbox, ("vibe", ".vibe/config.toml", VIBE_OAUTH), (
        "cursor", ".cursor/mcp.json", '{"mcpServers": {"linear": {"url": "https://mcp.linear.app/mcp", '
                                      '"headers": {"Authorization": "Bearer ${LINEAR_TOKEN}"}}}}\n'))
    assert "  linear:\n    url: https://mcp.linear.app/mcp\n    token_env: LINEAR_TOKEN\n" in config.read_text()
    assert "projector login linear" not in imported.stdout
    assert "not imported: linear in ~/.vibe/config.toml: it signs in with OAuth" in imported.stdout, imported.stdout
    assert sandbox.run("sync", config=config).returncode == 0
    assert vibe.read_text() == VIBE_OAUTH
    again = sandbox.run("import", config=config)
    assert "not imported: linear in ~/.vibe/config.toml: it signs in with OAuth" in again.stdout, again.stdout


@pytest.mark.parametrize("kept", [None, "mine"])
def test_entries_taken_out_for_their_stand_ins_come_back_in_their_order_whatever_their_names_sort_as(sandbox, kept):
    """Four entries whose names are no provider's (CJK, a newline, none at all), each given back
    where it stood, not in the ledger's order (sorted by escaped name): "" came back first, alone in
    the emptied object, where it had been last; the same beside an entry of the user's after them."""
    sandbox.install_projector()
    entries = {"文档": {"url": "https://a.dev/mcp"}, "資料": {"url": "https://b.dev/mcp"}, "docs\n": {"url": "https://c.dev/mcp"},
               "": {"url": "https://e.dev/mcp"}} | ({kept: {"command": "mine-mcp", "disabled": True}} if kept else {})
    text = json.dumps({"mcpServers": entries}, indent=2, ensure_ascii=False) + "\n"
    assert _given_back(sandbox, ".cursor/mcp.json", text, "cursor", "文档") == text


def test_remove_names_the_entries_it_gives_back_as_import_does_an_empty_name_and_a_newline_quoted(sandbox):
    """remove's line names what it gave back: a name with a newline in it escaped and an empty one
    as "", where they were printed raw (`gave back , 文档, docs` and a line broken in two)."""
    sandbox.install_projector()
    text = json.dumps({"mcpServers": {"文档": {"url": "https://a.dev/mcp"}, "docs\n": {"url": "https://c.dev/mcp"},
                                      "": {"url": "https://e.dev/mcp"}}}, indent=2, ensure_ascii=False) + "\n"
    sandbox.file(".cursor/mcp.json", text)
    config = sandbox.model("version: 1\nclients: [cursor]\nproviders: {}\n")
    assert sandbox.run("import", config=config).returncode == 0
    assert sandbox.run("sync", config=config).returncode == 0
    removed = sandbox.run("remove", config=config)
    assert removed.returncode == 0, removed.stderr
    line = next(line for line in removed.stdout.splitlines() if "gave back" in line)
    assert 'gave back 文档, "docs\\n", "", as it was before projector' in line, removed.stdout
