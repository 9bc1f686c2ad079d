"""A client for the MCP conformance harness: it drives `projector mcp` over stdio.

The harness runs ``python drive_bridge.py [--listen] <scenario URL>``; this writes a model whose
provider is that URL (unbound: every KB, so the URL is used as it is; ``--listen``: the provider's
``listen`` setting on), starts the bridge with the official MCP client, initializes, lists the
tools and calls each of them, then ends the session. An elicitation is accepted with the
defaults its schema gives (what SEP-1034 asks of a client). A failure prints one line and exits 1.

With ``--oauth`` the provider signs in with OAuth: the scenario's context (MCP_CONFORMANCE_CONTEXT:
a pre-registered client, client credentials with a secret or a private key) becomes the
provider's ``oauth:`` settings (a machine's with its ``issuer``: the authorization server the
server's metadata names, as an administrator would configure it), and `projector login` runs
first with a browser played by follow_redirects.py ($BROWSER), so that the session goes through
the bridge with the stored token; a login that prints a library's raw warning fails.
The bridge gets that browser too, for the sign-in it starts itself (a step-up). With
``--unsigned=N`` nobody signs in first: N sessions start at once, each finds no tools and a
tool call that says to sign in, the bridges start the sign-in themselves, and each session
waits for ``notifications/tools/list_changed`` before it lists and calls the real tools.
``--count=FILE``: the browser adds a line to FILE each time it is opened. ``--expire``: the
token `projector login` stored is made an expired one before the session starts.
"""

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, ToolListChangedNotification

ARGUMENTS = {"add_numbers": {"a": 1, "b": 2}}
BROWSER = Path(__file__).resolve().parent / "follow_redirects.py"
SIGN_IN_WAIT = 90  # seconds an unsigned session waits for tools/list_changed
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"  # the suite's Client ID Metadata Document


async def accept_defaults(_context, params) -> ElicitResult:
    properties = (getattr(params, "requested_schema", None) or {}).get("properties", {})
    return ElicitResult(action="accept", content={name: spec["default"] for name, spec in properties.items() if "default" in spec})


def authorization_server(url: str) -> str:
    """The first authorization server the MCP server's Protected Resource Metadata names."""
    from urllib.parse import urlsplit
    from urllib.request import urlopen

    parts = urlsplit(url)
    with urlopen(f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}", timeout=10) as answer:
        return json.load(answer)["authorization_servers"][0]


def oauth_settings(context: dict, home: Path) -> tuple[str, dict[str, str]]:
    """The provider's ``oauth:`` (a YAML flow mapping) for a scenario's context, and the variables it names."""
    settings, env = {}, {}
    if "client_id" in context:
        settings["client_id"] = context["client_id"]
    if "client_secret" in context:
        settings["client_secret_env"], env["SCENARIO_CLIENT_SECRET"] = "SCENARIO_CLIENT_SECRET", context["client_secret"]
    if "private_key_pem" in context:
        key = home / "client-key.pem"
        key.write_text(context["private_key_pem"])
        settings["client_credentials"] = {"private_key_file": str(key), "algorithm": context.get("signing_algorithm", "RS256")}
    elif context.get("name", "").startswith("auth/client-credentials"):
        settings["client_credentials"] = True
    if "client_credentials" in settings:  # the issuer that registered the machine's client: an administrator knows it
        settings["issuer"] = authorization_server(context["server_url"])
    if "idp_token_endpoint" in context:  # an administrator configures the issuer: here, read where the server says
        env["SCENARIO_ID_TOKEN"] = context["idp_id_token"]
        settings["enterprise"] = {"issuer": authorization_server(context["server_url"]), "idp_token_endpoint": context["idp_token_endpoint"],
                                  "idp_client_id": context["idp_client_id"], "id_token_env": "SCENARIO_ID_TOKEN"}
    if os.environ.get("MCP_CONFORMANCE_SCENARIO") == "auth/basic-cimd":
        settings["client_metadata_url"] = CLIENT_METADATA_URL
    return (json.dumps(settings) if settings else "true"), env


def login(home: str, model: Path, env: dict[str, str], paste: bool, no_browser: bool = False) -> None:
    command = [sys.executable, "-m", "projector", "login", "scenario", "--config", str(model)]
    if paste or no_browser:  # no_browser: no --paste, but nothing can open here ($BROWSER and $DISPLAY unset)
        return login_pasting(home, command + (["--paste"] if paste else []), env)
    done = subprocess.run(command, env=env, cwd=home, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        print(f"drive_bridge: {done.stderr.strip().splitlines()[-1]}", file=sys.stderr)
        sys.exit(1)
    if "Warning: " in done.stderr:  # a library's warning, raw (the MCP SDK's MCPDeprecationWarning): projector says its own
        print(f"drive_bridge: login printed a raw warning: {done.stderr.strip()}", file=sys.stderr)
        sys.exit(1)


def login_pasting(home: str, command: list[str], env: dict[str, str]) -> None:
    """`projector login --paste` as a person on a machine without a browser: open the printed
    address elsewhere (follow its redirects, short of the loopback one) and paste that back."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: run by the harness, not by pytest
    from elsewhere import paste_back

    login = subprocess.Popen(command, env=env, cwd=home, stdin=subprocess.PIPE, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    paste_back(login)
    out, err = login.communicate(timeout=60)
    if login.returncode != 0:
        print(f"drive_bridge: {err.strip().splitlines()[-1] if err.strip() else 'login failed'}", file=sys.stderr)
        sys.exit(1)


def expire(home: str) -> None:
    """The stored token, as if it had expired an hour ago (and the server no longer took it)."""
    import time

    from projector.core import locations, tokenstore
    from projector.core.record import replace

    state = locations.state_folder({"HOME": home})
    tokens = tokenstore.read(state, "scenario")
    tokenstore.write(state, "scenario", replace(tokens, access_token="expired-token", expires_at=time.time() - 3600))


async def main(url: str, listen: bool, oauth: bool, paste: bool = False, no_browser: bool = False, unsigned: int = 0,
               count: str = "", expired: bool = False) -> None:
    with tempfile.TemporaryDirectory() as home:
        model = Path(home) / "projector.yaml"
        env = {"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        signing_in = ""
        if oauth:
            context = dict(json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}"), server_url=url)
            settings, variables = oauth_settings(context, Path(home))
            signing_in, env = f"    oauth: {settings}\n", dict(env, **variables)
            if not no_browser:  # the bridge gets it too, for the sign-in it starts itself
                env["BROWSER"] = str(BROWSER)
            if count:
                env["BROWSER_COUNT"] = count
        model.write_text(f"version: 1\nproviders:\n  scenario:\n    url: {url}\n    listen: {str(listen).lower()}\n    timeout: 20\n{signing_in}")
        if oauth and not unsigned:
            login(home, model, env, paste, no_browser)
        if expired:
            expire(home)
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "projector", "mcp", "--provider", "scenario", "--config", str(model)],
            env=env,
            cwd=home,
        )
        if unsigned:
            await asyncio.gather(*(session_signing_in(params) for _ in range(unsigned)))
            return
        async with Client(params, mode="legacy", elicitation_callback=accept_defaults) as client:
            tools = await client.list_tools()
            for tool in tools.tools:
                await client.call_tool(tool.name, ARGUMENTS.get(tool.name, {}))


async def session_signing_in(params: StdioServerParameters) -> None:
    """A session started before anyone signed in: no tools, a tool call that names `projector
    login`, then (the bridge's sign-in done) tools/list_changed and the provider's tools."""
    changed = asyncio.Event()

    async def on_message(message) -> None:
        if isinstance(message, ToolListChangedNotification):
            changed.set()

    async with Client(params, mode="legacy", elicitation_callback=accept_defaults, message_handler=on_message) as client:
        before = await client.list_tools()
        if before.tools:
            raise SystemExit(f"drive_bridge: tools before the sign-in: {[t.name for t in before.tools]}")
        refused = await client.call_tool("add_numbers", ARGUMENTS["add_numbers"])
        text = " ".join(getattr(part, "text", "") for part in refused.content)
        if not refused.is_error or "`projector login scenario`" not in text:
            raise SystemExit(f"drive_bridge: a tool call before the sign-in did not say to sign in: {text!r}")
        await asyncio.wait_for(changed.wait(), SIGN_IN_WAIT)
        tools = await client.list_tools()
        if not tools.tools:
            raise SystemExit("drive_bridge: no tools after tools/list_changed")
        for tool in tools.tools:
            await client.call_tool(tool.name, ARGUMENTS.get(tool.name, {}))


if __name__ == "__main__":
    try:
        options = sys.argv[1:-1]
        valued = dict(option[2:].split("=", 1) for option in options if "=" in option)
        asyncio.run(main(sys.argv[-1], "--listen" in options, "--oauth" in options, "--paste" in options, "--no-browser" in options,
                         int(valued.get("unsigned", 0)), valued.get("count", ""), "--expire" in options))
    except BaseException as failure:  # noqa: BLE001 - one line for the harness's log
        while isinstance(failure, BaseExceptionGroup):  # anyio wraps what a task raised
            failure = failure.exceptions[0]
        if not isinstance(failure, MCPError):
            raise
        print(f"drive_bridge: {failure}", file=sys.stderr)
        sys.exit(1)
