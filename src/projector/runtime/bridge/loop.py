"""The bridge's one thread: a poll() over stdin and the provider's sockets, with timers and signals.

Nothing is handed between threads: a line read from stdin is forwarded, and a reply read from a
socket is written, by the same thread that waits for both. poll() rather than epoll: stdin may be
a regular file or /dev/null, which epoll refuses.

A signal (SIGTERM, SIGINT, SIGHUP) wakes the poll through a pipe and sets ``signalled``. While
the thread is inside a blocking call to the provider (a connect, a send, the rest of a reply),
the signal also interrupts that call, so a stalled provider never delays the end of a session.

Every session starts this, so it costs nothing to import: ``select.poll`` itself rather than
``selectors``, and ``_signal`` (loaded with the interpreter) rather than ``signal``, whose enums
take longer to build than the rest of this module.
"""

from __future__ import annotations

import _signal
import heapq
import itertools
import os
import select
import time
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SIGNALS = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP)
READABLE = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR | select.POLLNVAL


class Interrupted(Exception):
    """A signal arrived during a blocking call to the provider."""


class Timer:
    """A callback due at ``when``; a cancelled one stays in the heap until its time (there are
    few: a request's timeout is not one, see upstream's alarm)."""

    __slots__ = ("callback", "live", "when")

    def __init__(self, when: float, callback: Callable[[], None]):
        self.when = when
        self.callback = callback
        self.live = True

    def cancel(self) -> None:
        self.live = False
        self.callback = _nothing  # what it would have called is freed now, not at its time


def _nothing() -> None:
    pass


class Loop:
    def __init__(self) -> None:
        self._poll = select.poll()
        self._watched: dict[int, tuple[Any, Callable[[], None]]] = {}  # fd -> (file, callback)
        self._timers: list[tuple[float, int, Timer]] = []
        self._order = itertools.count()
        self.signalled = False
        self._blocking = 0  # > 0: inside a blocking call a signal may interrupt
        self._wake: int | None = None
        self._guard = _Blocking(self)  # one for every blocking call: it only counts

    # ------------------------------------------------------------------ signals

    def catch_signals(self) -> None:
        read, write = os.pipe()
        os.set_blocking(write, False)
        os.set_blocking(read, False)
        _signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        self._wake = read
        self.watch(read, self._drain_wake)
        for number in SIGNALS:
            _signal.signal(number, self._on_signal)

    def _on_signal(self, _signum: int, _frame: Any) -> None:
        self.signalled = True
        if self._blocking:
            raise Interrupted()

    def _drain_wake(self) -> None:
        assert self._wake is not None
        try:
            while os.read(self._wake, 64):
                pass
        except BlockingIOError:
            pass

    def blocking(self) -> _Blocking:
        """``with loop.blocking():`` around a call that may wait on the provider: a signal ends
        it (Interrupted)."""
        if self.signalled:
            raise Interrupted()
        return self._guard

    # ------------------------------------------------------------------ files and timers

    def watch(self, file: Any, callback: Callable[[], None]) -> None:
        fd = file if isinstance(file, int) else file.fileno()
        self._watched[fd] = (file, callback)
        self._poll.register(fd, READABLE)

    def unwatch(self, file: Any) -> None:
        """Stop watching ``file`` (the same object ``watch`` was given: a socket that was closed
        meanwhile no longer knows its descriptor, and that number may be another file's now)."""
        fd = file if isinstance(file, int) else file.fileno()
        entry = self._watched.get(fd)
        if entry is None or entry[0] is not file:
            fd = next((fd for fd, (known, _) in self._watched.items() if known is file), None)
        if fd is not None:
            del self._watched[fd]
            self._poll.unregister(fd)

    def later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(time.monotonic() + delay, callback)
        heapq.heappush(self._timers, (timer.when, next(self._order), timer))
        return timer

    def once(self, limit: float | None = None) -> None:
        """Wait for one round of events (at most ``limit`` seconds) and handle them."""
        timeout = limit
        while self._timers and not self._timers[0][2].live:
            heapq.heappop(self._timers)
        if self._timers:
            until = max(0.0, self._timers[0][0] - time.monotonic())
            timeout = until if timeout is None else min(timeout, until)
        ready = self._poll.poll(None if timeout is None else timeout * 1000)
        for fd, _ in ready:
            entry = self._watched.get(fd)
            if entry is not None:  # not unwatched by an earlier callback of this round
                entry[1]()
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, _, timer = heapq.heappop(self._timers)
            if timer.live:
                timer.live = False
                timer.callback()


class _Blocking:
    __slots__ = ("_loop",)

    def __init__(self, loop: Loop):
        self._loop = loop

    def __enter__(self) -> None:
        self._loop._blocking += 1

    def __exit__(self, *_: object) -> None:
        self._loop._blocking -= 1
