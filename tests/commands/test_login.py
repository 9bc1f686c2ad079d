"""`projector login` and `projector logout`: what they refuse, and what logout forgets. The
sign-in itself runs against the MCP conformance suite's authorization servers
(tests/runtime/bridge/test_peers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from projector.core import tokenstore

MODEL = """\
version: 1
providers:
  linear:
    url: https://mcp.linear.app/mcp
    oauth: true
  slack:
    url: https://mcp.slack.com/mcp
    oauth: client
  docs:
    url: https://kb.example.com/mcp
    token_env: DOCS_TOKEN
"""


def test_login_names_what_it_cannot_sign_in_to(sandbox):
    model = sandbox.model(MODEL)
    cases = {
        "lineer": 'error: no provider named "lineer" (did you mean "linear"?) (OAuth providers: linear, slack)',
        "slack": 'error: provider "slack" has oauth: client: each client signs itself in, projector does not',
        "docs": 'error: provider "docs" does not sign in with OAuth (give it oauth: true in the model)',
    }
    for name, message in cases.items():
        done = sandbox.run("login", name, config=model)
        assert (done.returncode, done.stderr.strip()) == (1, message)


def test_logout_forgets_the_stored_tokens(sandbox):
    model = sandbox.model(MODEL)
    state = sandbox.env["XDG_STATE_HOME"] + "/projector"
    tokenstore.write(state, "linear", tokenstore.Tokens(access_token="canary", expires_at=None,
                                                        secrets=tokenstore.Secrets(refresh_token="canary-refresh")))
    done = sandbox.run("logout", "linear", config=model)
    assert (done.returncode, done.stdout) == (0, "signed out of linear (the server names no revocation endpoint: its tokens stay "
                                                 "valid there until they expire)\n")
    assert tokenstore.read(state, "linear") is None
    assert sandbox.run("logout", "linear", config=model).stdout == "not signed in to linear\n"


def test_status_doctor_and_explain_say_how_each_oauth_provider_signs_in_never_the_token(sandbox):
    import time

    model = sandbox.model(MODEL)
    sandbox.install_projector()
    state = sandbox.env["XDG_STATE_HOME"] + "/projector"
    assert "sign-in: linear: needs a sign-in: run `projector login linear`" in sandbox.run("status", config=model).stdout
    canary = "canary-access-0af1"
    tokenstore.write(state, "linear", tokenstore.Tokens(access_token=canary, expires_at=time.time() + 7200,
                                                        secrets=tokenstore.Secrets(refresh_token="canary-refresh-0af1")))
    outputs = {args: sandbox.run(*args, config=model) for args in [("status",), ("status", "--json"), ("doctor",), ("explain", str(sandbox.root)),
                                                                   ("explain", str(sandbox.root), "--json")]}
    status = outputs[("status",)].stdout
    assert "sign-in: linear: signed in through projector until " in status and "(tokens in the state folder)" in status
    assert "sign-in: slack: each client signs itself in (oauth: client); bindings do not narrow it" in status
    assert "linear: signed in through projector until" in outputs[("doctor",)].stdout
    assert "authenticates with OAuth: signed in through projector until" in outputs[("explain", str(sandbox.root))].stdout
    outputs["sync"] = sandbox.run("sync", config=model)
    for done in outputs.values():
        assert "canary" not in done.stdout + done.stderr
    holding = [str(path) for path in sandbox.home.rglob("*") if path.is_file() and b"canary" in path.read_bytes()]
    assert holding == [state + "/oauth/linear.json"]  # no client file, cache or log under HOME holds the token
    tokenstore.write(state, "linear", tokenstore.Tokens(access_token=canary, expires_at=time.time() - 60))
    doctor = sandbox.run("doctor", config=model).stdout
    assert "PROBLEM  linear: the sign-in expired at " in doctor and "and cannot be renewed: run `projector login linear`" in doctor
    assert sum("run `projector login linear`" in line for line in doctor.splitlines()) == 1, doctor  # its own check, not sync's warning again


def test_sync_says_once_that_an_oauth_provider_needs_a_sign_in(sandbox):
    """Every client gets the bridge for an OAuth provider; nobody signed in, its first session
    starts the sign-in itself where a browser can open (a machine's grant: with its client's
    credentials), and sync says so once, in one line."""
    sandbox.install_projector()
    machine = ("  ci:\n    url: https://ci.example.com/mcp\n    oauth:\n      client_id: ci-bot\n      client_secret_env: CI_SECRET\n"
               "      client_credentials: true\n")
    model = sandbox.model(MODEL + machine)
    first = sandbox.run("sync", config=model)
    assert first.returncode == 0, first.stderr
    said = [line for line in first.stderr.splitlines() if "signs in through projector" in line]
    assert said == ['warning: provider "ci" signs in through projector, once for every client: needs a sign-in: run '
                    "`projector login ci` (or the first session signs in itself: its grant needs no person)",
                    'warning: provider "linear" signs in through projector, once for every client: needs a sign-in: run '
                    "`projector login linear` (or the first session opens the browser for it, where one can open; "
                    "`oauth: client` lets each client sign itself in instead)"]
    model.write_text(MODEL + machine + "# touched\n")
    assert "signs in through projector" not in sandbox.run("sync", config=model).stderr  # said once
    tokenstore.write(sandbox.env["XDG_STATE_HOME"] + "/projector", "linear",
                     tokenstore.Tokens(access_token="canary", expires_at=None))
    model.write_text(MODEL + machine)
    assert "signs in through projector" not in sandbox.run("sync", config=model).stderr  # signed in: nothing to say


def test_a_login_a_bridge_started_keeps_the_sign_in_another_session_wrote_meanwhile(sandbox):
    """`login --from-bridge STAMP`: the token file is no longer at STAMP and holds a usable token
    (another bridge's sign-in won the race), so it signs in no more: no browser, no request."""
    model = sandbox.model(MODEL)
    state = sandbox.env["XDG_STATE_HOME"] + "/projector"
    asked_at = tokenstore.stamp(state, "linear")  # nobody signed in when the bridge asked
    tokenstore.write(state, "linear", tokenstore.Tokens(access_token="canary", expires_at=None, scope="read"))
    done = sandbox.run("login", "linear", "--from-bridge", asked_at, config=model)
    assert (done.returncode, done.stdout) == (0, "signed in to linear already (another session did)\n"), done.stderr
    assert "canary" not in done.stdout + done.stderr
    assert "--from-bridge" not in sandbox.run("login", "--help").stdout  # for bridges only


def test_an_expired_machine_grant_is_said_to_be_renewed_at_the_next_session(sandbox):
    """A client_credentials token has no refresh token, and needs none: the bridge signs in again
    with the client's credentials, so doctor does not ask anyone to run `projector login`."""
    import time

    model = sandbox.model(MODEL + "  ci:\n    url: https://ci.example.com/mcp\n    oauth:\n      client_id: ci-bot\n"
                                  "      client_secret_env: CI_SECRET\n      client_credentials: true\n")
    state = sandbox.env["XDG_STATE_HOME"] + "/projector"
    tokenstore.write(state, "ci", tokenstore.Tokens(access_token="canary", expires_at=time.time() - 60))
    doctor = sandbox.run("doctor", config=model).stdout
    assert "ci: signed in through projector; the token expired at " in doctor and "is renewed at the next session" in doctor
    assert "run `projector login ci`" not in doctor


def test_a_sign_in_for_the_providers_old_address_is_said_to_need_a_new_one(sandbox):
    """The model moved the provider after `projector login`: status, doctor and explain name the
    address it was signed in for and the one the model says now, and what to run."""
    model = sandbox.model(MODEL.replace("https://mcp.linear.app/mcp", "https://mcp.linear.app/v2/mcp"))
    sandbox.install_projector()
    state = sandbox.env["XDG_STATE_HOME"] + "/projector"
    tokenstore.write(state, "linear", tokenstore.Tokens(access_token="canary", expires_at=None, resource="https://mcp.linear.app/mcp"))
    said = ("signed in for https://mcp.linear.app/mcp, the model now says https://mcp.linear.app/v2/mcp: "
            "run `projector login linear`")
    assert f"sign-in: linear: {said}" in sandbox.run("status", config=model).stdout
    assert f"PROBLEM  linear: {said}" in sandbox.run("doctor", config=model).stdout
    assert f"authenticates with OAuth: {said}" in sandbox.run("explain", str(sandbox.root), config=model).stdout
    machine = model.read_text() + ("  ci:\n    url: https://ci.example.com/v2/mcp\n    oauth:\n      client_id: ci-bot\n"
                                   "      client_secret_env: CI_SECRET\n      client_credentials: true\n")
    model.write_text(machine)
    tokenstore.write(state, "ci", tokenstore.Tokens(access_token="canary", expires_at=None, resource="https://ci.example.com/mcp"))
    doctor = sandbox.run("doctor", config=model).stdout  # a machine's grant: the bridge signs in again by itself
    assert ("ci: signed in for https://ci.example.com/mcp, the model now says https://ci.example.com/v2/mcp: the next session "
            "signs in again (its grant needs no person)") in doctor
    assert "PROBLEM  ci:" not in doctor


def test_a_login_a_bridge_started_signs_in_when_what_was_written_meanwhile_is_for_another_address(sandbox):
    """`login --from-bridge STAMP` keeps another session's sign-in only when it serves the
    provider's address: one for the old address (a session the model had not moved yet renewed
    it) is no sign-in for the new one, so the sign-in goes on (here it fails: nothing listens)."""
    model = sandbox.model(MODEL.replace("https://mcp.linear.app/mcp", "http://127.0.0.1:9/mcp"))
    state = sandbox.env["XDG_STATE_HOME"] + "/projector"
    asked_at = tokenstore.stamp(state, "linear")
    tokenstore.write(state, "linear", tokenstore.Tokens(access_token="canary", expires_at=None, resource="https://mcp.linear.app/mcp"))
    done = sandbox.run("login", "linear", "--from-bridge", asked_at, config=model)
    assert "already" not in done.stdout and done.returncode == 1, done.stdout + done.stderr


# --------------------------------------------------------------------------- what a person sees when a sign-in fails


FOLLOW = Path(__file__).resolve().parents[1] / "runtime" / "bridge" / "follow_redirects.py"


def login_model(sandbox, url: str, browser: str | Path = FOLLOW) -> Path:
    sandbox.env["BROWSER"] = str(browser)
    return sandbox.model(f"version: 1\nproviders:\n  linear:\n    url: {url}\n    oauth: true\n")


def refused(sandbox, server) -> str:
    """The last line of a `projector login` against ``server`` that fails, having kept nothing."""
    done = sandbox.run("login", "linear", config=login_model(sandbox, f"{server.origin}/mcp"))
    assert done.returncode == 1, done.stdout
    assert tokenstore.read(sandbox.env["XDG_STATE_HOME"] + "/projector", "linear") is None
    return done.stderr.splitlines()[-1]


@pytest.mark.parametrize(("pkce", "said"), [
    (None, "does not offer PKCE (its metadata lists no code_challenge_methods_supported)"),
    (("plain",), "offers PKCE only as plain, not S256"),
])
def test_an_authorization_server_without_pkce_s256_is_refused(sandbox, authorization_server, pkce, said):
    server = authorization_server(pkce=pkce)
    done = sandbox.run("login", "linear", config=login_model(sandbox, f"{server.origin}/mcp"))
    assert (done.returncode, done.stderr) == (1, f"error: the authorization server {server.origin} {said}, which the MCP "
                                                 "authorization spec requires: projector does not sign in there; ask the "
                                                 "server's operator to turn on PKCE with S256\n")
    assert "GET /authorize" not in server.paths() and "POST /token" not in server.paths()  # no code was ever asked for
    assert tokenstore.read(sandbox.env["XDG_STATE_HOME"] + "/projector", "linear") is None


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


def test_a_server_that_cannot_be_reached_is_said_with_what_to_check(sandbox):
    from servers import free_port

    url = f"http://127.0.0.1:{free_port()}/mcp"
    done = sandbox.run("login", "linear", config=login_model(sandbox, url))
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: signing in to linear failed: cannot reach {url} (ConnectError: ")
    assert done.stderr.endswith("): check the provider's url in the model, and that the server is up\n")


@pytest.mark.parametrize(("route", "answer"), [
    ("POST /token", {"token": "canary-access-7", "token_type": "Bearer", "refresh_token": "canary-refresh-7"}),  # no access_token
    ("POST /register", {"redirect_uris": [], "client_secret": "canary-client-secret"}),  # no client_id
])
def test_an_answer_the_sdk_cannot_read_is_said_without_the_secrets_it_holds(sandbox, authorization_server, route, answer):
    """pydantic's validation error quotes the answer it could not read (``input_value={...}``),
    tokens and secrets included, and the SDK's error message quotes that: what login says (to the
    terminal, or to a bridge's sign-in log) names the field, never the value."""
    from servers.scripted import Answer

    server = authorization_server()
    server.routes[route] = Answer(201 if "register" in route else 200, answer)
    done = sandbox.run("login", "linear", config=login_model(sandbox, f"{server.origin}/mcp"))
    assert done.returncode == 1
    assert "canary" not in done.stdout + done.stderr, done.stderr
    said = {"POST /token": "OAuthTokenError: Invalid token response: access_token: Field required",
            "POST /register": "OAuthRegistrationError: Invalid registration response: client_id: Field required"}[route]
    assert done.stderr.splitlines()[-1] == f"error: signing in to linear failed: {said}"


def test_an_authorization_server_that_publishes_no_metadata_is_refused_where_the_resource_names_it(sandbox, authorization_server):
    """With Protected Resource Metadata naming the authorization server, that server must publish
    its metadata (RFC 8414 or OpenID), which says whether it does PKCE with S256: without it the
    SDK would fall back to /authorize and /token on its origin, and nothing would be checked. Only
    the 2025-03-26 fallback (no Protected Resource Metadata at all) signs in without metadata."""
    server = authorization_server()
    del server.routes["GET /.well-known/oauth-authorization-server"]
    assert refused(sandbox, server) == (
        f"error: the authorization server {server.origin} that {server.origin}/mcp names publishes no metadata (RFC 8414), "
        "so whether it does PKCE with S256, which the MCP authorization spec requires, cannot be checked: projector does not "
        "sign in there; ask the server's operator to publish it")
    assert "GET /authorize" not in server.paths() and "POST /token" not in server.paths()


def test_login_and_logout_say_a_token_folder_others_may_write_in_as_an_error(sandbox):
    model = sandbox.model(MODEL)
    folder = Path(sandbox.env["XDG_STATE_HOME"]) / "projector" / "oauth"
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    for command in ("login", "logout"):
        done = sandbox.run(command, "linear", config=model)
        assert (done.returncode, done.stderr) == (1, f"error: {folder}: mode 0777 lets others write in it: check what is in "
                                                     f"it, then make it private (chmod 700 {folder}) and sign in again\n")


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


def test_what_the_server_says_reaches_the_terminal_without_its_control_characters(sandbox, authorization_server):
    """A refusal's ``error_description`` is the server's text: escape sequences in it could clear
    the screen, or a new line could forge what projector says (and a bridge's sign-in log keeps it)."""
    from urllib.parse import quote

    from servers.scripted import Answer

    server = authorization_server()
    forged = "\x1b[2J\x1b[Hall good\nsigned in to linear until 2099-01-01 00:00\u202e"
    server.routes["GET /authorize"] = lambda request: Answer(302, headers=(
        ("Location", f"{request.query['redirect_uri']}?error=access_denied&error_description={quote(forged)}"
                     f"&state={request.query['state']}"),))
    assert refused(sandbox, server) == ("error: the server refused the sign-in: access_denied "
                                            "(\\x1b[2J\\x1b[Hall good\\nsigned in to linear until 2099-01-01 00:00\\u202e)")


def test_an_authorization_server_over_plain_http_to_another_host_is_refused_before_anything_is_sent(sandbox, authorization_server):
    """The model refuses a token over http:// to another host, but the authorization server is
    the one the server's metadata names: there the code, the client's secret and the tokens would
    cross the network in clear. (0.0.0.0 is not loopback by name, yet Linux connects it here.)"""
    from servers.scripted import Answer

    server = authorization_server()
    elsewhere = server.origin.replace("127.0.0.1", "0.0.0.0")
    metadata = server.routes["GET /.well-known/oauth-authorization-server"].body
    server.routes["GET /.well-known/oauth-protected-resource/mcp"] = Answer(200, {"resource": f"{server.origin}/mcp",
                                                                                  "authorization_servers": [elsewhere]})
    server.routes["GET /.well-known/oauth-authorization-server"] = Answer(200, {
        k: v.replace(server.origin, elsewhere) if isinstance(v, str) else v for k, v in metadata.items()})
    assert refused(sandbox, server) == (
        f"error: {elsewhere}/.well-known/oauth-authorization-server is plain http:// to 0.0.0.0, which is not this machine: "
        "the sign-in's codes, secrets and tokens would cross the network in clear (the MCP authorization spec requires "
        "HTTPS there), so projector does not sign in; say insecure: true of the provider if you accept that")
    assert [path for path in server.paths() if path.startswith("POST")] == ["POST /mcp"]


def test_an_authorization_page_over_plain_http_to_another_host_is_never_opened(sandbox, authorization_server):
    """Where the person types a password: the browser is not sent there."""
    from servers.scripted import Answer

    server = authorization_server()
    elsewhere = server.origin.replace("127.0.0.1", "0.0.0.0")
    metadata = server.routes["GET /.well-known/oauth-authorization-server"].body
    server.routes["GET /.well-known/oauth-authorization-server"] = Answer(200, dict(metadata, authorization_endpoint=f"{elsewhere}/authorize"))
    assert refused(sandbox, server).startswith(f"error: {elsewhere}/authorize is plain http:// to 0.0.0.0, which is not this machine")
    assert "GET /authorize" not in server.paths() and "POST /token" not in server.paths()
