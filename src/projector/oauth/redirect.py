"""The person's side of an authorization code sign-in: the browser sent to the authorization
page (``$BROWSER`` when set, as git and Python's webbrowser take it; without one, the address
printed to open elsewhere), and the redirect's end: a listener on 127.0.0.1, or the address the
browser was sent back to, pasted on stdin. The answer is taken only with this sign-in's ``state``."""

from __future__ import annotations

import queue
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

from projector.oauth import SignInFailed, tell

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

WAIT_FOR_BROWSER = 300.0  # seconds a sign-in waits for the browser to come back
CALLBACK = "/callback"


def state_of(authorization_url: str) -> str | None:
    """The ``state`` an authorization address carries: the answer to wait for has the same."""
    return parse_qs(urlsplit(authorization_url).query).get("state", [None])[0]


def send_person_to(url: str, paste: bool) -> bool:
    """Send the person to ``url``: the browser, or (``paste``, or no browser would open) the URL
    printed to open elsewhere; whether a browser opened."""
    if not paste:
        import webbrowser

        if webbrowser.open(url):
            tell("opened the browser to sign in; waiting for it to come back…")
            return True
    tell(f"open this address in a browser and sign in:\n\n  {url}\n\n"
        "then paste here the address the browser was sent back to (it starts with http://127.0.0.1):")
    return False


class Listener:
    """The redirect's end: an HTTP server on 127.0.0.1 (``port``, else a free one) that takes one
    ``/callback`` and hands its query over; or, when pasting, the address read from stdin."""

    def __init__(self, port: int | None) -> None:
        import http.server

        answers: queue.Queue[dict[str, str]] = queue.Queue()
        self.answers = answers
        self.state: str | None = None
        listener = self

        class Callback(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                parts = urlsplit(self.path)
                if parts.path != CALLBACK:
                    self.send_error(404)
                    return
                answer = {k: v[0] for k, v in parse_qs(parts.query).items()}
                answers.put(answer)
                said = ("Signed in: you can close this tab." if answer.get("state") == listener.state
                        else "This is not the sign-in projector is waiting for: finish the one it opened.")
                body = f"<!doctype html><title>projector</title><p>{said}</p>\n".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:  # the query holds the code: never logged
                pass

            timeout = 10  # seconds an idle connection is kept

        try:  # a thread a connection: one left idle (a browser's preconnect, another user's) holds up no other
            self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port or 0), Callback)
            self.server.daemon_threads = True
        except OSError as exc:
            raise SignInFailed(f"cannot listen on 127.0.0.1:{port} for the sign-in's redirect ({exc.strerror}): "
                               "free the port, or change redirect_port with the server's registration") from None
        self.redirect_uri = f"http://127.0.0.1:{self.server.server_address[1]}{CALLBACK}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def expect(self, state: str | None) -> None:
        """This sign-in's ``state``: an answer with another is not this sign-in's."""
        self.state = state

    def read_pasted(self) -> None:
        """Take the address from standard input too (the loopback listener stays)."""
        threading.Thread(target=self._read_pasted, daemon=True).start()

    def _read_pasted(self) -> None:
        for line in sys.stdin:
            parts = urlsplit(line.strip())
            if parts.query:
                self.answers.put({k: v[0] for k, v in parse_qs(parts.query).items()})  # wait() says if it is not this sign-in's
                continue
            tell("that is not the address the browser was sent back to (it has ?code=...&state=...); paste it again:")

    def wait(self) -> dict[str, str]:
        """The answer of this sign-in; another sign-in's (an old tab, a forged redirect: its
        ``state`` is not this one's) is said and passed over, and the wait goes on."""
        deadline = time.monotonic() + WAIT_FOR_BROWSER
        while True:
            try:
                answer = self.answers.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                raise SignInFailed(f"the browser did not come back within {WAIT_FOR_BROWSER:.0f} seconds; sign in again") from None
            if answer.get("state") == self.state:
                return answer
            tell("an answer of another sign-in came back (its state is not this one's): it is ignored; finish this sign-in "
                "in the page it opened, or paste the address that page is sent back to")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
