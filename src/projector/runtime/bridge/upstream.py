"""The HTTP side: one Streamable HTTP session with the provider (MCP 2025-03-26 … 2025-11-25).

Every message is a POST; a request's answer is one JSON body or an SSE stream that may carry
the server's own requests and notifications before the response. The server-assigned session id
and the negotiated protocol version go on every later request, the bearer token on all of them.
A stream that ends after an event id is resumed with a GET carrying ``Last-Event-ID`` (after the
server's ``retry``); the standalone GET stream is never opened. A 404 on a request that carried
the session id means the session is gone: one re-initialize, one retry.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import httpx_sse

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
RESUME_ATTEMPTS = 3


class UpstreamError(Exception):
    """The provider could not answer; ``str`` is a message a person can act on."""

    def __init__(self, message: str, code: int = -32000):
        super().__init__(message)
        self.code = code


class SessionGone(Exception):
    pass


OnMessage = Callable[[dict[str, Any]], None]  # a server request or notification met on the way


class Upstream:
    def __init__(self, url: str, token: str | None, token_env: str | None, log: Callable[[str], None]):
        self.url = url
        self.token_env = token_env
        self.log = log
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._initialize: dict[str, Any] | None = None  # replayed after a 404
        self._reinit_lock = threading.Lock()
        self._reinits = 0
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(30.0, read=300.0),
            follow_redirects=True,  # servers redirect /mcp/ to /mcp with a 307 that keeps the body
            verify=ssl.create_default_context(),  # the system's CAs
            trust_env=True,  # HTTPS_PROXY, NO_PROXY
        )

    # ------------------------------------------------------------------ requests

    def request(self, message: dict[str, Any], on_message: OnMessage) -> dict[str, Any]:
        """Send a request; return its response (with the request's own id)."""
        is_initialize = message.get("method") == "initialize"
        if is_initialize:
            self._initialize = message
        sent_session = self.session_id
        try:
            response = self._exchange(message, on_message)
        except SessionGone:
            if is_initialize or sent_session is None:
                raise UpstreamError(f"the provider answered HTTP 404 at {self._where()}: is the URL right?", -32601) from None
            self._reinitialize(sent_session, on_message)
            response = self._exchange(message, on_message)  # once; a second 404 is an error
        if is_initialize and "result" in response:
            self.protocol_version = response["result"].get("protocolVersion")
        response["id"] = message["id"]  # error bodies come with id null or "server-error"
        return response

    def notify(self, message: dict[str, Any]) -> None:
        """A notification or a response to the server: POST, expect 202."""
        try:
            self._exchange(message, lambda _: None)
        except (UpstreamError, SessionGone) as error:
            self.log(f"a message to the provider was not delivered: {error}")

    def _reinitialize(self, gone: str, on_message: OnMessage) -> None:
        with self._reinit_lock:  # one re-initialize for concurrent 404s
            if self.session_id != gone:
                return
            if self._initialize is None or self._reinits >= 3:
                raise UpstreamError("the provider ended the session and a new one could not be opened")
            self._reinits += 1
            self.log("the provider ended the session (HTTP 404): opening a new one")
            self.session_id = None
            replay = dict(self._initialize, id=f"projector-reinit-{self._reinits}")
            answer = self._exchange(replay, on_message)
            if "result" not in answer:
                raise UpstreamError(f"the provider refused a new session: {answer.get('error')}")
            self._exchange({"jsonrpc": "2.0", "method": "notifications/initialized"}, on_message)

    # ------------------------------------------------------------------ HTTP

    def _headers(self, message: dict[str, Any]) -> dict[str, str]:
        headers = {}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version and message.get("method") != "initialize":
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def _where(self) -> str:
        return self.url.split("?")[0]

    def _exchange(self, message: dict[str, Any], on_message: OnMessage) -> dict[str, Any]:
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        try:
            with self._client.stream("POST", self.url, content=body, headers=self._headers(message)) as response:
                self._check(response, message)
                if message.get("method") == "initialize" and response.headers.get("mcp-session-id"):
                    self.session_id = response.headers["mcp-session-id"]
                if "id" not in message or "method" not in message:
                    return {}  # a notification or a response: 202, nothing to read
                if response.status_code == 202:
                    raise UpstreamError("the provider accepted a request without answering it (HTTP 202)", -32603)
                kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if kind == "text/event-stream":
                    return self._from_stream(response, message, on_message)
                response.read()
                return _json_body(response.content, message)
        except httpx.TimeoutException:
            raise UpstreamError(f"the provider at {self._where()} did not answer in time", -32001) from None
        except httpx.HTTPError as error:
            raise UpstreamError(f"cannot reach the provider at {self._where()}: {_reason(error)}") from None

    def _check(self, response: httpx.Response, message: dict[str, Any]) -> None:
        status = response.status_code
        if status < 400:
            return
        response.read()
        if status == 404 and self.session_id:
            raise SessionGone()
        if status in (401, 403):
            variable = f"${self.token_env}" if self.token_env else "its token variable"
            self.log(f"the provider refused the token (HTTP {status}): check {variable}")
            raise UpstreamError(f"the provider refused the token (HTTP {status}); check {variable}", -32001)
        error = _error_in(response.content)
        if error is not None and "id" in message:
            raise _Answered({"jsonrpc": "2.0", "id": message["id"], "error": error})
        text = response.text.strip()[:300]
        detail = f": {text}" if text else ""
        raise UpstreamError(f"the provider answered HTTP {status}{detail}", -32000 if status >= 500 else -32602)

    def _from_stream(self, response: httpx.Response, message: dict[str, Any], on_message: OnMessage) -> dict[str, Any]:
        last_id, retry_ms = None, 1000
        events = httpx_sse.EventSource(response).iter_sse()
        for attempt in range(RESUME_ATTEMPTS + 1):
            for event in events:
                if event.id:
                    last_id = event.id
                if event.retry is not None:
                    retry_ms = event.retry
                if not event.data.strip():
                    continue  # a priming event only moves the resume point
                found = _handle_event(event.data, message, on_message)
                if found is not None:
                    return found
            if last_id is None or attempt == RESUME_ATTEMPTS:
                break
            time.sleep(retry_ms / 1000)
            events = self._resume(last_id)
        raise UpstreamError("the provider's stream ended before the reply", -32603)

    def _resume(self, last_id: str) -> Iterator[httpx_sse.ServerSentEvent]:
        headers = dict(self._headers({}), **{"Last-Event-ID": last_id, "Accept": "text/event-stream"})
        with self._client.stream("GET", self.url, headers=headers) as response:
            if response.status_code >= 400:
                response.read()
                return
            yield from httpx_sse.EventSource(response).iter_sse()

    # ------------------------------------------------------------------ end

    def close(self, timeout: float = 2.0) -> None:
        """DELETE the session (when the server assigned one), briefly; never raises."""
        if self.session_id:
            try:
                self._client.delete(self.url, headers=self._headers({}), timeout=timeout)
            except httpx.HTTPError:
                pass
        self._client.close()


class _Answered(Exception):
    """An HTTP error whose body is the JSON-RPC answer itself."""

    def __init__(self, response: dict[str, Any]):
        super().__init__("answered")
        self.response = response


def _handle_event(data: str, message: dict[str, Any], on_message: OnMessage) -> dict[str, Any] | None:
    try:
        item = json.loads(data)
    except ValueError:
        return None
    if not isinstance(item, dict):
        return None
    if "method" in item:
        on_message(item)  # the server's request or notification, on its way to the client
        return None
    if item.get("id") == message.get("id") or ("error" in item and item.get("id") is None):
        return item
    return None


def _json_body(content: bytes, message: dict[str, Any]) -> dict[str, Any]:
    try:
        item = json.loads(content)
    except ValueError:
        raise UpstreamError("the provider's answer was not JSON", -32603) from None
    if not isinstance(item, dict):
        raise UpstreamError("the provider's answer was not one JSON-RPC message", -32603)
    return item


def _error_in(content: bytes) -> dict[str, Any] | None:
    try:
        item = json.loads(content)
    except ValueError:
        return None
    return item.get("error") if isinstance(item, dict) and isinstance(item.get("error"), dict) else None


def _reason(error: Exception) -> str:
    text = str(error) or type(error).__name__
    return "connection refused" if "refused" in text.lower() else text
