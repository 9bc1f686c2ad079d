"""The HTTP side: one Streamable HTTP session with the provider (MCP 2025-03-26 … 2025-11-25).

Every client message is one POST. A request's answer is one JSON body or an SSE stream that may
carry the server's own requests and notifications before the response; those go on to the
client (``deliver``). The server-assigned session id and the negotiated protocol version go on
every later request, the bearer token on all of them. Requests run concurrently; ``initialize``
and every notification are barriers: what the client sent after them goes up once they are
through, so the server sees them in the client's order.

- A stream that ends after an event id is resumed with a GET carrying ``Last-Event-ID``, after
  the server's ``retry`` (capped: a server cannot park a request for hours).
- A 404 on a request that carried the session id: the session is gone; one new session (the
  client's ``initialize`` replayed under an id of ours) for all the requests that met it, and
  each is retried once.
- An OAuth provider's 401 renews the token once (bridge.renew); when no renewal cures it, the
  session is told (``signed_out``) and starts a sign-in. A 403 ``insufficient_scope`` (the MCP
  authorization spec's step-up) signs in again for the stored and the challenged scopes
  (bridge.signing), waits for it (bounded), and sends the request again once; a second 403 for
  that request ends it with an error, never a loop.
- The standalone GET stream (server messages outside any request) is opened after
  ``notifications/initialized`` only when the provider's ``listen`` setting says so; a 405 means
  the server has none. Whatever the setting, a request gets an answer within the provider's
  ``timeout``.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Mapping

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from typing import Any

from projector.runtime.bridge import transport
from projector.runtime.bridge.loop import Loop
from projector.runtime.bridge.sse import MESSAGE_LIMIT, Decoder, TooLarge
from projector.runtime.bridge.stdio import encode, error

RESUME_ATTEMPTS = 3
DEFAULT_RETRY_MS = 1000
RETRY_CAP_MS = 5_000  # the most a server's `retry:` may make a request wait before it resumes (the spec sets none)
LISTEN_ATTEMPTS = 5  # the GET stream is given up after this many failures in a row
REOPEN_LIMIT = 3  # new sessions after a 404, per bridge session
DELETE_TIMEOUT = 2.0
BODY_LIMIT = MESSAGE_LIMIT  # bytes of one JSON answer (an SSE event's limit too)

TIMEOUT, SERVER_ERROR, INTERNAL_ERROR = -32001, -32000, -32603


class Settings:
    """The provider's settings the session needs."""

    __slots__ = ("provider", "token_env", "listen", "timeout", "refusal")

    def __init__(self, provider: str, token_env: str | None, listen: bool, timeout: float, refusal: str | None = None):
        self.provider = provider
        self.token_env = token_env
        self.listen = listen  # open the GET stream for the server's own messages
        self.timeout = timeout  # seconds a request may take
        self.refusal = refusal  # why no request can go up (a malformed token): each gets this as its error


def as_response(item: Any, id_: Any) -> dict[str, Any] | None:
    """``item`` as a JSON-RPC response carrying ``id_``; None when it is not a response."""
    if not isinstance(item, dict):
        return None
    if "result" in item and "error" not in item:
        return {"jsonrpc": "2.0", "id": id_, "result": item["result"]}
    error = item.get("error")
    if isinstance(error, dict) and isinstance(error.get("code"), int) and isinstance(error.get("message"), str):
        return {"jsonrpc": "2.0", "id": id_, "error": error}
    return None


def verbatim(body: bytes, item: Any, response: dict[str, Any]) -> bytes | None:
    """The provider's bytes of a JSON answer, to pass on as they are, when they say exactly
    what ``response`` says, to any parser: the same members and values, an id of the same
    plain type (a string, an integer or null: ``True == 1`` and ``[1] == [True]`` for Python),
    each member named once (a parser may keep the first of two, or refuse them), on one line of
    UTF-8 (ASCII without NUL: ``json.loads`` also reads UTF-16 and UTF-32). None: ``response``
    is encoded anew."""
    body = body.strip()
    if not (item == response and type(item["id"]) is type(response["id"]) and type(response["id"]) in _PLAIN_IDS):
        return None
    if not body.isascii() or b"\n" in body or b"\r" in body or b"\x00" in body:
        return None
    outcome = b'"result"' if "result" in item else b'"error"'
    if body.count(b'"id"') != 1 or body.count(b'"jsonrpc"') != 1 or body.count(outcome) != 1:  # the result may say them too: then encoded anew
        return None
    return body


_PLAIN_IDS = (str, int, type(None))


class Call:
    """A request on its way: the message, who gets the answer, and how far it got."""

    def __init__(self, message: dict[str, Any], reply: Callable[[dict[str, Any], bytes | None], None], raw: bytes | None = None):
        self.message = message
        self.method = str(message.get("method"))
        self.raw = raw  # the client's own bytes of the message, when it sent it whole
        self.reply = reply
        self.done = False
        self.barrier = False  # later messages wait for its answer (initialize)
        self.retried = False  # sent again in a new session after a 404
        self.renewed = False  # sent again with a renewed token after a 401
        self.stepped_up = False  # sent again after a sign-in for more scope (a 403 insufficient_scope)
        self.resumes = 0
        self.sent_session: str | None = None
        self.exchange: transport.Exchange | None = None
        self.deadline = 0.0  # when it times out (time.monotonic())

    def body(self) -> bytes:
        """The request as POSTed: the client's own bytes where there are any (no second encoding)."""
        return self.raw if self.raw is not None else encode(self.message)


class Upstream:
    def __init__(self, loop: Loop, url: str, token: str | None, settings: Settings, environ: Mapping[str, str],
                 log: Callable[[str], None], deliver: Callable[[dict[str, Any]], None],
                 renew: Callable[[str | None], tuple[str | None, str | None]] | None = None, sign_in: Any = None):
        self.loop = loop
        self.renew = renew  # an OAuth provider's: a token other than the refused one (runtime.bridge.renew)
        self.sign_in = sign_in  # an OAuth provider's (bridge.signing.SignIn): a step-up signs in again through it
        self.signed_out: Callable[[str], None] | None = None  # told when a refused token cannot be renewed
        self._held: set[Call] = set()  # waiting for a step-up's sign-in (out of _calls: its time does not run)
        self.settings = settings
        self.log = log
        self.deliver = deliver  # the server's own requests and notifications, on to the client
        self.environ = environ
        try:
            place = transport.endpoint(url, environ)
        except transport.BadProxy as problem:  # nothing goes up: each request gets this as its error
            log(str(problem))
            settings.refusal = settings.refusal or str(problem)
            place = transport.endpoint(url, {})
        self.pool = transport.Pool(place)
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if token:
            self._base["Authorization"] = f"Bearer {token}"
        if self.pool.place.proxy and self.pool.place.proxy.authorization and not self.pool.place.tunnel:
            self._base["Proxy-Authorization"] = self.pool.place.proxy.authorization
        self._initialize: dict[str, Any] | None = None  # the client's, replayed after a 404
        # Waiting for their answers, in the order they were made, which is the order of their
        # deadlines (one timeout for all): one alarm, for the first, serves them all.
        self._calls: dict[Call, None] = {}
        self._alarm: Any = None
        self._exchanges: set[transport.Exchange] = set()
        self._queue: deque[Call | dict[str, Any]] = deque()  # waiting behind a barrier
        self._blocked = False
        self._reopens = 0
        self._listening: transport.Exchange | None = None
        self._closed = False

    @property
    def busy(self) -> bool:
        """Requests still waiting for their answer, or messages not yet through (a notification
        sent just before stdin ended must reach the server before the DELETE)."""
        return bool(self._calls or self._blocked or self._queue or self._held)

    # ------------------------------------------------------------------ what the session calls

    def request(self, message: dict[str, Any], reply: Callable[[dict[str, Any], bytes | None], None], raw: bytes | None = None) -> None:
        """Send a request; ``reply`` gets its answer (or an error) exactly once. ``raw``: the
        message's bytes as the client sent them."""
        if self.settings.refusal:
            reply(error(message.get("id"), SERVER_ERROR, f"projector: {self.settings.refusal}"))
            return
        call = Call(message, reply, raw)
        if call.method == "initialize":
            self._initialize = message
        call.deadline = time.monotonic() + self.settings.timeout
        self._calls[call] = None
        if self._alarm is None:
            self._alarm = self.loop.later(self.settings.timeout, self._due)
        self._submit(call)

    def notify(self, message: dict[str, Any]) -> None:
        """A notification, or the client's answer to a server request: POSTed in order."""
        if not self.settings.refusal:
            self._submit(message)

    def close(self, why: str) -> None:
        """Answer what is still waiting with ``why``, then DELETE the session (briefly)."""
        self._closed = True
        for call in [*self._calls, *self._held]:
            self._answer(call, error(call.message.get("id"), SERVER_ERROR, f"projector: {why}"))
        self._held.clear()
        for exchange in list(self._exchanges):
            exchange.cancel()
        if self.session_id:
            self._delete()
        self.pool.close()

    # ------------------------------------------------------------------ sending in order

    def _submit(self, item: Call | dict[str, Any]) -> None:
        if self._blocked:
            self._queue.append(item)
        elif isinstance(item, Call):
            self._post(item)
        else:
            self._post_note(item)

    def _unblock(self) -> None:
        self._blocked = False
        while self._queue and not self._blocked:
            item = self._queue.popleft()
            if isinstance(item, Call):
                self._post(item)
            else:
                self._post_note(item)

    def _headers(self, method: str | None) -> dict[str, str]:
        headers = dict(self._base)
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version and method != "initialize":
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def _exchange(self, method: str, body: bytes | None, headers: dict[str, str], sink: Any) -> transport.Exchange:
        exchange = transport.Exchange(self.loop, self.pool, method, body, headers, sink,
                                      timeout=min(transport.IO_TIMEOUT, self.settings.timeout))
        self._exchanges.add(exchange)
        return exchange.start()

    def _post(self, call: Call) -> None:
        if call.done or self._closed:
            return
        if call.method == "initialize":
            call.barrier = self._blocked = True
        call.sent_session = self.session_id
        call.exchange = self._exchange("POST", call.body(), self._headers(call.method), _Reply(self, call))

    def _post_note(self, message: dict[str, Any]) -> None:
        if self._closed:
            return
        self._blocked = True
        ack = _Ack(self, message)
        exchange = self._exchange("POST", encode(message), self._headers(message.get("method")), ack)
        if not exchange.done:  # a provider that never answers it must not hold back what follows
            ack.timer = self.loop.later(self.settings.timeout, lambda: ack.give_up(exchange))

    # ------------------------------------------------------------------ answers

    def _answer(self, call: Call, response: dict[str, Any], raw: bytes | None = None) -> None:
        """``raw``: the provider's own bytes of ``response``, where they say exactly that."""
        if call.done:
            return
        call.done = True
        call.exchange = None  # (its sink holds the call: without this every request left a cycle for the GC)
        self._calls.pop(call, None)
        if call.method == "initialize" and "result" in response and isinstance(response["result"], dict):
            self.protocol_version = response["result"].get("protocolVersion") or self.protocol_version
        if call.barrier:
            self._unblock()
        call.reply(response, raw)

    def _renew_and_resend(self, call: Call) -> None:
        """A 401 on an OAuth provider's token: renewed once (another bridge's fresh token, or a
        refresh), and the request sent again with it; the refusal's reason otherwise."""
        assert self.renew is not None
        call.renewed = True
        refused = self._base.get("Authorization", "")[len("Bearer "):] or None
        token, problem = self.renew(refused)
        if token is None:
            self.log(problem or "")
            from projector.runtime.bridge.renew import SignInNeeded

            if isinstance(problem, SignInNeeded) and self.signed_out is not None:
                self.signed_out(problem)  # first: the session answers this request as a signed-out one
            self._fail(call, problem or _refused(self, 401), TIMEOUT)
            return
        self._base["Authorization"] = f"Bearer {token}"
        self._post(call)

    def _step_up(self, call: Call, challenged: str) -> None:
        """A 403 insufficient_scope: a sign-in for the stored and the challenged scopes, then the
        request once more; the second such 403 for it is the end."""
        name = self.settings.provider
        if call.stepped_up:
            self._fail(call, f"provider {name} refused {call.method} again for want of scope ({challenged or 'unnamed'}) "
                             "after a sign-in that asked for it; not asking again")
            return
        if not challenged:
            self._fail(call, f"provider {name} refused {call.method} for want of a scope it does not name (HTTP 403 "
                             "insufficient_scope)")
            return
        if beyond := self.sign_in.beyond(challenged):
            self._fail(call, f"provider {name} refused {call.method} for want of scope {' '.join(beyond)}, which the model's "
                             f"scopes leave out: add it to the oauth `scopes` of {name} in the model if you mean to grant it, "
                             "then call it again")
            return
        call.stepped_up = True
        self._calls.pop(call, None)
        self._held.add(call)
        wanted = self.sign_in.wanted(challenged)
        self.log(f"provider {name} asks for more scope for {call.method} ({challenged}): signing in again for {wanted}")
        from projector.runtime.bridge.signing import STEP_UP_WAIT

        self.sign_in.wait(self.loop, lambda token, problem: self._stepped_up(call, wanted, token, problem), scope=wanted,
                          limit=STEP_UP_WAIT)

    def _stepped_up(self, call: Call, wanted: str, token: str | None, problem: str | None) -> None:
        self._held.discard(call)
        if call.done or self._closed:
            return
        if token is None:
            import shlex  # the scopes are the provider's: quoted so that pasting the command runs nothing of theirs

            self._fail(call, f"{call.method} needs more scope ({wanted}) and {problem}: run "
                             f"`projector login {self.settings.provider} --scope {shlex.quote(wanted)}`, then call it again")
            return
        self._base["Authorization"] = f"Bearer {token}"
        call.deadline = time.monotonic() + self.settings.timeout  # the latest of all: _calls stays in deadline order
        self._calls[call] = None
        if self._alarm is None:
            self._alarm = self.loop.later(self.settings.timeout, self._due)
        self._post(call)

    def _cut(self, exchange: transport.Exchange) -> None:
        """Cancel ``exchange`` and forget it: its sink hears nothing more."""
        exchange.cancel()
        self._exchanges.discard(exchange)

    def _fail(self, call: Call, message: str, code: int = SERVER_ERROR) -> None:
        self._answer(call, error(call.message.get("id"), code, f"projector: {message}"))

    def _where(self) -> str:
        place = self.pool.place
        return f"{place.scheme}://{place.host}:{place.port}"

    def _event(self, call: Call | None, data: str) -> None:
        """One SSE message: the server's own request or notification, or a response."""
        if not data.strip():
            return  # a priming event only moves the resumption point (its id)
        try:
            item = json.loads(data)
        except ValueError:
            self.log("the provider sent an event that is not JSON; ignored")
            return
        if isinstance(item, dict) and isinstance(item.get("method"), str):
            self.deliver(item)
            return
        if not isinstance(item, dict):
            return
        owner = call if call is not None and (item.get("id") == call.message.get("id") or item.get("id") is None) else None
        if owner is None:  # a response on a resumed or the standalone stream
            owner = next((c for c in self._calls if c.message.get("id") == item.get("id")), None)
        if owner is not None and not owner.done:
            response = as_response(item, owner.message.get("id"))
            if response is None:
                self._fail(owner, "the provider's answer is not a JSON-RPC response", INTERNAL_ERROR)
            else:
                self._answer(owner, response)

    def _due(self) -> None:
        """The alarm: the calls whose time is up are answered with the timeout's error."""
        self._alarm = None
        now = time.monotonic()
        for call in list(self._calls):
            if call.deadline > now:
                break
            self._timed_out(call)
        first = next(iter(self._calls), None)
        if first is None or (self._alarm is not None and self._alarm.when <= first.deadline):
            return  # nothing waits, or a request made meanwhile set an alarm that is early enough
        if self._alarm is not None:
            self._alarm.cancel()
        self._alarm = self.loop.later(first.deadline - now, self._due)

    def _timed_out(self, call: Call) -> None:
        if call.done:
            return  # answered by what an earlier call's timeout set off
        exchange = call.exchange
        if exchange is not None:
            self._cut(exchange)
        seconds = f"{self.settings.timeout:g}"
        name = self.settings.provider
        reply = exchange.sink if exchange is not None and exchange.heard else None
        if isinstance(reply, _Reply) and reply.kind != "sse":  # an answer began, then stalled (a stream may wait on the client)
            part = f"(HTTP {reply.status}) began but its body" if reply.status else "began but its head"
            self._fail(call, f"the answer of provider {name} to {call.method} {part} did not end within {seconds} s; raise "
                             f"`timeout` for provider {name} in the model if its answers take longer", TIMEOUT)
        else:
            self._stalled(call, seconds)
        if call.method != "initialize" and not self._closed:
            self.notify({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": call.message.get("id"), "reason": "timed out in projector"}})

    def _stalled(self, call: Call, seconds: str) -> None:
        """No answer (or an open stream without the reply) within the provider's timeout."""
        name = self.settings.provider
        hint = (f"if its tool waits for something it asked the client outside this request (roots, sampling, "
                f"elicitation), set `listen: true` for provider {name} in the model; otherwise raise its `timeout`"
                if not self.settings.listen else f"raise `timeout` for provider {name} in the model if it needs longer")
        self._fail(call, f"provider {name} did not answer {call.method} within {seconds} s; {hint}", TIMEOUT)

    # ------------------------------------------------------------------ sessions

    def _session_gone(self, call: Call) -> None:
        """A 404 on a request that carried the session id."""
        if call.retried:
            self._fail(call, "the provider ended the session (HTTP 404) and the request failed again (HTTP 404) in the "
                             "new session projector opened; the provider is dropping sessions right away")
            return
        call.retried = True
        if self.session_id == call.sent_session:  # the first to notice: one new session for all
            if self._initialize is None or self._reopens >= REOPEN_LIMIT:
                self._fail(call, f"the provider ended the session (HTTP 404) {self._reopens + 1} times; not opening another")
                return
            self._reopens += 1
            self.log("the provider ended the session (HTTP 404): opening a new one")
            self.session_id = None
            if self._listening is not None:
                self._listening.cancel()
                self._listening = None
            replay = dict(self._initialize, id=f"projector-reinit-{self._reopens}")
            self.request(replay, self._reopened)
            self.notify({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self._submit(call)

    def _reopened(self, answer: dict[str, Any], _raw: bytes | None = None) -> None:
        if "result" in answer or self._closed:
            return
        reason = (answer.get("error") or {}).get("message", "refused")
        self.log(f"the provider refused a new session: {reason}")
        waiting, self._queue = self._queue, deque()
        for item in waiting:
            if isinstance(item, Call):
                if item.retried:
                    self._fail(item, f"the provider ended the session (HTTP 404) and refused a new one: {reason}")
                else:
                    self._queue.append(item)

    # ------------------------------------------------------------------ the standalone GET stream

    def _listen(self, last_id: str = "", retry: int | None = None, failures: int = 0) -> None:
        if self._closed or not self.settings.listen:
            return
        headers = dict(self._headers(None), Accept="text/event-stream")
        headers.pop("Content-Type", None)
        if last_id:
            headers["Last-Event-ID"] = last_id.encode()  # UTF-8 (see _resume)
        self._listening = self._exchange("GET", None, headers, _Listen(self, last_id, retry, failures))

    # ------------------------------------------------------------------ the end

    def _delete(self) -> None:
        """DELETE the session; bounded, silent (405 and 404 are fine answers)."""
        headers = self._headers(None)
        headers.pop("Content-Type", None)
        try:
            connection, _ = self.pool.take(DELETE_TIMEOUT)
            connection.whole_call_limits()  # outside the loop: no signal may stretch it
            connection.request("DELETE", self.pool.place.target, headers=headers)
            connection.getresponse()  # its status is enough: the connection is closed, body unread
            connection.close()
        except Exception as error:  # noqa: BLE001 - the session is ending; a failed DELETE is only noted
            self.log(f"could not end the provider's session: {transport.describe(error)}")


class _Reply:
    """A request's HTTP reply (to its POST, or to the GET that resumes its stream)."""

    def __init__(self, upstream: Upstream, call: Call, resume: Decoder | None = None):
        self.up = upstream
        self.call = call
        self.kind = ""  # json | sse | error | gone
        self.status = 0
        self.body: list[bytes] = []
        self.size = 0
        self.decoder = resume if resume is not None else Decoder()
        self.resuming = resume is not None

    def head(self, exchange: transport.Exchange, response: Any) -> None:
        up, call = self.up, self.call
        self.status = status = response.status
        if call.done:
            self.kind = "late"
            return
        if status in (307, 308) and not self.resuming:
            self._redirect(exchange, response.getheader("Location") or "")
        elif 200 <= status < 300:
            if call.method == "initialize" and response.getheader("Mcp-Session-Id"):
                up.session_id = response.getheader("Mcp-Session-Id")
            if status == 202 and not self.resuming:
                up._fail(call, "the provider accepted a request without answering it (HTTP 202)", INTERNAL_ERROR)
                self.kind = "late"
                return
            kind = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
            self.kind = "sse" if kind == "text/event-stream" else "json"
        elif status == 404 and call.sent_session and not self.resuming:
            self.kind = "gone"
        elif status == 401 and up.renew is not None and not call.renewed and not self.resuming:
            self.kind = "late"
            up._cut(exchange)
            up._renew_and_resend(call)
        elif status == 403 and up.sign_in is not None and not self.resuming and (scope := _insufficient_scope(response)) is not None:
            self.kind = "late"
            up._cut(exchange)
            up._step_up(call, scope)
        elif status in (401, 403):
            self.kind = "late"
            up._fail(call, _refused(up, status), TIMEOUT)
        else:
            self.kind = "error"

    def _redirect(self, exchange: transport.Exchange, location: str) -> None:
        up = self.up
        place = transport.moved(up.pool.place, location, up.environ)
        up._cut(exchange)
        if place is None:
            self.kind = "late"
            up._fail(self.call, f"the provider redirects (HTTP {self.status}) to another place ({location[:200]}); "
                                "put that URL in the model")
            return
        up.pool.close()
        up.pool = transport.Pool(place)  # for the rest of the session: one request, not two, per message
        self.call.exchange = up._exchange("POST", self.call.body(), up._headers(self.call.method), _Reply(up, self.call))

    def chunk(self, exchange: transport.Exchange, data: bytes) -> None:
        if self.kind == "sse":
            try:
                events = self.decoder.feed(data)
            except TooLarge as what:
                self.up._cut(exchange)
                self.up._fail(self.call, f"the provider's stream sent {what} (an event without its end); projector "
                                         "closed it", INTERNAL_ERROR)
                return
            for event in events:
                self.up._event(self.call, event.data)
        elif self.kind in ("json", "error"):
            self.size += len(data)
            if self.size > BODY_LIMIT:
                self.up._cut(exchange)
                self.up._fail(self.call, f"the provider's answer is larger than {BODY_LIMIT >> 20} MiB", INTERNAL_ERROR)
                return
            self.body.append(data)

    def end(self, exchange: transport.Exchange, problem: str | None) -> None:
        up, call = self.up, self.call
        up._exchanges.discard(exchange)
        if call.done or self.kind == "late":
            return
        if problem == transport.INTERRUPTED:
            return  # the call stays waiting: close() answers it with why the session ended
        if self.kind == "gone":
            up._session_gone(call)
        elif self.kind == "sse" or (problem is not None and self.decoder.last_id):
            self._stream_ended(problem)
        elif problem is not None and exchange.heard:
            up._fail(call, f"the provider at {up._where()} sent a broken answer: {problem}")
        elif problem is not None:
            up._fail(call, f"cannot reach the provider at {up._where()}: {problem}")
        elif self.kind == "json":
            body = b"".join(self.body)
            try:
                item = json.loads(body)
            except ValueError:
                up._fail(call, "the provider's answer is not JSON", INTERNAL_ERROR)
                return
            response = as_response(item, call.message.get("id"))
            if response is None:
                up._fail(call, "the provider's answer is not a JSON-RPC response", INTERNAL_ERROR)
            else:
                up._answer(call, response, verbatim(body, item, response))
        else:
            self._error_status()

    def _stream_ended(self, problem: str | None) -> None:
        up, call, decoder = self.up, self.call, self.decoder
        if not decoder.last_id:
            cause = f": {problem}" if problem else ""
            up._fail(call, f"the provider's stream ended before the reply{cause}", INTERNAL_ERROR)
            return
        if call.resumes >= RESUME_ATTEMPTS:
            up._fail(call, f"the provider's stream ended before the reply, {RESUME_ATTEMPTS} times", INTERNAL_ERROR)
            return
        call.resumes += 1
        wait = min(decoder.retry if decoder.retry is not None else DEFAULT_RETRY_MS, RETRY_CAP_MS) / 1000
        up.loop.later(wait, lambda: self._resume(decoder))

    def _resume(self, decoder: Decoder) -> None:
        up, call = self.up, self.call
        if call.done or up._closed:
            return
        headers = dict(up._headers(None), Accept="text/event-stream")
        headers.pop("Content-Type", None)
        headers["Last-Event-ID"] = decoder.last_id.encode()  # UTF-8, as the SSE spec sends it (http.client: Latin-1 or nothing)
        carried = Decoder()
        carried.last_id, carried.retry = decoder.last_id, decoder.retry
        call.exchange = up._exchange("GET", None, headers, _Reply(up, call, resume=carried))

    def _error_status(self) -> None:
        up, call, status = self.up, self.call, self.status
        body = b"".join(self.body)
        try:
            response = as_response(json.loads(body), call.message.get("id"))
        except ValueError:
            response = None
        if response is not None and "error" in response:
            up._answer(call, response)  # the server's own JSON-RPC error (its id may be null or "server-error")
            return
        text = body.decode("utf-8", "replace").strip()[:300]
        detail = f": {text}" if text else ""
        if self.resuming:
            up._fail(call, f"the provider's stream ended before the reply and could not be resumed (HTTP {status}){detail}")
        elif status == 404:
            up._fail(call, f"the provider at {up._where()} answered HTTP 404 (not found){detail}; is the URL in the model right?",
                     -32601)
        else:
            up._fail(call, f"the provider answered HTTP {status}{detail}", SERVER_ERROR if status >= 500 else -32602)


class _Ack:
    """The reply to a notification or to the client's answer (202, nothing to read)."""

    def __init__(self, upstream: Upstream, message: dict[str, Any]):
        self.up = upstream
        self.message = message
        self.status = 0
        self.timer: Any = None

    def head(self, exchange: transport.Exchange, response: Any) -> None:
        self.status = response.status

    def chunk(self, exchange: transport.Exchange, data: bytes) -> None:
        pass

    def give_up(self, exchange: transport.Exchange) -> None:
        """No answer within the provider's timeout: the messages queued behind it go on."""
        self.timer = None
        exchange.cancel()
        self.status = 202  # as if accepted: it was sent, and may well have arrived
        self.up.log(f"{self.message.get('method') or 'an answer to the provider'} got no answer from the provider "
                    f"within {self.up.settings.timeout:g} s; what the client sent after it goes on")
        self.end(exchange, None)

    def end(self, exchange: transport.Exchange, problem: str | None) -> None:
        up = self.up
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None  # (its callback holds this sink and the exchange)
        up._exchanges.discard(exchange)
        what = self.message.get("method") or "an answer to the provider's request"
        if problem is not None:
            up.log(f"{what} did not reach the provider: {problem}")
        elif self.status >= 400:
            up.log(f"{what} was refused by the provider (HTTP {self.status})")
        elif self.message.get("method") == "notifications/initialized":
            up._listen()
        up._unblock()


class _Listen:
    """The standalone GET stream: the server's requests and notifications outside any request."""

    def __init__(self, upstream: Upstream, last_id: str, retry: int | None, failures: int):
        self.up = upstream
        self.decoder = Decoder()
        self.decoder.last_id, self.decoder.retry = last_id, retry
        self.failures = failures
        self.status = 0
        self.heard = False

    def head(self, exchange: transport.Exchange, response: Any) -> None:
        self.status = response.status

    def chunk(self, exchange: transport.Exchange, data: bytes) -> None:
        if not 200 <= self.status < 300:
            return
        try:
            events = self.decoder.feed(data)
        except TooLarge as what:
            up = self.up
            up._cut(exchange)
            if up._listening is exchange:
                up._listening = None
            up.log(f"the provider's listening stream sent {what} (an event without its end); projector closed it, "
                   "and the provider's own requests and notifications will not arrive in this session")
            return
        for event in events:
            self.heard = True
            self.up._event(None, event.data)

    def end(self, exchange: transport.Exchange, problem: str | None) -> None:
        up = self.up
        up._exchanges.discard(exchange)
        if up._listening is not exchange or up._closed:
            return
        up._listening = None
        if self.status == 405:
            return  # the server has no stream of its own: nothing is lost
        if 400 <= self.status < 500 and self.status != 408:
            up.log(f"the provider refused its listening stream (HTTP {self.status}); its own requests will not arrive")
            return
        failures = 0 if self.heard else self.failures + 1
        if failures >= LISTEN_ATTEMPTS:
            up.log(f"the provider's listening stream failed {failures} times in a row; given up")
            return
        wait = min(self.decoder.retry if self.decoder.retry is not None else DEFAULT_RETRY_MS * 1.5**failures, RETRY_CAP_MS) / 1000
        up.loop.later(wait, lambda: up._listen(self.decoder.last_id, self.decoder.retry, failures))


def _insufficient_scope(response: Any) -> str | None:
    """The scopes a 403's ``WWW-Authenticate: Bearer error="insufficient_scope", scope="..."``
    asks for ("" when it names none); None when it is not that challenge."""
    import re

    challenge = response.getheader("WWW-Authenticate") or ""
    if not re.search(r'\berror="?insufficient_scope\b', challenge):
        return None
    scope = re.search(r'\bscope="([^"]*)"', challenge) or re.search(r"\bscope=([^\s,]+)", challenge)
    return " ".join(scope.group(1).split()) if scope else ""


def _refused(up: Upstream, status: int) -> str:
    settings = up.settings
    if up.renew is not None:  # projector signs in to the provider (projector login): only its sessions renew a token
        return f"the provider refused the sign-in (HTTP {status}): sign in again with `projector login {settings.provider}`"
    if settings.token_env:
        return f"the provider refused the token (HTTP {status}); check ${settings.token_env}"
    return (f"the provider asks for authorization (HTTP {status}) and provider {settings.provider} has no token_env; "
            "give it the name of the variable that holds its token (projector does not sign in with OAuth)")
