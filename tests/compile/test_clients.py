"""Client descriptors: valid data, files where each client looks, entries each client accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from projector.compile.clients import expand, registry, selected
from projector.compile.plan import HttpServer, Plan, StdioServer

BRIDGE = StdioServer("/usr/local/bin/projector", ("mcp", "--provider", "docs"), ("DOCS_TOKEN",))
BRIDGE_WEB = StdioServer("/usr/local/bin/projector", ("mcp", "--provider", "web"), ("WEB_TOKEN",))
HTTP = HttpServer("https://kb.example.com/mcp?kbs=a,b", "WEB_TOKEN")


def test_thirty_descriptors_load_and_validate():
    assert sorted(registry()) == ["amp", "antigravity", "augment", "claude-code", "claude-desktop", "cline", "codex", "continue", "copilot",
                                  "copilot-jetbrains", "crush", "cursor", "factory", "gemini", "goose", "iflow", "junie", "kilo", "kimi",
                                  "kiro", "lmstudio", "mcphub", "opencode", "qwen", "roo", "rovodev", "vibe", "vscode", "windsurf", "zed"]


@pytest.mark.parametrize(
    ("client", "environ", "expected"),
    [
        ("claude-code", {"HOME": "/h"}, "/h/.claude.json"),
        ("claude-code", {"HOME": "/h", "CLAUDE_CONFIG_DIR": "/c"}, "/c/.claude.json"),
        ("codex", {"HOME": "/h"}, "/h/.codex/config.toml"),
        ("codex", {"HOME": "/h", "CODEX_HOME": "/x"}, "/x/config.toml"),
        ("opencode", {"HOME": "/h"}, "/h/.config/opencode/opencode.json"),
        ("opencode", {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, "/x/opencode/opencode.json"),
        ("crush", {"HOME": "/h"}, "/h/.config/crush/crush.json"),
        ("crush", {"HOME": "/h", "CRUSH_GLOBAL_CONFIG": "/g"}, "/g/crush.json"),
        ("kiro", {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, "/h/.kiro/settings/mcp.json"),
        ("copilot", {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, "/h/.copilot/mcp-config.json"),
        ("copilot", {"HOME": "/h", "COPILOT_HOME": "/p"}, "/p/mcp-config.json"),
        ("gemini", {"HOME": "/h"}, "/h/.gemini/settings.json"),
        ("gemini", {"HOME": "/h", "GEMINI_CLI_HOME": "/g"}, "/g/.gemini/settings.json"),  # a home, not the folder
        ("qwen", {"HOME": "/h"}, "/h/.qwen/settings.json"),
        ("qwen", {"HOME": "/h", "QWEN_HOME": "/q"}, "/q/settings.json"),  # the folder itself
        ("qwen", {"HOME": "/h", "QWEN_HOME": "~/alt"}, "/h/alt/settings.json"),
        ("qwen", {"HOME": "/h", "QWEN_HOME": "relative"}, "/h/.qwen/settings.json"),  # not a folder projector can place
        ("cursor", {"HOME": "/h"}, "/h/.cursor/mcp.json"),
        ("vscode", {"HOME": "/h"}, "/h/.config/Code/User/mcp.json"),
        ("vscode", {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, "/x/Code/User/mcp.json"),
        ("vscode", {"HOME": "/h", "VSCODE_APPDATA": "/a"}, "/a/Code/User/mcp.json"),
        ("vscode", {"HOME": "/h", "VSCODE_PORTABLE": "/p", "VSCODE_APPDATA": "/a"}, "/p/user-data/User/mcp.json"),
        ("windsurf", {"HOME": "/h"}, "/h/.codeium/windsurf/mcp_config.json"),
        ("zed", {"HOME": "/h"}, "/h/.config/zed/settings.json"),
        ("zed", {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, "/x/zed/settings.json"),
        ("goose", {"HOME": "/h"}, "/h/.config/goose/config.yaml"),
        ("goose", {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, "/x/goose/config.yaml"),
        ("goose", {"HOME": "/h", "XDG_CONFIG_HOME": "/x", "GOOSE_PATH_ROOT": "/r"}, "/r/config/config.yaml"),
        ("claude-desktop", {"HOME": "/h"}, "/h/.config/Claude/claude_desktop_config.json"),
        ("antigravity", {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, "/h/.gemini/antigravity/mcp_config.json"),
        ("amp", {"HOME": "/h"}, "/h/.config/amp/settings.json"),
        ("amp", {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, "/x/amp/settings.json"),
        ("cline", {"HOME": "/h"}, "/h/.cline/data/settings/cline_mcp_settings.json"),
        ("cline", {"HOME": "/h", "CLINE_DIR": "/c"}, "/c/data/settings/cline_mcp_settings.json"),
        ("cline", {"HOME": "/h", "CLINE_DIR": "/c", "CLINE_DATA_DIR": "/d"}, "/d/settings/cline_mcp_settings.json"),
        ("cline", {"HOME": "/h", "CLINE_DATA_DIR": "/d", "CLINE_MCP_SETTINGS_PATH": "/p/mine.json"}, "/p/mine.json"),  # the file itself
        ("cline", {"HOME": "/h", "CLINE_MCP_SETTINGS_PATH": "relative.json"}, "/h/.cline/data/settings/cline_mcp_settings.json"),
        ("roo", {"HOME": "/h"}, "/h/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json"),
        ("roo", {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, "/x/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json"),
        ("kilo", {"HOME": "/h"}, "/h/.config/kilo/kilo.jsonc"),
        ("kilo", {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, "/x/kilo/kilo.jsonc"),
        ("continue", {"HOME": "/h"}, "/h/.continue/config.yaml"),
        ("continue", {"HOME": "/h", "CONTINUE_GLOBAL_DIR": "/c"}, "/c/config.yaml"),
        ("lmstudio", {"HOME": "/h"}, "/h/.lmstudio/mcp.json"),
        ("factory", {"HOME": "/h"}, "/h/.factory/mcp.json"),
        ("kimi", {"HOME": "/h"}, "/h/.kimi-code/mcp.json"),
        ("kimi", {"HOME": "/h", "KIMI_CODE_HOME": "/k"}, "/k/mcp.json"),
        ("junie", {"HOME": "/h"}, "/h/.junie/mcp/mcp.json"),
        ("augment", {"HOME": "/h"}, "/h/.augment/settings.json"),
        ("copilot-jetbrains", {"HOME": "/h"}, "/h/.config/github-copilot/intellij/mcp.json"),
        ("mcphub", {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, "/h/.config/mcphub/servers.json"),
        ("vibe", {"HOME": "/h"}, "/h/.vibe/config.toml"),
        ("vibe", {"HOME": "/h", "VIBE_HOME": "/v"}, "/v/config.toml"),
        ("rovodev", {"HOME": "/h"}, "/h/.rovodev/mcp.json"),
        ("iflow", {"HOME": "/h"}, "/h/.iflow/settings.json"),
    ],
)
def test_global_file_follows_relocating_variables(client, environ, expected):
    assert str(registry()[client].global_file(environ)) == expected


@pytest.mark.parametrize(
    ("client", "expected"),
    [
        ("vscode", "/h/Library/Application Support/Code/User/mcp.json"),
        ("zed", "/h/.config/zed/settings.json"),  # XDG_CONFIG_HOME is not read on macOS
        ("claude-desktop", "/h/Library/Application Support/Claude/claude_desktop_config.json"),
        ("goose", "/x/goose/config.yaml"),  # XDG on macOS too
        ("codex", "/h/.codex/config.toml"),
    ],
)
def test_macos_paths(client, expected, monkeypatch):
    from projector.compile import clients

    monkeypatch.setattr("sys.platform", "darwin")
    descriptor = clients.client(clients.validated(clients_folder() / f"{client}.yaml"))
    assert str(descriptor.global_file({"HOME": "/h", "XDG_CONFIG_HOME": "/x"})) == expected


def clients_folder() -> Path:
    from projector.core.resources import data_dir

    return data_dir("clients")


def test_qwen_reads_its_folder_from_its_own_dotenv_files(tmp_path):
    qwen = registry()["qwen"]
    (tmp_path / ".qwen").mkdir()
    (tmp_path / ".env").write_text("QWEN_HOME=/from/home/env\n")
    assert str(qwen.global_file({"HOME": str(tmp_path)})) == "/from/home/env/settings.json"
    (tmp_path / ".qwen" / ".env").write_text("OTHER=1\nQWEN_HOME=/from/qwen/env\n")
    assert str(qwen.global_file({"HOME": str(tmp_path)})) == "/from/qwen/env/settings.json"
    assert str(qwen.global_file({"HOME": str(tmp_path), "QWEN_HOME": "/set"})) == "/set/settings.json"


def test_antigravity_edits_whichever_of_its_files_exists(tmp_path):
    antigravity = registry()["antigravity"]
    assert antigravity.global_file({"HOME": str(tmp_path)}) == tmp_path / ".gemini" / "antigravity" / "mcp_config.json"
    shared = tmp_path / ".gemini" / "config" / "mcp_config.json"
    shared.parent.mkdir(parents=True)
    shared.write_text("{}")
    assert antigravity.global_file({"HOME": str(tmp_path)}) == shared


def test_opencode_edits_the_file_that_exists(tmp_path):
    folder = tmp_path / ".config" / "opencode"
    folder.mkdir(parents=True)
    (folder / "opencode.jsonc").write_text("{}")
    assert registry()["opencode"].global_file({"HOME": str(tmp_path)}) == folder / "opencode.jsonc"


def test_a_variable_that_names_the_file_is_watched_by_the_fast_path(tmp_path):
    """CLINE_MCP_SETTINGS_PATH moves the file: it is one of the variables a sync depends on, and
    the file it names is what the fast path watches."""
    from projector.compile.targets import dependencies
    from projector.core.modeltypes import Model

    cline = registry()["cline"]
    assert "CLINE_MCP_SETTINGS_PATH" in cline.variables()
    named = str(tmp_path / "mine.json")
    needs = dependencies(Model(tmp_path / "m.yaml", ("cline",), (), ()), [cline], {"HOME": str(tmp_path), "CLINE_MCP_SETTINGS_PATH": named})
    assert named in needs.files and "CLINE_MCP_SETTINGS_PATH" in needs.variables


def test_expand_ignores_unset_or_empty_variables():
    assert expand("$NOPE/x", {"NOPE": ""}) is None
    assert expand("~", {"HOME": "/h"}) == Path("/h")


def test_clients_found_on_this_machine(tmp_path):
    (tmp_path / ".codex").mkdir()
    found = selected(None, {"HOME": str(tmp_path)}, which=lambda b: "/bin/copilot" if b == "copilot" else None)
    assert [c.id for c in found] == ["codex", "copilot"]
    assert [c.id for c in selected(("kiro", "codex"), {"HOME": str(tmp_path)})] == ["codex", "kiro"]


def test_antigravity_alone_does_not_make_gemini_cli_found(tmp_path):
    (tmp_path / ".gemini" / "antigravity").mkdir(parents=True)
    assert [c.id for c in selected(None, {"HOME": str(tmp_path)}, which=lambda b: None)] == ["antigravity"]


COMPILED = Plan(servers=(("docs", BRIDGE), ("web", HTTP)), warnings=(), bridges=(("web", BRIDGE_WEB),))


def test_entries_in_every_dialect(snapshot):
    rendered = {c.id: {"entries": c.entries(COMPILED)[0], "warnings": list(c.entries(COMPILED)[1])} for c in registry().values()}
    assert rendered == snapshot


def test_secrets_are_references_only():
    for client in registry().values():
        web = json.dumps(client.entries(COMPILED)[0]["web"])
        # by name, in the client's own syntax; a client that cannot take it gets the bridge, which reads it
        assert "WEB_TOKEN" in web if client.remote == "token" else "--provider" in web


@pytest.mark.parametrize("client_id", sorted(registry()))
def test_what_a_client_writes_it_reads_back(client_id):
    """A descriptor's reading side (entry: URL keys, command shape, env key) agrees with its
    templates: what projector writes, projector recognises, and doctor sees the variables passed."""
    client = registry()[client_id]
    entries, _ = client.entries(COMPILED)
    reading = client.reading
    for name, written in entries.items():
        found = reading.endpoint(written)
        if found[0] == "url":
            assert found == ("url", "https://kb.example.com/mcp")
        else:
            assert found[1:] == ("projector", "mcp", "--provider", name.lower())
            if client.stdio_env != "inherit" and client.env_reference is not None:
                assert {"DOCS_TOKEN", "WEB_TOKEN"} & set(reading.passed(written))
        assert reading.normal(written) == reading.normal(reading.normal(written))


SIGNS_IN = StdioServer("/usr/local/bin/projector", ("mcp", "--provider", "sso"), ("SSO_SECRET",),
                       ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "XAUTHORITY", "SSH_CONNECTION", "DBUS_SESSION_BUS_ADDRESS"))


@pytest.mark.parametrize("client_id", sorted(registry()))
def test_an_oauth_bridge_is_passed_what_its_own_sign_in_reads_only_where_the_client_would_drop_it(client_id):
    """Codex clears a stdio server's environment: the bridge of an OAuth provider must be passed
    the display, $BROWSER and the session bus by name, or the sign-in it starts for a session
    with no token never opens a browser. A client that keeps them gets nothing more; one that
    would hand an unset one on as the text ``${DISPLAY}`` gets nothing more either."""
    client = registry()[client_id]
    desktop = {"HOME": "/h", "PATH": "/usr/bin", "DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0", "XDG_RUNTIME_DIR": "/run/user/1000",
               "XAUTHORITY": "/run/user/1000/gdm/Xauthority", "BROWSER": "firefox", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus"}
    entry = client.render(SIGNS_IN)
    passed = set(client.reading.passed(entry))
    extra = passed - {"SSO_SECRET"}
    if client_id == "codex":
        assert entry["env_vars"] == ["SSO_SECRET", *SIGNS_IN.sign_in_env]  # names only, never a value
    else:
        assert extra == set(), "passed where the client keeps them anyway, or would pass an unset one as text"
    reached = client.server_environment(entry, desktop)
    if client_id in CLEARED_AND_NOT_PASSED:
        assert "DISPLAY" not in reached  # the bridge's own sign-in cannot open a browser there: `projector login` does
    else:  # the sign-in sees the person's screen, browser and bus (Gemini drops XAUTHORITY by its name, and "" would be worse)
        assert {k: reached.get(k) for k in desktop} == {k: None if (k, client_id) == ("XAUTHORITY", "gemini") else v for k, v in desktop.items()}
    away = {"HOME": "/h", "PATH": "/usr/bin"}  # none of them set: none made up ("" or the text ${DISPLAY})
    assert {k: v for k, v in client.server_environment(entry, away).items() if k in SIGNS_IN.sign_in_env} == {}


# They clear a stdio server's environment, and what they do with a reference to an unset
# variable is not known (or they have no reference at all): nothing is passed there.
CLEARED_AND_NOT_PASSED = {"cline", "continue", "roo", "vibe"}


def test_crush_entries_pass_crushs_own_schema(reference):
    import jsonschema

    schema = json.loads((reference / "crush-schema.json").read_text())
    crush = registry()["crush"]
    document = {"mcp": crush.entries(COMPILED)[0]}
    jsonschema.Draft202012Validator(schema).validate(document)


def test_kiro_entries_have_the_documented_shape():
    # kiro.dev/docs/cli/mcp/configuration: local servers need command and args; remote ones a url.
    kiro = registry()["kiro"]
    local, remote = kiro.render(BRIDGE), kiro.render(HTTP)
    assert isinstance(local["command"], str) and isinstance(local["args"], list)
    assert set(local) <= {"command", "args", "env", "disabled", "autoApprove", "disabledTools", "timeout"}
    assert remote["url"].startswith("https://") and set(remote) <= {"type", "url", "headers", "oauth"}


def test_a_broken_descriptor_is_refused_with_its_place(tmp_path, monkeypatch):
    from projector.compile import clients

    bad = tmp_path / "bad.yaml"
    bad.write_text("id: bad\nname: Bad\nformat: xml\n")
    with pytest.raises(RuntimeError) as raised:
        clients.validated(bad)
    assert str(raised.value).startswith(f"{bad}: ") and "is a required property" in str(raised.value)


def test_no_code_names_a_client():
    """Everything a client is lives in its descriptor: no module (nor its comments) names one."""
    import re

    import projector

    import keyword

    source = Path(projector.__file__).parent
    # Spelled as the descriptors spell them (ids lower-case, names capitalised): "Factory" the
    # record helper is not the client "factory"; an id that is a Python keyword counts quoted.
    words = sorted({c.id for c in registry().values() if not keyword.iskeyword(c.id)} | {c.name for c in registry().values()},
                   key=len, reverse=True)
    quoted = [f"[\"']{c.id}[\"']" for c in registry().values() if keyword.iskeyword(c.id)]
    pattern = re.compile("|".join([r"\b(" + "|".join(map(re.escape, words)) + r")\b", *quoted]))
    # The same words meaning something else: HTTP's 100 Continue, the "continue" field of a hook's
    # answer, MCP's "cursor" (a tools/list page's marker).
    other_meanings = re.compile(r"\b100 Continue\b|answer\.get\(\"continue\"\)|\"cursor\"")
    found = [f"{path.relative_to(source)}:{number}: {line.strip()}"
             for path in sorted(source.rglob("*")) if path.suffix in (".py", ".sh", ".fish", ".yaml", ".json")
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(other_meanings.sub("", line))]
    assert found == []


def test_compiled_descriptors_are_kept_while_their_bytes_are_the_same(tmp_path, monkeypatch):
    """Kept by content: a checkout that rewrites a descriptor unchanged (new inode, times) compiles
    nothing, a change of its bytes compiles it anew."""
    import os

    from projector.compile import clients

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    mine = tmp_path / "config" / "projector" / "clients" / "mine.yaml"
    mine.parent.mkdir(parents=True)
    text = (clients_folder() / "kiro.yaml").read_text().replace("id: kiro", "id: mine").replace("name: Kiro", "name: Mine")
    mine.write_text(text)
    checked = []
    original = clients.validated
    monkeypatch.setattr(clients, "validated", lambda path, *text: checked.append(path.name) or original(path, *text))

    def fresh() -> dict:
        clients.registry.cache_clear()
        return clients.registry()

    assert fresh()["mine"].name == "Mine" and len(checked) == len(clients.registry())
    checked.clear()
    replacement = mine.with_suffix(".new")
    replacement.write_text(text)
    os.utime(replacement, (1, 1))
    replacement.replace(mine)  # the same bytes in a new file
    assert fresh()["mine"].name == "Mine" and checked == []
    mine.write_text(text.replace("name: Mine", "name: Mine Too"))
    assert fresh()["mine"].name == "Mine Too" and "mine.yaml" in checked
    clients.registry.cache_clear()
