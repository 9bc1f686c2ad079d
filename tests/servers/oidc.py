"""A real authorization server (oidc-provider from npm, run by Node 22 from the npm test tools)
and the MCP server it guards (guarded_mcp.py, on the official SDK), both on loopback."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import paths

from servers import reserved_port, started

AUTHORIZATION_SERVER = paths.SERVERS / "oidc_provider.mjs"
GUARDED = paths.SERVERS / "guarded_mcp.py"


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class Oidc:
    """oidc-provider at ``issuer``, and the guarded MCP server at ``url`` whose tokens it issues."""

    def __init__(self, node: Path, module: Path, folder: Path) -> None:
        # hex, and passed as --secret=VALUE: a urlsafe secret can start with "-", which both
        # node's parseArgs and argparse take for an option (a CI run failed on it)
        secret = secrets.token_hex(16)
        self.resource_server = ("resource-server", secret)
        self.token_record, self.check_record = folder / "token-requests.jsonl", folder / "token-checks.jsonl"
        self.token_record.touch()
        self.check_record.touch()
        listener = reserved_port()
        port = listener.getsockname()[1]
        self.issuer = f"http://127.0.0.1:{port}"
        self.authorization = started([str(node), str(AUTHORIZATION_SERVER), "--module", str(module), "--port", str(port),
                                      f"--secret={secret}", "--record", str(self.token_record)], listener, "oidc-provider")
        listener = reserved_port()
        port = listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/mcp"
        try:
            self.guarded = started([sys.executable, str(GUARDED), "--port", str(port), "--issuer", self.issuer, f"--secret={secret}",
                                    "--record", str(self.check_record)], listener, "the guarded MCP server")
        except RuntimeError:
            _stop(self.authorization)
            raise

    def token_requests(self) -> list[dict]:
        """Every request to the token endpoint so far: grant_type, refresh_token, resource, status, error."""
        return [json.loads(line) for line in self.token_record.read_text().splitlines()]

    def refreshes(self, since: int = 0) -> list[dict]:
        return [r for r in self.token_requests()[since:] if r["grant_type"] == "refresh_token"]

    def checks(self) -> list[dict]:
        """Every token the MCP server checked: active, aud, accepted, client_id, sub."""
        return [json.loads(line) for line in self.check_record.read_text().splitlines()]

    def post(self, path: str, form: dict[str, str] | str, basic: tuple[str, str] | None = None) -> tuple[int, dict]:
        """POST a form to the authorization server: (status, the JSON answer)."""
        import base64

        data = form if isinstance(form, str) else urllib.parse.urlencode(form)
        request = urllib.request.Request(self.issuer + path, data=data.encode(), method="POST")
        if basic:
            request.add_header("Authorization", "Basic " + base64.b64encode(":".join(basic).encode()).decode())
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                body = answer.read()
                return answer.status, json.loads(body) if body else {}
        except urllib.error.HTTPError as refused:
            body = refused.read()
            return refused.code, json.loads(body) if body else {}

    def set_access_token_ttl(self, seconds: int) -> None:
        """The lifetime of the access tokens issued from now on."""
        self.post("/test/ttl", str(seconds))

    def stop(self) -> None:
        _stop(self.guarded)
        _stop(self.authorization)
