"""A person who signs in on another machine's browser: `projector login` printed the address
(no browser here, or --paste); it is opened there (its redirects followed, as a person who
approves at once would), up to the redirect to this machine's loopback listener, which that
browser cannot reach; that address is pasted back on login's standard input."""

from __future__ import annotations

import subprocess
import urllib.error
import urllib.request


class _Stop(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 (urllib's signature)
        if newurl.startswith("http://127.0.0.1"):
            raise urllib.error.HTTPError(newurl, code, "the loopback redirect", headers, fp)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def paste_back(login: subprocess.Popen) -> str:
    """Read ``login``'s stderr (text) up to the printed address, open it elsewhere, paste the
    loopback address it ends at on ``login``'s stdin; what stderr said so far."""
    said = []
    for line in login.stderr:
        said.append(line)
        if line.startswith("  http"):
            try:
                urllib.request.build_opener(_Stop).open(line.strip(), timeout=20)
            except urllib.error.HTTPError as back:
                login.stdin.write(back.url + "\n")
                login.stdin.flush()
            break
    return "".join(said)
