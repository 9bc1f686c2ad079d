"""What a sign-in (`projector login`, its device grant) holds the servers it meets to: no request
in clear to another host, and none of their text on the terminal as it came."""

from __future__ import annotations

from projector.core.modeltypes import plain_http_host
from projector.oauth import SignInFailed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from typing import Any


def in_clear(url: str) -> str | None:
    """Why a sign-in's request to ``url`` is not made: plain http:// to a host that is not this
    machine (the model's rule for the provider's url, held to the authorization server the
    server's metadata names, where the code, the client's secret and the tokens go); None: it may."""
    host = plain_http_host(url)
    if host is None:
        return None
    return (f"{url.split('?')[0]} is plain http:// to {host}, which is not this machine: the sign-in's codes, "
            "secrets and tokens would cross the network in clear (the MCP authorization spec requires HTTPS there), so "
            "projector does not sign in; say insecure: true of the provider if you accept that")


def refusing_clear_text(insecure: bool) -> Callable[[Any], Awaitable[None]]:
    """A sign-in HTTP client's request hook: SignInFailed for each request ``in_clear`` refuses,
    unless the provider accepts plain http:// (``insecure``)."""

    async def refuse_clear_text(request: Any) -> None:
        if not insecure and (why := in_clear(str(request.url))):
            raise SignInFailed(why)

    return refuse_clear_text


def printable(text: str) -> str:
    """``text`` with its control and format characters written out (``\\x1b``, ``\\n``, ``\\u202e``):
    an error quotes what a server said, whose escape sequences or new lines would otherwise reach
    the terminal, or forge a line of projector's in a bridge's sign-in log."""
    import unicodedata

    def shown(char: str) -> str:
        if unicodedata.category(char) not in ("Cc", "Cf"):
            return char
        return repr(char)[1:-1] if ord(char) < 0x100 else f"\\u{ord(char):04x}"

    return "".join(map(shown, text))
