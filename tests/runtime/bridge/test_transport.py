"""The bridge's HTTP transport against real peers on loopback: an https provider whose CA is a
throw-away one the system trusts through SSL_CERT_FILE, and a CONNECT proxy (HTTPS_PROXY)."""

from __future__ import annotations

import http.client
import select
import socket
import threading
import time

import pytest
from conftest import throwaway_ca
from test_bridge import INIT, INITIALIZED, Layout, Raw, kbs_sent, with_client

from projector.runtime.bridge.transport import Connection, endpoint

TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


class ConnectProxy:
    """A CONNECT-only HTTP proxy: records each tunnel asked for, then copies bytes both ways
    (``refusal``: answers each CONNECT with this status line instead)."""

    def __init__(self, refusal: str | None = None) -> None:
        self.refusal = refusal
        self.tunnels: list[tuple[str, str | None]] = []  # (host:port, Proxy-Authorization)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(client,), daemon=True).start()

    def _tunnel(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            data = client.recv(4096)
            if not data:
                return client.close()
            head += data
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        authorization = next((line.split(":", 1)[1].strip() for line in lines[1:] if line.lower().startswith("proxy-authorization:")), None)
        self.tunnels.append((target, authorization))
        if method != "CONNECT" or self.refusal:
            client.sendall(f"HTTP/1.1 {self.refusal or '405 Method Not Allowed'}\r\nContent-Length: 0\r\n\r\n".encode())
            return client.close()
        host, port = target.rsplit(":", 1)
        upstream = socket.create_connection((host, int(port)))
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        ends = [client, upstream]
        while True:
            ready, _, _ = select.select(ends, [], [], 30)
            if not ready:
                break
            for end in ready:
                data = end.recv(65536)
                if not data:
                    client.close(), upstream.close()
                    return None
                (upstream if end is client else client).sendall(data)

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def tls_server(kb_server, tmp_path):
    ca, cert, key = throwaway_ca(tmp_path)
    return kb_server(options=("--tls", str(cert), str(key))), ca


def test_an_https_provider_is_reached_with_the_systems_trust(tls_server, tmp_path):
    server, ca = tls_server
    layout = Layout(tmp_path, server.url)
    layout.env["SSL_CERT_FILE"] = str(ca)
    tools = with_client(layout.params("work/a"), lambda c: c.list_tools())
    assert any(t.name == "search" for t in tools.tools)
    assert kbs_sent(server) == {"kbs=api-a,handbook"}
    assert server.requests()[-1]["method"] == "DELETE"


def test_an_untrusted_certificate_is_a_clear_error(tls_server, tmp_path):
    server, _ = tls_server
    bridge = Raw(Layout(tmp_path, server.url), "work/a")
    bridge.send(INIT)
    message = bridge.receive()["error"]["message"]
    assert message.startswith("projector: cannot reach the provider at https://127.0.0.1:") and "certificate is not trusted" in message
    assert bridge.close() == 0
    assert server.requests() == []


@pytest.mark.parametrize("credentials", ["", "user:p%40ss@"])
def test_https_goes_through_the_proxy_in_a_connect_tunnel(tls_server, tmp_path, credentials):
    server, ca = tls_server
    proxy = ConnectProxy()
    layout = Layout(tmp_path, server.url)
    layout.env.update(SSL_CERT_FILE=str(ca), HTTPS_PROXY=f"http://{credentials}127.0.0.1:{proxy.port}", NO_PROXY="localhost")
    bridge = Raw(layout, "work/a")
    bridge.send(INIT, INITIALIZED, TOOLS_LIST)
    assert "result" in bridge.receive()
    assert "tools" in bridge.receive()["result"]
    assert bridge.close() == 0
    proxy.close()
    expected = "Basic dXNlcjpwQHNz" if credentials else None  # base64("user:p@ss")
    assert proxy.tunnels and set(proxy.tunnels) == {(f"127.0.0.1:{server.port}", expected)}
    assert [r["rpc"] or r["method"] for r in server.requests()] == ["initialize", "notifications/initialized", "tools/list", "DELETE"]


def test_no_proxy_sends_https_straight_to_the_provider(tls_server, tmp_path):
    server, ca = tls_server
    proxy = ConnectProxy()
    layout = Layout(tmp_path, server.url)
    layout.env.update(SSL_CERT_FILE=str(ca), HTTPS_PROXY=f"http://127.0.0.1:{proxy.port}", NO_PROXY="example.org,127.0.0.1")
    with_client(layout.params("work/a"), lambda c: c.list_tools())
    proxy.close()
    assert proxy.tunnels == [] and kbs_sent(server) == {"kbs=api-a,handbook"}


# --------------------------------------------------------------------------- header lines


def _request_head(connection: http.client.HTTPConnection, headers: list[tuple[str, str]]) -> list[bytes]:
    """The lines a request's head would be sent as (nothing is sent: no connection is opened)."""
    connection.putrequest("POST", "/mcp")
    for name, value in headers:
        connection.putheader(name, value)
    return list(connection._buffer)  # type: ignore[attr-defined]


def test_remembered_header_lines_are_http_clients_lines_and_still_checked():
    headers = [("Accept", "application/json, text/event-stream"), ("Authorization", "Bearer t0ken"),
               ("Mcp-Session-Id", "abc-123"), ("Content-Length", "42")]
    place = endpoint("http://127.0.0.1:9/mcp", {})
    expected = _request_head(http.client.HTTPConnection("127.0.0.1", 9), headers)
    assert _request_head(Connection(place, 1.0), headers) == expected
    assert _request_head(Connection(place, 1.0), headers) == expected, "the second time, from remembered lines"
    for value in ("abc\r\nX-Injected: 1", "abc\n"):  # what a provider's session id must never do to a request
        with pytest.raises(ValueError, match="Invalid header value"):
            _request_head(Connection(place, 1.0), [("Mcp-Session-Id", value)])


# --------------------------------------------------------------------------- waiting for an answer


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_slow_answer_holds_no_other_request_up(faulty, tmp_path, scheme):
    """Two calls whose answers begin at once but end 2 s later (the second on a new connection,
    which on https TLS 1.3's session tickets make readable before any answer): a request sent
    after them is answered at once. A blocking read of a head held every other request up."""
    ca, cert, key = throwaway_ca(tmp_path)
    server = faulty("slow-call", (str(cert), str(key)) if scheme == "https" else None)
    layout = Layout(tmp_path, server.url)
    layout.env["SSL_CERT_FILE"] = str(ca)
    bridge = Raw(layout, "work/a")
    bridge.send(INIT, INITIALIZED)
    assert "result" in bridge.receive()
    call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "slow", "arguments": {}}}
    bridge.send(dict(call, id="slow-1"), dict(call, id="slow-2"))
    time.sleep(0.3)
    sent = time.monotonic()
    bridge.send({"jsonrpc": "2.0", "id": "quick", "method": "tools/list"})
    first = bridge.receive()
    assert first["id"] == "quick" and time.monotonic() - sent < 1.0
    assert {bridge.receive()["id"], bridge.receive()["id"]} == {"slow-1", "slow-2"}
    assert bridge.close() == 0


def test_a_provider_that_takes_a_large_request_slowly_gets_the_timeout_not_more(faulty, tmp_path):
    """The kernel's send limit counts each send() on its own: a large request to a provider that
    reads a little at a time must still end within the provider's `timeout`, not once it has
    all arrived (6 MiB at 320 KiB/s: 19 s)."""
    server = faulty("slow-read")
    bridge = Raw(Layout(tmp_path, server.url, settings="    timeout: 2\n"), "work/a")
    big = dict(INIT, params=dict(INIT["params"], padding="x" * (6 << 20)))
    started = time.monotonic()
    bridge.send(big)
    answer = bridge.receive(timeout=30)
    assert "no answer in time" in answer["error"]["message"] and time.monotonic() - started < 3.5, answer
    assert bridge.close() == 0
