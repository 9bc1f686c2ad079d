"""The bridge against a fault-injecting upstream (tests/servers/faulty.py) and hostile input: each
test here failed before its fix (issue 11 items 3, 9–13 and 17; issue 12 item 8)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
from test_bridge import INIT, INITIALIZED, Layout, Raw

TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def until(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def stderr_text(bridge: Raw) -> str:
    return b"".join(bridge.stderr).decode("utf-8", "replace")


# --------------------------------------------------------------------------- 9: signals and EOF while waiting


def test_a_signal_ends_a_session_whose_initialize_stalls(faulty, tmp_path):
    server = faulty("stall-init")
    bridge = Raw(Layout(tmp_path, server.url), "work/a")
    bridge.send(INIT)
    until(lambda: server.methods() == ["initialize"])
    started = time.monotonic()
    bridge.process.send_signal(signal.SIGTERM)
    assert bridge.process.wait(timeout=10) == 0
    assert time.monotonic() - started < 3
    answer = bridge.receive(timeout=1)
    assert answer["id"] == 0 and "stopped" in answer["error"]["message"]


@pytest.mark.parametrize("how", ["signal", "eof"])
def test_a_stalled_notification_does_not_keep_the_bridge_alive(faulty, tmp_path, how):
    server = faulty("stall-note")
    bridge = Raw(Layout(tmp_path, server.url), "work/a")
    bridge.send(INIT)
    assert "result" in bridge.receive()
    bridge.send(INITIALIZED, TOOLS_LIST)
    until(lambda: "notifications/initialized" in server.methods())
    started = time.monotonic()
    if how == "signal":
        bridge.process.send_signal(signal.SIGTERM)
    else:
        bridge.process.stdin.close()
    assert bridge.process.wait(timeout=15) == 0
    assert time.monotonic() - started < (3 if how == "signal" else 8)  # EOF: replies in flight get 5 s
    assert bridge.receive(timeout=1)["error"]["message"].startswith("projector: the session")
    assert server.methods()[-1] == "DELETE" and server.requests[-1]["session"] == "session-1"


# --------------------------------------------------------------------------- 10: retry


def test_an_absurd_sse_retry_is_capped(faulty, tmp_path):
    server = faulty("huge-retry")
    bridge = Raw(Layout(tmp_path, server.url), "work/a")
    bridge.send(INIT, INITIALIZED, TOOLS_LIST)
    bridge.receive()
    answer = bridge.receive(timeout=10)  # retry: 100000000 (28 hours) asked; the cap is 5 s
    assert answer == {"jsonrpc": "2.0", "id": 1, "result": {"tools": [], "resumed": True}}
    resume = [r for r in server.requests if r["method"] == "GET"]
    assert [r["last_event_id"] for r in resume] == ["cut-1"]
    assert bridge.close() == 0


# --------------------------------------------------------------------------- 11: lone surrogates


def test_a_lone_surrogate_in_a_notification_is_passed_on_in_proxy_mode(faulty, tmp_path):
    server = faulty()
    bridge = Raw(Layout(tmp_path, server.url), "work/a")
    bridge.send(INIT, INITIALIZED, '{"jsonrpc":"2.0","method":"notifications/progress","params":{"note":"\\ud800"}}', TOOLS_LIST)
    bridge.receive()
    assert bridge.receive() == {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}
    assert bridge.close() == 0
    assert "notifications/progress" in server.methods() and server.methods()[-1] == "DELETE"
    assert "Traceback" not in stderr_text(bridge)


def test_a_lone_surrogate_in_a_method_name_is_answered_in_no_kb_mode(tmp_path):
    bridge = Raw(Layout(tmp_path, "http://127.0.0.1:9/mcp"), "work/a/vendor")
    bridge.send(INIT, '{"jsonrpc":"2.0","id":1,"method":"\\ud800"}')
    bridge.receive()
    assert bridge.receive()["error"] == {"code": -32601, "message": "Method not found: \ud800"}
    assert bridge.close() == 0
    assert "Traceback" not in stderr_text(bridge)


# --------------------------------------------------------------------------- 12, 13: what comes back


def test_an_answer_that_is_not_json_rpc_becomes_an_error_for_that_id(faulty, tmp_path):
    server = faulty("not-rpc")
    bridge = Raw(Layout(tmp_path, server.url), "work/a")
    bridge.send(INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    bridge.receive()
    line = bridge.lines.get(timeout=15)
    answer = json.loads(line)
    assert b"hello" not in line
    assert answer["id"] == 2 and answer["error"]["code"] == -32603
    assert answer["error"]["message"] == "projector: the provider's answer is not a JSON-RPC response"
    assert bridge.close() == 0


def test_a_404_on_the_retry_too_says_what_happened(faulty, tmp_path):
    server = faulty("gone")
    bridge = Raw(Layout(tmp_path, server.url), "work/a")
    bridge.send(INIT, INITIALIZED, TOOLS_LIST)
    bridge.receive()
    message = bridge.receive()["error"]["message"]
    assert "HTTP 404" in message and "failed again" in message and "new session" in message
    assert bridge.close() == 0
    assert [r["rpc"] for r in server.requests if r["rpc"] == "initialize"] == ["initialize", "initialize"]


# --------------------------------------------------------------------------- 3: token values


@pytest.mark.parametrize("value", ["abc\ndef-secret-canary", "t\u00f6k\u00e9n-secret-canary", "abc\x7fsecret-canary"])
def test_a_malformed_token_is_named_never_shown(faulty, tmp_path, value):
    server = faulty()
    layout = Layout(tmp_path, server.url)
    log = tmp_path / "bridge.log"
    bridge = Raw(layout, "work/a", "--log-file", str(log), env=dict(layout.env, DOCS_TOKEN=value))
    bridge.send(INIT)
    line = bridge.lines.get(timeout=15)
    message = json.loads(line)["error"]["message"]
    assert "$DOCS_TOKEN" in message and "a header cannot carry" in message
    assert bridge.close() == 0
    everything = line + b"".join(bridge.stderr) + log.read_bytes()
    assert b"secret-canary" not in everything and "secret-canary".encode("unicode_escape") not in everything
    assert server.requests == [], "nothing went up with a broken token"


# --------------------------------------------------------------------------- 17 and issue 12 item 8


def test_a_log_file_in_a_missing_folder_is_said_and_the_session_goes_on(faulty, tmp_path):
    server = faulty()
    bridge = Raw(Layout(tmp_path, server.url), "work/a", "--log-file", str(tmp_path / "missing" / "bridge.log"))
    bridge.send(INIT)
    assert "result" in bridge.receive()
    assert bridge.close() == 0
    assert "cannot write the log file" in stderr_text(bridge) and "Traceback" not in stderr_text(bridge)


def test_a_log_file_the_bridge_creates_is_readable_by_its_user_alone(faulty, tmp_path):
    """It holds no token, but the URLs, folders and errors of a person's sessions: 0600 whatever
    the umask; one the person made already keeps the mode they gave it."""
    import os
    import stat

    server = faulty()
    created, theirs = tmp_path / "bridge.log", tmp_path / "theirs.log"
    theirs.write_text("")
    theirs.chmod(0o640)
    old = os.umask(0o022)  # the bridge inherits the usual umask, which would leave a new file 0644
    try:
        bridges = [Raw(Layout(tmp_path, server.url), "work/a", "--log-file", str(log)) for log in (created, theirs)]
    finally:
        os.umask(old)
    for bridge in bridges:
        bridge.send(INIT)
        assert "result" in bridge.receive()
        assert bridge.close() == 0
    assert stat.S_IMODE(created.stat().st_mode) == 0o600
    assert stat.S_IMODE(theirs.stat().st_mode) == 0o640


def test_an_empty_batch_gets_an_invalid_request_error(tmp_path):
    bridge = Raw(Layout(tmp_path, "http://127.0.0.1:9/mcp"), "work/a/vendor")
    bridge.send(INIT, "[]")
    bridge.receive()
    assert bridge.receive() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid request: an empty batch"}}
    assert bridge.close() == 0


def test_help_prints_the_usage_and_exits_0():
    done = subprocess.run([sys.executable, "-m", "projector", "mcp", "--help"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout.startswith("usage: projector mcp --provider NAME") and done.stderr == ""


def test_no_token_warning_where_no_kb_is_shown(tmp_path):
    layout = Layout(tmp_path, "http://127.0.0.1:9/mcp")
    env = {k: v for k, v in layout.env.items() if k != "DOCS_TOKEN"}
    bridge = Raw(layout, "work/a/vendor", env=env)
    bridge.send(INIT)
    assert "result" in bridge.receive()
    assert bridge.close() == 0
    assert "DOCS_TOKEN" not in stderr_text(bridge)


def test_a_notification_sent_just_before_eof_reaches_the_server_before_the_delete(faulty, tmp_path):
    server = faulty()
    bridge = Raw(Layout(tmp_path, server.url), "work/a")
    bridge.send(INIT)
    bridge.receive()
    bridge.send(INITIALIZED)
    assert bridge.close() == 0  # what bench-bridges' spawn-only runs do
    assert server.methods() == ["initialize", "notifications/initialized", "DELETE"]


# --------------------------------------------------------------------------- what passes through


def test_a_request_reaches_the_provider_as_the_client_wrote_it(faulty, tmp_path):
    """Numbers JSON allows but Python's floats do not keep (1e400, 0.1 written long) arrive
    unchanged: the client's own bytes are POSTed, not a re-encoding of them."""
    server = faulty()
    bridge = Raw(Layout(tmp_path, server.url), "work/a")
    bridge.send(INIT)
    assert "result" in bridge.receive()
    written = '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "t", "arguments": {"big": 1e400, "long": 0.10000000000000000555}}}'
    bridge.send(INITIALIZED, written)
    assert bridge.receive()["id"] == 7
    assert [r["body"] for r in server.requests if r["id"] == 7] == [written.encode()]
    assert bridge.close() == 0


@pytest.mark.parametrize("fault", ["float-id", "extra-member", "utf-16", "duplicate-id"])
def test_an_answer_another_parser_could_read_otherwise_is_written_anew(faulty, tmp_path, fault):
    """The provider's bytes go on to the client only when they say exactly what the bridge would
    write, to any parser: not with an id of another type (1.0 for 1), a member JSON-RPC has
    not, in UTF-16 (json.loads reads it; the client reads UTF-8 lines) or with the id twice."""
    server = faulty(fault)
    bridge = Raw(Layout(tmp_path, server.url), "work/a")
    bridge.send(INIT)
    assert "result" in bridge.receive()
    bridge.send(INITIALIZED, TOOLS_LIST)
    line = bridge.lines.get(timeout=15)
    assert json.loads(line) == {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}} and b'"id":1,' in line
    assert bridge.close() == 0


def test_signals_do_not_stretch_the_delete_at_the_end(faulty, tmp_path):
    """The DELETE that ends a session runs outside the loop, limited to 2 s; a signal that
    interrupts it must not start the limit again (the kernel's own does)."""
    server = faulty("stall-delete")
    bridge = Raw(Layout(tmp_path, server.url), "work/a")
    bridge.send(INIT, INITIALIZED)
    assert "result" in bridge.receive()
    # the notification through first: a signal while it is in flight cuts it, and the server's
    # threads could then record the DELETE before it (4 runs in 16 on a loaded machine)
    until(lambda: "notifications/initialized" in server.methods())
    started = time.monotonic()
    bridge.process.send_signal(signal.SIGTERM)
    while bridge.process.poll() is None and time.monotonic() - started < 8:
        time.sleep(0.3)
        if bridge.process.poll() is None:
            bridge.process.send_signal(signal.SIGHUP)
    assert bridge.process.wait(timeout=5) == 0
    assert time.monotonic() - started < 4
    assert server.methods()[-1] == "DELETE"


def test_a_notification_the_provider_never_answers_holds_back_nothing_for_long(faulty, tmp_path):
    """Notifications go up in the client's order, each after the one before is through; one the
    provider never answers is given up after the provider's `timeout`, and what follows goes on."""
    server = faulty("stall-note")
    bridge = Raw(Layout(tmp_path, server.url, settings="    timeout: 2\n"), "work/a", "--log-file", str(tmp_path / "log"))
    bridge.send(INIT)
    assert "result" in bridge.receive()
    bridge.send(INITIALIZED)
    time.sleep(1.0)
    bridge.send(TOOLS_LIST)
    assert "result" in bridge.receive(timeout=10), "answered once the notification was given up"
    assert "notifications/initialized got no answer from the provider within 2 s" in (tmp_path / "log").read_text()
    assert bridge.close() == 0
