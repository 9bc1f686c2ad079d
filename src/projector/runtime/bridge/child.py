"""A local server run as the bridge's child, for a session under a tool rule.

Without a rule the bridge becomes the server (exec) and relays nothing. With one, it must see
the messages: it starts the server on pipes and stands between, as it stands before a remote
provider. This is the same face ``upstream.Upstream`` shows the session (``request``,
``notify``, ``close``, ``busy``): each request goes down as the client's own bytes, its answer
comes back by id, and the server's own requests and notifications go to ``deliver``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from projector.runtime.bridge.loop import Loop
from projector.runtime.bridge.stdio import Line, Reader, Writer, error

SERVER_ERROR = -32000
END_WAIT = 2.0  # seconds the server has to exit once its stdin is closed, before it is terminated


class Child:
    def __init__(self, loop: Loop, program: str, argv: list[str], cwd: str, environ: dict[str, str],
                 log: Callable[[str], None], deliver: Callable[[dict[str, Any]], None]):
        self.loop = loop
        self.log = log
        self.deliver = deliver
        self.process = subprocess.Popen(  # noqa: S603 - the model's command, as exec would run it
            argv, executable=program, cwd=cwd, env=environ, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.writer = Writer(self.process.stdin.fileno())
        self.replies: dict[Any, Callable[[dict[str, Any], bytes | None], None]] = {}
        self.reader = Reader(self._message, self.process.stdout.fileno())  # the server's lines, as the client's are read
        self.gone: str | None = None  # why the server can take no more messages
        loop.watch(self.process.stdout, self._readable)

    @property
    def busy(self) -> bool:
        return bool(self.replies)

    def request(self, message: dict[str, Any], reply: Callable[[dict[str, Any], bytes | None], None], raw: bytes | None = None) -> None:
        if self.gone is not None:
            reply(error(message.get("id"), SERVER_ERROR, f"projector: {self.gone}"), None)
            return
        self.replies[_key(message.get("id"))] = reply
        if not self.writer.send(message, raw):
            self._ended("the server stopped reading its input")

    def notify(self, message: dict[str, Any]) -> None:
        if self.gone is None and not self.writer.send(message):
            self._ended("the server stopped reading its input")

    def close(self, why: str) -> None:
        self._answer_all(why)
        self.gone = self.gone or why
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(END_WAIT)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            try:
                self.process.wait(END_WAIT)
            except subprocess.TimeoutExpired:
                self.process.kill()

    # ------------------------------------------------------------------ from the server

    def _readable(self) -> None:
        self.reader.readable()
        if self.reader.ended:
            self.loop.unwatch(self.process.stdout)
            self._ended("the server exited")

    def _message(self, message: Line, raw: bytes | None) -> None:
        if not isinstance(message, dict):
            self.log("the server wrote a line that is not a JSON-RPC message; ignored")
            return
        if isinstance(message.get("method"), str):
            self.deliver(message)
            return
        reply = self.replies.pop(_key(message.get("id")), None)
        if reply is not None:
            reply(message, raw)  # the server's own bytes, when they are one message as parsed

    def _ended(self, why: str) -> None:
        if self.gone is None:
            self.gone = why
            self.log(why)
        self._answer_all(why)

    def _answer_all(self, why: str) -> None:
        replies, self.replies = self.replies, {}
        for (_, id_), reply in replies.items():
            reply(error(id_, SERVER_ERROR, f"projector: {why}"), None)


def _key(id_: Any) -> tuple[str, Any]:
    """A request id as a dict key that keeps 1, 1.0 and true apart."""
    return (type(id_).__name__, id_)

