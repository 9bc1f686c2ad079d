"""The bridge's one thread: a poll() over stdin and the provider's sockets, with timers and signals.

Nothing is handed between threads: a line read from stdin is forwarded, and a reply read from a
socket is written, by the same thread that waits for both. poll() rather than epoll: stdin may be
a regular file or /dev/null, which epoll refuses.

A signal (SIGTERM, SIGINT, SIGHUP) wakes the poll through a pipe and sets ``signalled``. While
the thread is inside a blocking call to the provider (a connect, a send, the rest of a reply),
the signal also interrupts that call, so a stalled provider never delays the end of a session.
"""

from __future__ import annotations

import heapq
import itertools
import os
import selectors
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")


class Interrupted(Exception):
    """A signal arrived during a blocking call to the provider."""


class Timer:
    __slots__ = ("when", "callback", "live", "_loop")

    def __init__(self, loop: Loop, when: float, callback: Callable[[], None]):
        self.when = when
        self.callback = callback
        self.live = True
        self._loop = loop

    def cancel(self) -> None:
        if self.live:
            self.live = False
            self._loop._cancelled += 1


class Loop:
    def __init__(self) -> None:
        self._selector = selectors.PollSelector()
        self._timers: list[tuple[float, int, Timer]] = []
        self._order = itertools.count()
        self._cancelled = 0  # cancelled timers still in the heap (each request's timeout is one)
        self.signalled = False
        self._blocking = 0  # > 0: inside a blocking call a signal may interrupt
        self._wake: int | None = None

    # ------------------------------------------------------------------ signals

    def catch_signals(self) -> None:
        read, write = os.pipe()
        os.set_blocking(write, False)
        os.set_blocking(read, False)
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        self._wake = read
        self.watch(read, self._drain_wake)
        for name in SIGNALS:
            signal.signal(getattr(signal, name), self._on_signal)

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

    @contextmanager
    def blocking(self) -> Iterator[None]:
        """Around a call that may wait on the provider: a signal ends it (Interrupted)."""
        if self.signalled:
            raise Interrupted()
        self._blocking += 1
        try:
            yield
        finally:
            self._blocking -= 1

    # ------------------------------------------------------------------ files and timers

    def watch(self, fileobj: Any, callback: Callable[[], None]) -> None:
        self._selector.register(fileobj, selectors.EVENT_READ, callback)

    def unwatch(self, fileobj: Any) -> None:
        try:
            self._selector.unregister(fileobj)
        except (KeyError, ValueError):
            pass

    def later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(self, time.monotonic() + delay, callback)
        if self._cancelled > 64 and self._cancelled * 2 > len(self._timers):
            self._timers = [entry for entry in self._timers if entry[2].live]  # answered requests' timeouts
            heapq.heapify(self._timers)
            self._cancelled = 0
        heapq.heappush(self._timers, (timer.when, next(self._order), timer))
        return timer

    def once(self, limit: float | None = None) -> None:
        """Wait for one round of events (at most ``limit`` seconds) and handle them."""
        timeout = limit
        while self._timers and not self._timers[0][2].live:
            heapq.heappop(self._timers)
            self._cancelled -= 1
        if self._timers:
            until = max(0.0, self._timers[0][0] - time.monotonic())
            timeout = until if timeout is None else min(timeout, until)
        for key, _ in self._selector.select(timeout):
            if self._selector.get_map().get(key.fileobj) is key:  # not unwatched by an earlier callback
                key.data()
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, _, timer = heapq.heappop(self._timers)
            if timer.live:
                timer.live = False
                timer.callback()
            else:
                self._cancelled -= 1
