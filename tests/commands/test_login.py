"""`projector login` and `projector logout`: what they refuse, and what logout forgets. The
sign-in itself is tests/oauth/'s, and runs against the MCP conformance suite's authorization
servers (tests/runtime/bridge/test_peers.py)."""

from __future__ import annotations

from pathlib import Path

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


def test_sync_and_doctor_say_once_that_a_machine_grant_without_an_issuer_lets_the_server_choose(sandbox):
    """client_credentials without ``issuer``: the MCP server chooses where the client's secret
    goes (the MCP SDK's deprecation warning, which `projector login` does not print). sync says
    it once, doctor each time; an issuer ends it."""
    sandbox.install_projector()
    machine = ("  ci:\n    url: https://ci.example.com/mcp\n    oauth:\n      client_id: ci-bot\n      client_secret_env: CI_SECRET\n"
               "      client_credentials: true\n")
    said = ('provider "ci" signs in as a machine (client_credentials) with no issuer: the MCP server chooses which '
            "authorization server receives the client's secret, so a hostile server or a hijacked metadata document would "
            "get it; add issuer: <URL> under its oauth (its authorization server's issuer, as that server's metadata says "
            "it): projector then sends the secret there only")
    model = sandbox.model(MODEL + machine)
    first = sandbox.run("sync", config=model)
    assert first.returncode == 0, first.stderr
    assert [line for line in first.stderr.splitlines() if "issuer" in line] == [f"warning: {said}"]
    model.write_text(MODEL + machine + "# touched\n")
    assert "issuer" not in sandbox.run("sync", config=model).stderr  # said once
    assert said in sandbox.run("doctor", config=model).stdout
    model.write_text(MODEL + machine + "      issuer: https://auth.example.com\n")
    assert "issuer" not in sandbox.run("sync", config=model).stderr + sandbox.run("doctor", config=model).stdout


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


def test_device_with_a_machine_grant_is_an_error_that_says_why(sandbox):
    model = sandbox.model("version: 1\nproviders:\n  ci:\n    url: https://ci.example.com/mcp\n    oauth:\n      client_id: ci-bot\n"
                          "      client_secret_env: CI_SECRET\n      client_credentials: true\n")
    done = sandbox.run("login", "ci", "--device", config=model)
    assert (done.returncode, done.stderr.strip()) == (
        1, 'error: provider "ci" signs in with its client\'s credentials (client_credentials), with no person: '
           "--device is for a person's sign-in; run `projector login ci` without it")


def test_login_and_logout_say_a_token_folder_others_may_write_in_as_an_error(sandbox):
    model = sandbox.model(MODEL)
    folder = Path(sandbox.env["XDG_STATE_HOME"]) / "projector" / "oauth"
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    for command in ("login", "logout"):
        done = sandbox.run(command, "linear", config=model)
        assert (done.returncode, done.stderr) == (1, f"error: {folder}: mode 0777 lets others write in it: check what is in "
                                                     f"it, then make it private (chmod 700 {folder}) and sign in again\n")


def test_doctor_ack_counts_no_sign_in_as_acknowledged_it_stays_a_problem(sandbox):
    """A provider nobody signed in to is doctor's PROBLEM until a login, whatever `--ack` did: the
    acknowledgement counts only the warnings it hides."""
    sandbox.install_projector()
    model = sandbox.model(MODEL)
    done = sandbox.run("doctor", "--ack", config=model)
    assert done.stdout.startswith("acknowledged 0 warnings"), done.stdout
    doctor = sandbox.run("doctor", config=model).stdout
    assert "linear: needs a sign-in: run `projector login linear`" in doctor
    assert "acknowledged" not in doctor, doctor
