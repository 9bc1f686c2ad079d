"""The bridge against a hostile provider (issue 25, items 5, 6, 11 and 12): endless interim
answers, SSE lines and events without end, proxy settings it cannot use, and what it says when a
provider breaks HTTP. Each provider here is tests/servers/faulty.py on 127.0.0.1, bounded in time
and bytes; each test failed before its fix."""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path

import pytest
from test_bridge import INIT, INITIALIZED, Layout, Raw
from test_hardening import stderr_text, until
from test_transport import ConnectProxy

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": {}}}
MiB = 1 << 20


def peak_rss(bridge: Raw) -> int:
    """The bridge's peak resident memory so far (VmHWM), in bytes."""
    status = Path(f"/proc/{bridge.process.pid}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) * 1024


def opened(faulty, tmp_path, fault: str, settings: str = "", *extra: str) -> tuple[object, Raw]:
    """A bridge whose session with the ``fault`` provider is open (initialize answered)."""
    server = faulty(fault)
    bridge = Raw(Layout(tmp_path, server.url, settings=settings), "work/a", *extra)
    bridge.send(INIT, INITIALIZED)
    assert "result" in bridge.receive()
    return server, bridge


# --------------------------------------------------------------------------- 5: interim answers


def test_endless_interim_answers_end_in_an_error(faulty, tmp_path):
    """103 Early Hints, fifty every 10 ms and never a final answer (to the call and to the
    DELETE): the call gets an error at once, and the session ends at once."""
    _, bridge = opened(faulty, tmp_path, "early-hints")
    started = time.monotonic()
    bridge.send(CALL)
    answer = bridge.receive(timeout=20)
    assert time.monotonic() - started < 3, "not after the provider's timeout: at the bound"
    message = answer["error"]["message"]
    assert answer["id"] == 1 and "interim (1xx) answers and no final one" in message, message
    assert "cannot reach" not in message
    started = time.monotonic()
    assert bridge.close(timeout=20) == 0
    assert time.monotonic() - started < 3
    assert "Traceback" not in stderr_text(bridge)


@pytest.mark.parametrize("fault", ["early-hints", "sse-chatter"])
def test_a_signal_ends_a_session_whose_provider_floods_it(faulty, tmp_path, fault):
    """A provider that never stops sending (interim heads; comment lines on an SSE stream): the
    bridge goes back to its loop between rounds of reading, so SIGTERM ends it promptly."""
    server, bridge = opened(faulty, tmp_path, fault)
    bridge.send(CALL)
    until(lambda: "tools/call" in server.methods())
    time.sleep(0.5)
    started = time.monotonic()
    bridge.process.send_signal(signal.SIGTERM)
    assert bridge.process.wait(timeout=20) == 0
    assert time.monotonic() - started < 3
    assert bridge.receive(timeout=1)["id"] == 1
    assert "Traceback" not in stderr_text(bridge)


# --------------------------------------------------------------------------- 6: SSE size


@pytest.mark.parametrize(("fault", "what"), [("sse-long-line", "a line longer than 256 MiB"),
                                             ("sse-long-event", "an event larger than 256 MiB")])
def test_an_sse_event_without_end_is_bounded(faulty, tmp_path, fault, what):
    """`data: xxxx…` without a line end, or `data:` lines without the blank line that ends an
    event: at 256 MiB (a JSON answer's limit too) the call gets an error and the stream is
    closed; the bridge's memory stays near that."""
    _, bridge = opened(faulty, tmp_path, fault)
    bridge.send(CALL)
    answer = bridge.receive(timeout=60)
    assert answer["id"] == 1 and what in answer["error"]["message"], answer
    assert peak_rss(bridge) < 256 * MiB + 96 * MiB
    assert bridge.close() == 0


def test_a_retry_too_long_to_be_a_number_is_ignored(faulty, tmp_path):
    """`retry:` of 5,000 digits (past Python's int-from-text limit, 4,300): a field the SSE spec
    says to ignore when it is no number, not a crash of the bridge; the answer after it arrives."""
    _, bridge = opened(faulty, tmp_path, "sse-long-retry")
    bridge.send(CALL)
    assert bridge.receive() == {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}
    assert bridge.close() == 0
    assert "Traceback" not in stderr_text(bridge)


def test_an_event_id_outside_latin_1_is_sent_back_as_its_utf_8_bytes(faulty, tmp_path):
    """`id: €-1` on a stream that ends before the answer: the resumption's Last-Event-ID carries
    the id's UTF-8 bytes, and the call gets the provider's answer to it (http.client refused the
    text: no resumption left the bridge, and the call was told the stream ended three times)."""
    server, bridge = opened(faulty, tmp_path, "sse-odd-id")
    bridge.send(CALL)
    answer = bridge.receive()
    assert answer["id"] == 1 and "could not be resumed (HTTP 405)" in answer["error"]["message"], answer  # the provider's word
    assert bridge.close() == 0
    assert "Traceback" not in stderr_text(bridge)
    resumed = [r["last_event_id"] for r in server.requests if r["method"] == "GET"]
    assert len(resumed) == 1 and resumed[0].encode("latin-1").decode() == "\u20ac-1", resumed


def test_a_listening_stream_without_line_ends_is_closed_with_a_log_line(faulty, tmp_path):
    log = tmp_path / "bridge.log"
    server, bridge = opened(faulty, tmp_path, "listen-long-line", "    listen: true\n", "--log-file", str(log))
    until(lambda: log.exists() and "listening stream" in log.read_text(), seconds=60)
    assert "a line longer than 256 MiB" in log.read_text() and "closed" in log.read_text()
    assert peak_rss(bridge) < 256 * MiB + 96 * MiB
    bridge.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert bridge.receive()["id"] == 2, "the session goes on"
    assert bridge.close() == 0
    assert server.methods().count("GET") == 1, "not opened again"


# --------------------------------------------------------------------------- 11: proxy settings


@pytest.mark.parametrize(("variable", "value", "words"), [
    ("HTTP_PROXY", "https://user:s3cret@127.0.0.1:9", "names an https:// proxy"),
    ("ALL_PROXY", "socks5://127.0.0.1:9", "names a socks5:// proxy"),
    ("HTTP_PROXY", "http://user:s3cret@[::1", "is not a proxy URL"),
    ("HTTP_PROXY", "http://user:s3cret@127.0.0.1:99999", "is not a proxy URL"),
])
def test_a_proxy_setting_projector_cannot_use_is_a_json_rpc_error(tmp_path, variable, value, words):
    layout = Layout(tmp_path, "http://127.0.0.1:9/mcp")
    bridge = Raw(layout, "work/a", env=dict(layout.env, **{variable: value}))
    bridge.send(INIT)
    message = bridge.receive()["error"]["message"]
    assert f"${variable}" in message and words in message, message
    assert "http://HOST:PORT" in message
    assert bridge.close() == 0
    assert "Traceback" not in stderr_text(bridge) and "s3cret" not in stderr_text(bridge) + message


# --------------------------------------------------------------------------- 12: what the messages say


def test_bad_chunked_framing_is_said_to_be_the_providers(faulty, tmp_path):
    server, bridge = opened(faulty, tmp_path, "bad-chunked")
    bridge.send(CALL)
    message = bridge.receive()["error"]["message"]
    port = server.server.server_address[1]
    assert message == (f"projector: the provider at http://127.0.0.1:{port} sent a broken answer: bad chunked framing "
                       "(a chunk size that is not hexadecimal)"), message
    assert bridge.close() == 0


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_proxy_that_refuses_is_named_as_the_proxy(tmp_path, scheme):
    """http: nothing listens where the proxy should be; https: the proxy refuses the tunnel."""
    if scheme == "http":
        with socket.socket() as unused:
            unused.bind(("127.0.0.1", 0))
            port = unused.getsockname()[1]  # nothing listens there once closed
        variable, refused = "HTTP_PROXY", "refused the connection"
    else:
        proxy = ConnectProxy(refusal="403 Forbidden")
        port, variable, refused = proxy.port, "HTTPS_PROXY", "refused the tunnel (403 Forbidden)"
    layout = Layout(tmp_path, f"{scheme}://127.0.0.1:9/mcp")
    bridge = Raw(layout, "work/a", env=dict(layout.env, **{variable: f"http://127.0.0.1:{port}"}))
    bridge.send(INIT)
    message = bridge.receive()["error"]["message"]
    assert message == (f"projector: cannot reach the provider at {scheme}://127.0.0.1:9: the proxy at 127.0.0.1:{port} "
                       f"(from ${variable}) {refused}"), message
    assert bridge.close() == 0
    if scheme == "https":
        proxy.close()


def test_a_body_that_never_ends_says_so(faulty, tmp_path):
    """An answer whose head came but whose body stalls: not the hint about `listen: true`,
    which is for a stream waiting on something the server asked outside the request."""
    _, bridge = opened(faulty, tmp_path, "endless-body", "    timeout: 2\n")
    bridge.send(CALL)
    message = bridge.receive()["error"]["message"]
    assert message.startswith("projector: the answer of provider docs to tools/call (HTTP 200) began but its body "
                              "did not end within 2 s"), message
    assert "listen" not in message
    assert bridge.close() == 0
