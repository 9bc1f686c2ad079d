"""A request to an OAuth provider's authorization server made with a stored sign-in (standard
library only: the bridge's refresh and `projector logout`'s revocation), authenticated as the
client registered at sign-in. Neither a request's secrets nor an answer's tokens are ever said."""

from __future__ import annotations

import json

from projector.core.tokenstore import Secrets, Tokens

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def client_authenticated(tokens: Tokens, secrets: Secrets, form: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``form`` and the request's headers, with the client authenticated the way it registered at
    the token endpoint (RFC 6749 §2.3): HTTP Basic, the secret in the form, or (a public client)
    its id alone. RFC 7009 §2.1 has revocation authenticate the same way."""
    import base64
    import urllib.parse

    form = dict(form)
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
    if tokens.auth_method == "client_secret_basic" and secrets.client_secret:
        pair = f"{urllib.parse.quote(tokens.client_id or '', safe='')}:{urllib.parse.quote(secrets.client_secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    else:
        form["client_id"] = tokens.client_id or ""
        if tokens.auth_method == "client_secret_post" and secrets.client_secret:
            form["client_secret"] = secrets.client_secret
    return form, headers


def post(url: str, form: dict[str, str], headers: dict[str, str], timeout: float) -> tuple[int, bytes | None, str]:
    """POST ``form`` to ``url``: the HTTP status and body, or (0, None, why) when no answer came."""
    import urllib.error
    import urllib.parse
    import urllib.request

    class Unfollowed(urllib.request.HTTPRedirectHandler):
        """A redirect is answered as the refusal it is: urllib would follow a POST's 301/302/303
        as a GET to any origin with the Authorization header (the client's secret) kept."""

        def redirect_request(self, *_: Any) -> None:
            return None

    request = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode(), headers=headers, method="POST")
    try:
        with urllib.request.build_opener(Unfollowed).open(request, timeout=timeout) as response:
            return response.status, response.read(), ""
    except urllib.error.HTTPError as refused:
        try:
            return refused.code, refused.read(), ""
        except OSError:
            return refused.code, None, ""
    except TimeoutError:  # socket.timeout is TimeoutError (Python 3.10+)
        return 0, None, f"no answer within {timeout:g} s"
    except urllib.error.URLError as failure:
        if isinstance(failure.reason, TimeoutError):
            return 0, None, f"no answer within {timeout:g} s"
        return 0, None, type(failure.reason).__name__ if isinstance(failure.reason, BaseException) else "URLError"
    except (OSError, ValueError) as failure:
        return 0, None, type(failure).__name__


def oauth_error(body: bytes | None) -> str:
    """`: invalid_grant` from an OAuth error answer (its code only: a description may quote anything)."""
    try:
        code = json.loads(body or b"").get("error")
    except (ValueError, AttributeError):
        return ""
    return f": {code}" if isinstance(code, str) and code.replace("_", "").isalnum() else ""


def json_object(body: bytes | None) -> dict[str, Any] | None:
    try:
        answer = json.loads(body or b"")
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None
