"""The person's side of a sign-in (oauth.redirect): the redirect's listener on 127.0.0.1 and the
address pasted back, as `projector login` runs them against a scripted authorization server."""

from __future__ import annotations

from test_flow import login_model

def test_an_answer_of_another_sign_in_is_passed_over_and_this_one_completes(sandbox, authorization_server, tmp_path):
    """An old tab, or a redirect someone else forged, reaches the listener first: its state is
    not this sign-in's, so it is said and ignored, and the sign-in goes on."""
    import sys

    server = authorization_server()
    browser = tmp_path / "two-tabs.py"
    browser.write_text(
        f"#!{sys.executable}\n"
        "import sys, urllib.parse, urllib.request\n"
        "query = urllib.parse.parse_qs(urllib.parse.urlsplit(sys.argv[1]).query)\n"
        "urllib.request.urlopen(query['redirect_uri'][0] + '?code=forged&state=not-this-one', timeout=10).read()\n"
        "urllib.request.urlopen(sys.argv[1], timeout=10).read()\n")
    browser.chmod(0o755)
    done = sandbox.run("login", "linear", config=login_model(sandbox, f"{server.origin}/mcp", browser))
    assert done.returncode == 0, done.stderr
    assert ("an answer of another sign-in came back (its state is not this one's): it is ignored; finish this sign-in in "
            "the page it opened, or paste the address that page is sent back to") in done.stderr
    assert [r.form.get("code") for r in server.received if r.path == "/token"] == ["code-7"]  # the forged code was never used


def test_when_no_browser_opens_the_address_is_printed_and_taken_back_pasted(sandbox, authorization_server):
    """$BROWSER names a browser that fails to start: the address is printed, and the one the
    browser elsewhere was sent back to is read from stdin (as --paste does)."""
    import subprocess
    import sys

    from elsewhere import paste_back

    server = authorization_server()
    model = login_model(sandbox, f"{server.origin}/mcp", "/bin/false")
    login = subprocess.Popen([sys.executable, "-m", "projector", "login", "linear", "--config", str(model)], env=sandbox.env,
                             cwd=sandbox.root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        said = paste_back(login)
        login.wait(timeout=30)
        out, rest = login.stdout.read(), login.stderr.read()
    finally:
        login.kill()
    assert login.returncode == 0, said + rest
    assert "then paste here the address the browser was sent back to" in said + rest
    assert out.startswith("signed in to linear until ")


def test_a_connection_to_the_listener_that_sends_nothing_holds_no_sign_in_up(sandbox, authorization_server, tmp_path):
    """A browser's speculative connection, or another local user's, opened to the redirect's port
    and left idle: the browser's redirect is answered all the same, at once."""
    import sys

    server = authorization_server()
    seen = tmp_path / "seen"
    browser = tmp_path / "preconnecting.py"
    browser.write_text(
        f"#!{sys.executable}\n"
        "import socket, sys, urllib.parse, urllib.request\n"
        "query = urllib.parse.parse_qs(urllib.parse.urlsplit(sys.argv[1]).query)\n"
        "port = urllib.parse.urlsplit(query['redirect_uri'][0]).port\n"
        "idle = socket.create_connection(('127.0.0.1', port))\n"
        "try:\n"
        "    said = urllib.request.urlopen(sys.argv[1], timeout=8).read().decode()\n"
        "except OSError as failure:\n"
        "    said = repr(failure)\n"
        f"open({str(seen)!r}, 'w').write(said)\n")
    browser.chmod(0o755)
    done = sandbox.run("login", "linear", config=login_model(sandbox, f"{server.origin}/mcp", browser))
    assert done.returncode == 0, done.stderr
    assert "Signed in: you can close this tab." in seen.read_text()
