"""Shared workspace servers (``shared: true``), driven through the bridge by the official MCP
client: one server per workspace and launch, correct routing between its sessions, its lifetime
and faults, and who may attach.

The sandbox and its server are in tests/hosts.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from hosts import CANARY, LINGER, SERVER, RawSession, alive, eventually, shared  # noqa: F401 - shared is a fixture
from mcp import Client
from mcp.shared.exceptions import MCPError


async def _pid(client: Client) -> int:
    return json.loads((await client.call_tool("report", {})).content[0].text)["pid"]


def _text(result) -> dict:
    return json.loads(result.content[0].text)


# --------------------------------------------------------------------------- routing


def test_three_sessions_in_one_workspace_share_one_server_and_each_gets_only_its_own(shared):
    noticed: list[list[str]] = [[], [], []]
    progress: list[list[str]] = [[], [], []]

    def handler(index: int):
        async def record(message) -> None:
            if isinstance(message, Exception):
                return
            noticed[index].append(type(message).__name__)

        return record

    def on_progress(index: int):
        async def record(_done, _total, message) -> None:
            progress[index].append(message)

        return record

    async def run():
        async with AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(shared.client(shared.a, message_handler=handler(i))) for i in range(3)]
            pids = await asyncio.gather(*(_pid(c) for c in clients))
            # every session numbers its requests from the same start: the ids collide at the host
            echoed = await asyncio.gather(*(c.call_tool("echo", {"tag": f"s{i}"}) for i, c in enumerate(clients)))
            slow = [c.call_tool("slow", {"tag": f"p{i}", "seconds": 0.6, "steps": 3}, progress_callback=on_progress(i))
                    for i, c in enumerate(clients[:2])]
            await asyncio.gather(*slow)

            cancelled = asyncio.create_task(clients[2].call_tool("slow", {"tag": "cancel-me", "seconds": 30, "steps": 1}))
            await _wait_for(lambda: any(e.get("started") == "cancel-me" for e in shared.seen()))
            cancelled.cancel()
            with pytest.raises(asyncio.CancelledError):
                await cancelled
            await _wait_for(lambda: any(e.get("cancelled") for e in shared.seen()))

            await clients[1].call_tool("changed", {})
            await _wait_for(lambda: all("ToolListChangedNotification" in n for n in noticed))
            return pids, [_text(e) for e in echoed]

    pids, echoed = asyncio.run(run())
    assert len(set(pids)) == 1 and len(shared.started()) == 1
    assert [e["tag"] for e in echoed] == ["s0", "s1", "s2"]
    assert len({e["request_id"] for e in echoed}) == 3  # the server saw three distinct ids
    assert progress[0] == ["p0"] * 3 and progress[1] == ["p1"] * 3 and progress[2] == []
    assert [n.count("ProgressNotification") for n in noticed] == [3, 3, 0]
    started = next(e for e in shared.seen() if e.get("started") == "cancel-me")
    assert [e for e in shared.seen() if "cancelled" in e] == [{"cancelled": "cancel-me", "request_id": started["request_id"]}]
    assert all(n.count("ToolListChangedNotification") == 1 for n in noticed)


async def _wait_for(check, timeout: float = 15.0) -> bool:
    with anyio.fail_after(timeout):
        while not check():
            await asyncio.sleep(0.02)
    return True


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_resource_updates_reach_only_subscribers_and_the_last_one_unsubscribes(shared):
    updates: list[list[str]] = [[], []]

    def handler(index: int):
        async def record(message) -> None:
            if isinstance(message, types.ResourceUpdatedNotification):
                updates[index].append(str(message.params.uri))

        return record

    async def run():
        async with shared.client(shared.a, message_handler=handler(0)) as one, shared.client(shared.a, message_handler=handler(1)) as two:
            await one.subscribe_resource("memo://a")
            await two.call_tool("touch", {"uri": "memo://a"})
            await two.call_tool("touch", {"uri": "memo://b"})
            await _wait_for(lambda: updates[0] == ["memo://a"])
            await two.subscribe_resource("memo://a")
            await one.unsubscribe_resource("memo://a")  # two still wants it: the server keeps sending
            unsubscribed_early = any("unsubscribed" in e for e in shared.seen())
            await one.call_tool("touch", {"uri": "memo://a"})
            await _wait_for(lambda: updates[1] == ["memo://a"])
            return unsubscribed_early

    unsubscribed_early = asyncio.run(run())
    assert updates == [["memo://a"], ["memo://a"]] and not unsubscribed_early
    assert eventually(lambda: [e for e in shared.seen() if "unsubscribed" in e] == [{"unsubscribed": "memo://a"}])


def test_roots_are_the_workspace_s_even_while_another_session_has_a_request_in_flight(shared):
    """A's tool asked for roots while B had a request in flight, and got B's roots: the sessions
    of one workspace share its root, so the host answers for them."""
    asked: list[str] = []

    def roots_of(name: str):
        async def roots(_context) -> types.ListRootsResult:
            asked.append(name)
            return types.ListRootsResult(roots=[types.Root(uri=f"file:///{name}")])

        return roots

    async def run():
        async with shared.client(shared.a, list_roots_callback=roots_of("a")) as a, \
                shared.client(shared.a, list_roots_callback=roots_of("b")) as b:
            # in flight for 5 s: A's call and its roots/list go through a bridge, the host and back meanwhile,
            # which a loaded 2-core machine can stretch past a second
            busy = asyncio.create_task(b.call_tool("slow", {"tag": "b-busy", "seconds": 5.0, "steps": 1}))
            await _wait_for(lambda: any(e.get("started") == "b-busy" for e in shared.seen()))
            from_a = _text(await a.call_tool("roots", {"tag": "a"}))
            await busy
            return from_a, _text(await b.call_tool("roots", {"tag": "b"}))

    from_a, from_b = asyncio.run(run())
    assert from_a["roots"] == from_b["roots"] == [shared.a.as_uri()] and asked == []


def _sampling(name: str, seen: list[str]):
    async def sample(_context, _params) -> types.CreateMessageResult:
        seen.append(name)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=f"from {name}"), model="m")

    return sample


def _elicitation(name: str, seen: list[str]):
    async def ask(_context, _params) -> types.ElicitResult:
        seen.append(name)
        return types.ElicitResult(action="accept", content={"answer": f"from {name}"})

    return ask


@pytest.mark.parametrize(("tool", "callback", "make"), [("sample", "sampling_callback", _sampling), ("ask", "elicitation_callback", _elicitation)])
def test_sampling_and_elicitation_reach_the_session_that_asked_and_never_another(shared, tool, callback, make):
    """Alone in flight, A's call is asked back; while B's call is in flight too (B heard from
    last) nothing on stdio says whose it is: the server gets an error, B is never asked."""
    seen: list[str] = []

    async def run():
        async with shared.client(shared.a, **{callback: make("a", seen)}) as a, shared.client(shared.a, **{callback: make("b", seen)}) as b:
            alone = _text(await a.call_tool(tool, {"tag": "alone", "delay": 0}))
            # A asks back 2.5 s into its call, B's call is in flight from 0.2 s to 5 s: B's call has more than
            # 2 s to reach the server through its bridge and the host (a loaded machine can take a second)
            late = asyncio.create_task(a.call_tool(tool, {"tag": "crowded", "delay": 2.5}))
            await asyncio.sleep(0.2)
            busy = asyncio.create_task(b.call_tool("slow", {"tag": "b-busy", "seconds": 5.0, "steps": 1}))
            try:
                crowded = (await late).content[0].text
            except MCPError as refused:  # the server passes the error on as its own
                crowded = str(refused)
            await busy
            return alone, crowded

    alone, crowded = asyncio.run(run())
    assert alone["answer"] == "from a"
    assert "2 sessions of this shared server have requests in flight" in crowded and "from b" not in crowded
    assert seen == ["a"]


CLAUDE_CODE, CODEX = "2025-11-25", "2025-06-18"  # the protocol versions they ask for


def _serve_both(shared, first: str, second: str) -> tuple[list[dict], list[list[str]], list[int], list[dict]]:
    """Two raw sessions in one workspace asking ``first`` then ``second``: their initialize
    answers, the tools each is offered and the pid of the server each reaches; then `ps`."""
    with RawSession(shared, shared.a, version=first) as one, RawSession(shared, shared.a, version=second) as two:
        answers, tools, pids = [one.answer, two.answer], [], []
        for session in (one, two):
            session.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            tools.append(sorted(tool["name"] for tool in session.receive()["result"]["tools"]))
            session.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "report", "arguments": {}}})
            pids.append(json.loads(session.receive()["result"]["content"][0]["text"])["pid"])
        listed = json.loads(shared.projector("ps", "--json").stdout)["hosts"]
    return answers, tools, pids, listed


def test_a_session_asking_an_older_protocol_version_than_agreed_gets_a_server_of_its_own(shared):
    """Claude Code first, Codex second: Codex was refused (-32602) and ran without tools."""
    answers, tools, pids, listed = _serve_both(shared, CLAUDE_CODE, CODEX)
    assert [a["result"]["protocolVersion"] for a in answers] == [CLAUDE_CODE, CODEX]
    assert tools[0] == tools[1] and "report" in tools[0]
    assert pids[0] != pids[1] and len(shared.started()) == 2 and len(shared.sockets()) == 1  # one host, two servers
    assert sorted((h["pid"], h["protocol"], h["sessions"]) for h in listed) == sorted([(pids[0], CLAUDE_CODE, 1), (pids[1], CODEX, 1)])
    assert f"asks for protocol version {CODEX}, older than the running server's ({CLAUDE_CODE}): pid {pids[1]} is its own" in shared.host_logs()


def test_a_session_asking_a_newer_protocol_version_than_agreed_shares_the_server(shared):
    """Codex first, Claude Code second: Claude Code is offered the older version and takes it."""
    answers, tools, pids, listed = _serve_both(shared, CODEX, CLAUDE_CODE)
    assert [a["result"]["protocolVersion"] for a in answers] == [CODEX, CODEX]
    assert tools[0] == tools[1] and "report" in tools[0]
    assert pids[0] == pids[1] and len(shared.started()) == 1
    assert [(h["pid"], h["protocol"], h["sessions"]) for h in listed] == [(pids[0], CODEX, 2)]


# --------------------------------------------------------------------------- workspaces and keys


def test_another_workspace_gets_its_own_server_and_an_env_change_a_new_one(shared):
    (shared.a / ".env").write_text(f"WHO=a\nSECRET={CANARY}\n")
    shared.model(
        f"  srv:\n    {shared.server()}\n    shared: true\n    linger: {LINGER}\n",
        f"  {shared.a}:\n    srv: {{env_files: [.env]}}\n  {shared.b}:\n    srv: {{env: {{WHO: b}}}}\n",
    )

    async def report(client: Client) -> dict:
        return _text(await client.call_tool("report", {}))

    async def run():
        async with shared.client(shared.b) as in_b, shared.client(shared.a) as old_a:
            before_b, first_a = await report(in_b), await report(old_a)
            (shared.a / ".env").write_text(f"WHO=a-changed\nSECRET={CANARY}\n")
            async with shared.client(shared.a) as new_a:
                changed_a = await report(new_a)
            return before_b, first_a, changed_a, await report(old_a), await report(in_b)

    before_b, first_a, changed_a, still_a, after_b = asyncio.run(run())
    assert (first_a["cwd"], first_a["env"]["WHO"], before_b["cwd"], before_b["env"]["WHO"]) == (str(shared.a), "a", str(shared.b), "b")
    assert len({first_a["pid"], before_b["pid"], changed_a["pid"]}) == 3
    assert changed_a["env"]["WHO"] == "a-changed"
    assert still_a["pid"] == first_a["pid"] and still_a["env"]["WHO"] == "a"  # the old host serves its own sessions
    assert after_b["pid"] == before_b["pid"]
    assert len(shared.started()) == 3
    on_disk = " ".join(os.listdir(shared.hosts)) + shared.host_logs() + shared.log.read_text()
    assert CANARY not in on_disk


def test_sessions_that_pass_or_drop_xdg_runtime_dir_share_one_server_and_ps_finds_it_from_any_shell(shared, tmp_path):
    """Claude Code passes XDG_RUNTIME_DIR on to the servers it starts, Codex clears it: their
    sessions of one workspace share one host all the same, and `ps` finds it whatever the shell
    has."""
    dropped = {name: value for name, value in shared.env.items() if name != "XDG_RUNTIME_DIR"}
    other = dict(shared.env, XDG_RUNTIME_DIR=str(tmp_path))

    async def run():
        async with shared.client(shared.a) as passed_on, shared.client(shared.a, env=dropped) as cleared:
            pids = {await _pid(passed_on), await _pid(cleared)}
            listed = [json.loads(shared.projector("ps", "--json", env=env).stdout)["hosts"] for env in (shared.env, dropped, other)]
            return pids, listed

    pids, listed = asyncio.run(run())
    assert len(pids) == 1 and len(shared.started()) == 1 and len(shared.sockets()) == 1
    assert [[(h["pid"], h["sessions"]) for h in hosts] for hosts in listed] == [[(*pids, 2)]] * 3


def test_no_tools_cwd_or_environment_cross_between_workspaces_sharing_one_provider(shared):
    shared.model(
        f"  srv:\n    command: {sys.executable}\n    args: [{SERVER}]\n    shared: true\n",
        f"  {shared.a}:\n    srv: {{args: [{SERVER}, --tool, alpha], env: {{WHO: {CANARY}-a}}}}\n"
        f"  {shared.b}:\n    srv: {{args: [{SERVER}, --tool, beta], env: {{WHO: {CANARY}-b}}}}\n",
    )

    async def run():
        async with shared.client(shared.a) as a1, shared.client(shared.b) as b1, shared.client(shared.a) as a2, \
                shared.client(shared.b) as b2:
            listed = await asyncio.gather(*(c.list_tools() for c in (a1, b1, a2, b2)))
            reports = await asyncio.gather(a1.call_tool("alpha", {}), b1.call_tool("beta", {}), a2.call_tool("alpha", {}),
                                           b2.call_tool("beta", {}))
            wrong = await a2.call_tool("beta", {})  # B's tool does not exist in A
            return [[t.name for t in listing.tools] for listing in listed], [_text(r) for r in reports], wrong

    names, (in_a, in_b, again_a, again_b), wrong = asyncio.run(run())
    assert names == [["alpha"], ["beta"], ["alpha"], ["beta"]]
    assert (in_a["cwd"], in_a["env"]["WHO"], in_b["cwd"], in_b["env"]["WHO"]) == (str(shared.a), f"{CANARY}-a", str(shared.b), f"{CANARY}-b")
    assert in_a["pid"] == again_a["pid"] != in_b["pid"] == again_b["pid"]
    assert wrong.is_error
    assert len(shared.started()) == 2


def test_sharing_happens_only_where_declared(shared):
    shared.model(
        f"  srv:\n    {shared.server()}\n  own:\n    {shared.server()}\n    shared: true\n",
        f"  {shared.a}:\n    srv: {{shared: true, linger: {LINGER}}}\n",
    )

    async def pids(folder: Path, provider: str) -> set[int]:
        async with shared.client(folder, provider) as one, shared.client(folder, provider) as two:
            return {await _pid(one), await _pid(two)}

    assert len(asyncio.run(pids(shared.a, "srv"))) == 1  # the binding shares it in a
    assert len(asyncio.run(pids(shared.b, "srv"))) == 2  # not in b
    assert len(asyncio.run(pids(shared.b, "own"))) == 1  # the provider shares it everywhere


def test_a_trusted_project_file_can_share_its_own_server(shared):
    shared.model(f"  srv:\n    {shared.server()}\n")
    (shared.a / ".projector.yaml").write_text(f"providers:\n  mine:\n    {shared.server()}\n    shared: true\n    linger: {LINGER}\n")
    assert shared.projector("trust", str(shared.a), "--config", str(shared.config)).returncode == 0

    async def run():
        async with shared.client(shared.a, "mine") as one, shared.client(shared.a, "mine") as two:
            return {await _pid(one), await _pid(two)}

    assert len(asyncio.run(run())) == 1


# --------------------------------------------------------------------------- lifetime and faults


def test_the_server_outlives_its_last_session_by_linger_then_it_and_its_socket_are_gone(shared):
    # 3 s, not the module's 1 s: the host's linger starts when the bridge hangs up, before the client
    # has seen the bridge exit and the test looks (below: ``ended``), which a loaded machine can
    # stretch to a second; the server gone sooner than 2 s after ``ended`` did not linger
    linger = 3
    shared.model(f"  srv:\n    {shared.server()}\n    shared: true\n    linger: {linger}\n")

    async def run():
        async with shared.client(shared.a) as client:
            return await _pid(client)

    pid = asyncio.run(run())
    ended = time.monotonic()
    (sock,) = shared.sockets()
    assert alive(pid)
    assert eventually(lambda: not alive(pid) and not sock.exists())
    assert time.monotonic() - ended >= linger - 1
    assert f"no session for {linger} s" in shared.host_logs()


def test_a_killed_server_fails_the_requests_in_flight_and_the_next_session_starts_a_fresh_one(shared):
    async def run():
        async with shared.client(shared.a) as client:
            pid = await _pid(client)
            call = asyncio.create_task(client.call_tool("slow", {"tag": "doomed", "seconds": 60, "steps": 1}))
            await _wait_for(lambda: any(e.get("started") == "doomed" for e in shared.seen()))
            os.kill(pid, signal.SIGKILL)
            with anyio.fail_after(15):
                try:
                    outcome = await call
                except MCPError as failure:
                    outcome = failure
        return pid, outcome

    pid, outcome = asyncio.run(run())
    assert isinstance(outcome, MCPError) and "exited (killed by signal 9)" in str(outcome)

    async def next_session():
        async with shared.client(shared.a) as client:
            return await _pid(client)

    assert asyncio.run(next_session()) not in (pid, None)
    assert len(shared.started()) == 2


def test_a_stale_socket_from_a_crashed_host_is_replaced(shared):
    async def run():
        async with shared.client(shared.a) as client:
            return await _pid(client)

    first = asyncio.run(run())
    (sock,) = shared.sockets()
    host = json.loads(subprocess.run([sys.executable, "-c", f"from projector.runtime.host import attach, STATUS; import json; print(json.dumps(attach.ask({str(sock)!r}, STATUS)))"],
                                     env=shared.env, capture_output=True, text=True, check=True).stdout)
    os.kill(host["pid"], signal.SIGKILL)  # the host crashes: its socket stays behind
    os.kill(first, signal.SIGKILL)
    assert sock.exists()
    second = asyncio.run(run())
    assert second != first and len(shared.started()) == 2


def test_a_session_that_disconnects_mid_request_has_it_cancelled_at_the_server(shared):
    async def keep_open():
        async with shared.client(shared.a) as other:  # keeps the host and server alive
            await _pid(other)
            raw = RawSession(shared, shared.a)
            raw.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "slow", "arguments": {"tag": "abandoned", "seconds": 60, "steps": 1}}})
            await _wait_for(lambda: any(e.get("started") == "abandoned" for e in shared.seen()))
            raw.process.kill()  # the client's process goes, its pipes still open
            raw.process.wait()
            await _wait_for(lambda: any(e.get("cancelled") == "abandoned" for e in shared.seen()))
            return await _pid(other)

    asyncio.run(keep_open())
    started = next(e for e in shared.seen() if e.get("started") == "abandoned")
    assert {"cancelled": "abandoned", "request_id": started["request_id"]} in shared.seen()


def test_sessions_started_at_the_same_instant_get_one_host(shared):
    async def run(count: int) -> list[int]:
        pids: list[int] = []
        everyone = asyncio.Event()

        async def session() -> None:
            async with shared.client(shared.a) as client:  # all five start together, each in its own task
                pids.append(await _pid(client))
                if len(pids) == count:
                    everyone.set()
                await everyone.wait()

        await asyncio.gather(*(session() for _ in range(count)))
        return pids

    pids = asyncio.run(run(5))
    assert len(set(pids)) == 1 and len(shared.started()) == 1 and len(shared.sockets()) == 1
    assert shared.host_logs().count("started srv") == 1


# --------------------------------------------------------------------------- who may attach


def test_a_socket_or_folder_not_private_to_this_user_is_never_used(shared):
    """Simulated with modes (and, as root, an owner) that another user's planted socket or an
    open folder would have: the session runs its own server and says why."""

    async def run():
        async with shared.client(shared.a) as client:
            return await _pid(client)

    host_server = None

    async def hold():
        nonlocal host_server
        async with shared.client(shared.a) as client:
            host_server = await _pid(client)
            (sock,) = shared.sockets()
            if os.geteuid() == 0:
                os.chown(sock, 65534, 65534)  # as if another user had put it there
                expected = "belongs to another user (uid 65534)"
            else:
                sock.chmod(0o666)
                expected = "is open to other users"
            unshared = await run()
            shared.hosts.chmod(0o755)
            open_folder = await run()
            shared.hosts.chmod(0o700)
            if os.geteuid() == 0:
                os.chown(sock, 0, 0)
            sock.chmod(0o600)
            return unshared, open_folder, expected

    unshared, open_folder, expected = asyncio.run(hold())
    assert len({host_server, unshared, open_folder}) == 3
    logged = shared.log.read_text()
    assert f"srv runs unshared in this session: {shared.sockets()[0]} {expected}" in logged
    assert f"{shared.hosts} is open to other users (mode 755)" in logged


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another user (SO_PEERCRED check)")
def test_the_host_refuses_a_connection_from_another_user(shared):
    """SO_PEERCRED, with the folder and socket opened up so that another uid can reach the
    socket at all: a process that became uid 65534 connects and is closed without a greeting."""

    async def run():
        async with shared.client(shared.a) as client:
            await _pid(client)
            (sock,) = shared.sockets()
            shared.hosts.chmod(0o755)
            sock.chmod(0o666)
            probe = (  # the folder is opened as root: its private ancestors (pytest's) are passed over
                f"import os, socket\nfolder = os.open({str(shared.hosts)!r}, os.O_PATH)\nos.setgid(65534)\nos.setuid(65534)\n"
                f"s = socket.socket(socket.AF_UNIX)\ns.connect(f'/proc/self/fd/{{folder}}/{sock.name}')\ns.settimeout(5)\n"
                "print(repr(s.recv(100)))\n"
            )
            done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30, check=False)
            shared.hosts.chmod(0o700)
            sock.chmod(0o600)
            return done, await _pid(client)

    done, _ = asyncio.run(run())
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "b''"  # connected, then closed: no greeting, nothing served
    assert "refused a connection from uid 65534" in shared.host_logs()


def test_a_session_whose_stdio_are_files_is_served_and_harms_no_other(shared, tmp_path):
    """stdin and stdout may be regular files (a script, `< requests.jsonl > replies.jsonl`), which
    no poller accepts: the host reads and writes them directly, and the other sessions go on."""
    requests, replies = tmp_path / "requests.jsonl", tmp_path / "replies.jsonl"
    requests.write_text(
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "file", "version": "1"}}}) + "\n"
        + json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"tag": "from-a-file"}}}) + "\n"
    )

    async def run():
        async with shared.client(shared.a) as other:
            before = await _pid(other)
            with requests.open("rb") as stdin, replies.open("wb") as stdout:
                subprocess.run(shared.bridge(), cwd=shared.a, env=shared.env, stdin=stdin, stdout=stdout, timeout=30, check=True)
            return before, await _pid(other)

    before, after = asyncio.run(run())
    assert before == after
    answers = [json.loads(line) for line in replies.read_text().splitlines()]
    assert [a["id"] for a in answers] == [0, 1] and json.loads(answers[1]["result"]["content"][0]["text"])["tag"] == "from-a-file"


STUBBORN = '''import json, os, signal, sys, time
def noted(signum, frame):  # ignored, but its moment is written down for the test
    open(os.environ["STUBBORN_PID"] + ".term", "w").write(repr(time.monotonic()))
signal.signal(signal.SIGTERM, noted)
open(os.environ["STUBBORN_PID"], "w").write(str(os.getpid()))
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"protocolVersion": "2025-11-25",
              "capabilities": {}, "serverInfo": {"name": "stubborn", "version": "1"}}}), flush=True)
while True:  # its stdin ended: it stays anyway
    time.sleep(1)
'''


def test_a_server_that_ignores_sigterm_is_killed_five_seconds_later(shared, tmp_path):
    (tmp_path / "stubborn.py").write_text(STUBBORN)
    shared.env["STUBBORN_PID"] = str(tmp_path / "stubborn.pid")
    shared.model(f"  srv:\n    command: {sys.executable}\n    args: [{tmp_path / 'stubborn.py'}]\n    shared: true\n    linger: 0\n")
    with RawSession(shared, shared.a):
        pid = int((tmp_path / "stubborn.pid").read_text())
    time.sleep(1.0)
    assert alive(pid)  # the SIGTERM it got at once (linger 0) did not stop it
    assert eventually(lambda: not alive(pid), timeout=15)
    # CLOCK_MONOTONIC is one clock for every process: from the SIGTERM the server saw to its end.
    # The stamp is taken when the server's handler runs, which a loaded machine delays past the
    # signal itself (by 14 ms, seen on two cores at load 13): a quarter second is allowed for it.
    terminated = float((tmp_path / "stubborn.pid.term").read_text())
    assert time.monotonic() - terminated >= 5.0 - 0.25
    assert "did not stop within 5 s of SIGTERM: SIGKILL" in shared.host_logs()


def _host_pid(shared) -> int:
    (sock,) = shared.sockets()
    asked = f"from projector.runtime.host import attach, STATUS; import json; print(json.dumps(attach.ask({str(sock)!r}, STATUS)))"
    return json.loads(subprocess.run([sys.executable, "-c", asked], env=shared.env, capture_output=True, text=True, check=True).stdout)["pid"]


WITH_A_CHILD = """import subprocess
child = subprocess.Popen([sys.executable, "-c", "import signal, time\\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\\nwhile True: time.sleep(1)"])
open(os.environ["STUBBORN_PID"] + ".child", "w").write(str(child.pid))
"""


def test_a_server_that_ignores_its_stdin_end_dies_with_a_killed_host_and_so_does_what_it_started(shared, tmp_path):
    (tmp_path / "stubborn.py").write_text(STUBBORN.replace("for line in sys.stdin:", WITH_A_CHILD + "for line in sys.stdin:"))
    shared.env["STUBBORN_PID"] = str(tmp_path / "stubborn.pid")
    shared.model(f"  srv:\n    command: {sys.executable}\n    args: [{tmp_path / 'stubborn.py'}]\n    shared: true\n")
    with RawSession(shared, shared.a) as session:
        server, child = (int((tmp_path / name).read_text()) for name in ("stubborn.pid", "stubborn.pid.child"))
        assert alive(server) and alive(child)
        os.kill(_host_pid(shared), signal.SIGKILL)  # no code of the host's runs: it cannot stop its server
        assert eventually(lambda: not alive(server) and not alive(child), timeout=10)
        assert session.process.wait(timeout=10) == 0  # the session's process ends with its host too
    assert json.loads(shared.projector("ps", "--json").stdout)["hosts"] == []


def test_an_ending_host_leaves_no_start_lock_and_removes_dead_sockets_but_never_a_held_lock(shared):
    async def sessions():
        async with shared.client(shared.a) as in_a, shared.client(shared.b) as in_b:
            return {await _pid(in_a), await _pid(in_b)}

    shared.hosts.mkdir(parents=True, mode=0o700)
    (shared.hosts / f"{'0' * 32}.lock").touch()  # a session that crashed while starting a host left it
    dead = socket_file(shared.hosts / f"{'1' * 32}.sock")  # a host that crashed (or a reboot) left it
    held = shared.hosts / f"{'2' * 32}.lock"
    holder = subprocess.Popen([sys.executable, "-c", f"import fcntl, os, sys\nfd = os.open({str(held)!r}, os.O_RDWR | os.O_CREAT)\n"
                               "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\nsys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"  # a session starting a host holds it now
    try:
        pids = asyncio.run(sessions())
        assert len(pids) == 2
        assert eventually(lambda: not any(alive(pid) for pid in pids) and not shared.sockets())
        assert eventually(lambda: sorted(p.name for p in shared.hosts.iterdir() if not p.name.endswith((".log", ".log.1"))) == [held.name])
        assert not dead.exists()
    finally:
        holder.communicate("")


def socket_file(path: Path) -> Path:
    """A socket nothing listens on any more, as a crashed host leaves it."""
    import socket

    probe = socket.socket(socket.AF_UNIX)
    here = os.getcwd()
    os.chdir(path.parent)  # the path may be longer than a socket address holds
    try:
        probe.bind(path.name)
    finally:
        os.chdir(here)
        probe.close()
    return path
