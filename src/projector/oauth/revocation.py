"""Revoking a sign-in's tokens at the authorization server (RFC 7009), for `projector logout`:
where its metadata named a revocation endpoint at sign-in, the refresh token first, then the
access token, the client authenticated as at a refresh (core.tokenrequest: no SDK)."""

from __future__ import annotations

from projector.core import tokenrequest, tokenstore
from projector.core.modeltypes import plain_http_host
from projector.core.record import Record

REVOKE_TIMEOUT = 5.0  # seconds each revocation request may take: a server that hangs never holds a logout up for long


class Revoked(Record):
    """What a revocation comes to: said after "signed out of NAME", and a warning when it failed."""

    said: str = ""
    warning: str | None = None


def revocation(state: str, provider: str, keyring: tokenstore.Keyring | None, insecure: bool = False) -> Revoked:
    """Revoke the stored refresh token, then the access token, where the server revokes them;
    never over plain http:// to another host (a token file an older projector wrote may name
    such an endpoint) unless the provider says ``insecure``."""
    try:
        tokens = tokenstore.read(state, provider)
    except tokenstore.Unsafe:  # its endpoint may be another user's: no secret of ours is sent there
        return Revoked(warning=f"the token file of {provider} is not one projector can trust (another user's, or others "
                               "could read it), so nothing was revoked at the server; it is forgotten here")
    if tokens is None:
        return Revoked()
    if not tokens.revocation_endpoint:
        return Revoked(" (the server names no revocation endpoint: its tokens stay valid there until they expire)")
    if not insecure and (host := plain_http_host(tokens.revocation_endpoint)):
        return Revoked(warning=f"the revocation endpoint of {provider}, {tokens.revocation_endpoint}, is plain http:// to {host}, "
                               "which is not this machine: the tokens would cross the network in clear, so they were not "
                               "revoked there (they stay valid until they expire; say insecure: true of the provider if you "
                               "accept that); they are forgotten here all the same")
    secrets = tokenstore.secrets_of(state, provider, tokens, keyring)
    failures = []
    for token, kind in ((secrets.refresh_token, "refresh_token"), (tokens.access_token, "access_token")):
        if token:
            failure, answered = revoke(tokens, secrets, token, kind)
            if failure:
                failures.append(f"the {kind.replace('_', ' ')}: {failure}")
            if not answered:
                break  # a server that does not answer is not asked twice
    if failures:
        return Revoked(warning=f"revoking the tokens of {provider} at {tokens.revocation_endpoint} failed ({'; '.join(failures)}): "
                               "they stay valid there until they expire; they are forgotten here all the same")
    return Revoked(" (its tokens are revoked at the server)")


def revoke(tokens: tokenstore.Tokens, secrets: tokenstore.Secrets, token: str, kind: str) -> tuple[str | None, bool]:
    """One RFC 7009 revocation request, the client authenticated as at a refresh: why it failed
    (None: revoked), and whether the server answered at all."""
    form, headers = tokenrequest.client_authenticated(tokens, secrets, {"token": token, "token_type_hint": kind})
    status, body, failure = tokenrequest.post(tokens.revocation_endpoint or "", form, headers, REVOKE_TIMEOUT)
    if status == 0:
        return failure, False
    if status != 200:  # RFC 7009 §2.2: 200 for a revoked token and for one the server did not know alike
        return f"HTTP {status}{tokenrequest.oauth_error(body)}", True
    return None, True
