"""Signing in to an OAuth provider, for `projector login` (and, through it, a bridge's own
sign-in, which runs `projector login --from-bridge` as a child: the bridge never imports this).

- ``flow``: the sign-in, on the official MCP SDK's OAuth client: a person's authorization code
  (the browser, or the address pasted back), a machine's ``client_credentials``, enterprise
  (SEP-990); the tokens it ends with, for core.tokenstore;
- ``redirect``: the person's side of the authorization code: the browser, and the redirect's
  listener on 127.0.0.1 (or the address read from stdin);
- ``device``: the device authorization grant (RFC 8628), which the SDK has not;
- ``issuer``: the 2025-03-26 fallback's issuer, a mixin of the SDK's OAuth client;
- ``guard``: what a sign-in holds the servers it meets to (no request in clear to another
  host, none of their text on the terminal as it came).

A leaf above ``core``, used by ``commands`` only (tests/test_imports.py). The SDK (with pydantic
and httpx2) is imported inside the functions that use it: importing a module here costs the
standard library's modules and core's.
"""

from __future__ import annotations

import sys

from projector.core.errors import ProjectorError

PROTOCOL = "2025-11-25"  # the MCP version a sign-in's own requests to the server say they speak


class SignInFailed(ProjectorError):
    """The sign-in did not end with a token (the message says why, never a token)."""


def tell(text: str) -> None:
    """Say ``text`` to the person signing in (stderr: stdout is the command's result)."""
    print(text, file=sys.stderr, flush=True)
