"""A sign-in the bridge starts itself, and waits for without blocking (standard library only).

A session with no usable token (nobody signed in, a refused refresh, a 401 a refresh cannot
cure) or a request the provider refuses for want of scope (403 ``insufficient_scope``) needs a
person in a browser. The bridge then runs `projector login P` itself: detached in a session of
its own (it outlives the bridge), stdin /dev/null, its output appended to the bridge's log file
(else ``<state>/oauth/P.sign-in.log``). It does so only while nobody holds the provider's
sign-in lock (a sign-in or refresh under way is waited for instead), and `login --from-bridge
STAMP`, once it holds the lock, keeps a sign-in another session wrote since the token file was
at STAMP: bridges racing to start one open the browser once. Without a display and without
$BROWSER nobody could finish it here: nothing is started, and the session says to run
`projector login P`.

The new token is noticed by the token file's stamp, looked at on the loop's timer (POLL) only
while something waits for it: a signed-in session's requests never pay for it.
"""

from __future__ import annotations

import os
import time

from projector.core import tokenstore

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from projector.runtime.bridge.loop import Loop
    from projector.runtime.bridge.renew import Renewer

    Done = Callable[[str | None, str | None], None]  # (token, None) or (None, why)

POLL = 0.75  # seconds between two looks at the token file while a session waits for a sign-in
STEP_UP_WAIT = 310.0  # seconds a request waits for its step-up: login's own wait for the browser, and a little


class _Waiter:
    __slots__ = ("done", "scope", "deadline", "asked")

    def __init__(self, done: Done, scope: str | None, deadline: float | None):
        self.done = done
        self.scope = scope  # the token must have these scopes (a step-up); None: any usable token
        self.deadline = deadline  # time.monotonic() after which it is given up; None: for as long as the session lasts
        self.asked = False  # a step-up's: the login running here asks for its scope, so its end is the answer


class SignIn:
    """One provider's sign-in, as this bridge's session and requests wait for it."""

    def __init__(self, renewer: Renewer, log: Callable[[str], None], output: str | None, person: bool,
                 fixed: tuple[str, ...] | None = None):
        self.renewer = renewer
        self.fixed = fixed  # the model's `scopes`: what a sign-in may ask for; None: what the server names
        self.provider = renewer.provider
        self.log = log
        self.output = output or os.path.join(renewer.state, tokenstore.FOLDER, f"{renewer.provider}.sign-in.log")
        self.person = person  # someone must finish it in a browser (not a client_credentials or enterprise grant)
        self.waiters: list[_Waiter] = []
        self.stamp = ""  # the token file when the first of the waiters began
        self.child: int | None = None  # the `projector login` this bridge started, until it ends
        self.child_scope: str | None = None  # the scope it asks for; None: the model's or the server's
        self.failed = False  # the last one it started ended without writing a sign-in
        self.started = False  # one was started (or joined) for the waiters of now
        self.timer = None

    def needed(self) -> str | None:
        """Why a sign-in is needed before the provider's session can open (nobody signed in, a
        refused refresh); None when there is a token (renewed first when it expires) or what is
        wrong is not cured by signing in (the session then says it)."""
        from projector.runtime.bridge.renew import SignInNeeded

        token, problem = self.renewer.current()
        return problem if token is None and isinstance(problem, SignInNeeded) else None

    def advice(self) -> str:
        """What the person can do, for a session's instructions and a tool's error."""
        login = f"`projector login {self.provider}`"
        if self.child is not None:
            return f"a sign-in to {self.provider} is waiting in the browser: finish it there, or run {login}"
        if self.failed:
            return f"the sign-in to {self.provider} did not finish (see the log): run {login}"
        return f"run {login}"

    def beyond(self, challenged: str) -> list[str]:
        """The challenged scopes the model's fixed `scopes` leave out: a step-up does not ask for
        them (the person chose the scopes; a server may not widen them by asking), and the
        request says where to add them."""
        if self.fixed is None:
            return []
        return [scope for scope in dict.fromkeys(challenged.split()) if scope not in self.fixed]

    def wanted(self, challenged: str) -> str:
        """The scopes a step-up asks for: those of the stored sign-in and the challenged ones."""
        try:
            tokens = tokenstore.read(self.renewer.state, self.provider)
        except tokenstore.Unsafe:
            tokens = None
        scopes = ((tokens.scope if tokens else None) or "").split() + challenged.split()
        return " ".join(dict.fromkeys(scopes))

    def wait(self, loop: Loop, done: Done, scope: str | None = None, limit: float | None = None) -> None:
        """``done(token, None)`` once a usable token is written (one with ``scope``, when given);
        with a ``limit``, ``done(None, why)`` when it passes or the sign-in that asked for it
        ends without one. A sign-in is started for it unless one is under way; a step-up's
        (``scope``) is then started once the one under way ends without that scope."""
        if not self.waiters:  # a sign-in is one written since the file the renewer last read (a step-up's: since now)
            seen = self.renewer.seen if scope is None else ""
            self.stamp = seen or tokenstore.stamp(self.renewer.state, self.provider)
            self.started = False
        waiter = _Waiter(done, scope, None if limit is None else time.monotonic() + limit)
        self.waiters.append(waiter)
        if scope is None:
            none = self._start(None) if not self.started else None
        else:
            none = self._ask(waiter)
        if none is not None and limit is not None:  # nothing will come within the limit: said now
            self.waiters.remove(waiter)
            done(None, none)
            return
        if self.timer is None:
            self.timer = loop.later(POLL, lambda: self._poll(loop))

    # ------------------------------------------------------------------ the login

    def _ask(self, waiter: _Waiter) -> str | None:
        """A login for a step-up's scope: the one running here when it asks for that scope; else,
        once none runs (one without that scope, a session's or another step-up's, or another
        projector's, is waited for first: its token may do), its own (``_ask_for_step_ups``).
        Why none will come, when none will."""
        assert waiter.scope is not None
        if self.child is not None:
            waiter.asked = self.child_scope is not None and tokenstore.covers(self.child_scope, waiter.scope)
            return None
        none = self._start(waiter.scope)
        waiter.asked = self.child is not None
        return none

    def _ask_for_step_ups(self) -> None:
        """The step-ups that waited for a login that did not ask for their scope: theirs, now
        that none runs here nor in another projector."""
        pending = [waiter for waiter in self.waiters if waiter.scope is not None and not waiter.asked]
        if not pending or self.child is not None or tokenstore.held(self.renewer.state, self.provider):
            return
        for waiter in pending:
            if (none := self._ask(waiter)) is not None:
                self.waiters.remove(waiter)
                waiter.done(None, none)

    def _start(self, scope: str | None) -> str | None:
        """Start `projector login` unless one is under way; why none is, when none is."""
        if self.child is not None:
            return None  # one at a time: what it writes is looked at for every waiter
        self.started = True
        if tokenstore.held(self.renewer.state, self.provider):
            self.log(f"a sign-in to {self.provider} is under way in another projector: waiting for it")
            return None
        if self.person:
            from projector.core.signin import headless

            if headless(os.environ):
                self.log(f"no browser can open here (no display, no $BROWSER): run `projector login {self.provider}`")
                return "no browser can open where the bridge runs (no display, no $BROWSER)"
        options = ["--from-bridge", self.stamp, *(["--scope", scope] if scope else [])]
        try:
            tokenstore.private_folder(self.renewer.state)  # the log goes there, unless the bridge has one
            self.child = _spawn(self.renewer.login_command(*options), self.output)
            self.child_scope = scope
        except tokenstore.Unsafe as unsafe:
            self.log(str(unsafe))
            return str(unsafe)
        except OSError as failure:
            self.log(f"cannot start `projector login {self.provider}` ({failure.strerror}): run it yourself")
            return f"`projector login {self.provider}` could not be started ({failure.strerror})"
        self.failed = False
        what = f" for {scope}" if scope else ""
        self.log(f"started a sign-in to {self.provider}{what} (pid {self.child}, its output in {self.output})")
        return None

    def _reaped(self) -> bool:
        """Whether the login this started has just ended (it is no child of this process: how it
        ended is read from the token file, a new sign-in or none)."""
        if self.child is None or _running(self.child):
            return False
        self.child = None
        self.failed = tokenstore.stamp(self.renewer.state, self.provider) == self.stamp
        self.log(f"the sign-in to {self.provider} ended" + (" without a new sign-in" if self.failed else ""))
        return True

    # ------------------------------------------------------------------ noticing its end

    def _poll(self, loop: Loop) -> None:
        self.timer = None
        ended = self._reaped()
        now = tokenstore.stamp(self.renewer.state, self.provider)
        tokens = self._usable() if now != self.stamp else None
        clock = time.monotonic()
        waiting: list[_Waiter] = []
        for waiter in self.waiters:
            if tokens is not None and (waiter.scope is None or tokenstore.covers(tokens.scope, waiter.scope) or (ended and waiter.asked)):
                waiter.done(tokens.access_token, None)  # (the last: what the server granted, which the request finds out)
            elif ended and waiter.asked:
                waiter.done(None, f"the sign-in to {self.provider} ended without a new token (see the log)")
            elif waiter.deadline is not None and clock > waiter.deadline:
                waiter.done(None, f"the sign-in to {self.provider} did not finish within {STEP_UP_WAIT:.0f} s")
            else:
                waiting.append(waiter)
        self.waiters = waiting
        if tokens is not None:
            self.stamp = now
        self._ask_for_step_ups()
        if self.waiters or self.child is not None:
            self.timer = loop.later(POLL, lambda: self._poll(loop))

    def _usable(self) -> tokenstore.Tokens | None:
        try:
            tokens = tokenstore.read(self.renewer.state, self.provider)
        except tokenstore.Unsafe:
            return None
        if tokens is None or not tokens.current_for(self.renewer.url, time.time()):
            return None  # (a sign-in for another address: the provider's old one, as a session the model has not moved yet writes it)
        return tokens


# The shell between the bridge and the login: it starts the login in the background, says its
# pid and exits, so the login is nobody's child here but init's.
_ORPHAN = 'log=$1; shift; "$@" </dev/null >>"$log" 2>&1 & echo $!'


def _spawn(argv: list[str], output: str) -> int:
    """Start ``argv`` detached: a session of its own, stdin /dev/null, stdout and stderr appended
    to ``output`` (0600), and orphaned: a client that ends the bridge's descendants with its
    session (one does once its one-shot run has answered, whatever their session) would end the
    sign-in before the browser opened. The login's pid. posix_spawn rather than subprocess, which would
    import threading."""
    os.makedirs(os.path.dirname(output), mode=0o700, exist_ok=True)
    os.close(os.open(output, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600))
    read, write = os.pipe()
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_DUP2, write, 1),
               (os.POSIX_SPAWN_OPEN, 2, output, os.O_WRONLY | os.O_APPEND, 0),
               (os.POSIX_SPAWN_CLOSE, read), (os.POSIX_SPAWN_CLOSE, write)]
    try:
        shell = os.posix_spawn("/bin/sh", ["/bin/sh", "-c", _ORPHAN, "sh", output, *argv], os.environ, file_actions=actions, setsid=True)
    except OSError:
        os.close(read)
        raise
    finally:
        os.close(write)
    with os.fdopen(read) as said:
        pid = said.read().strip()
    os.waitpid(shell, 0)
    if not pid.isdigit():
        raise OSError(0, "the shell that starts it said no pid")
    return int(pid)


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs (not ended, nor a zombie its new parent has not reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # the pid is another user's now: ours ended
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rpartition(b")")[2].split()[0] != b"Z"
    except OSError:
        return True  # no /proc (macOS): launchd reaps orphans
