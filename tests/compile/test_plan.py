"""plan: which server each provider becomes, from the model and where projector is."""

from __future__ import annotations

from pathlib import Path

import pytest

from projector.compile.plan import HttpServer, StdioServer, for_client, plan, with_kbs
from projector.core.modeltypes import Binding, Model, OAuth, Provider, Settings
from projector.core.record import replace


def provider(name="docs", url="https://kb.example.com/mcp", token="DOCS_TOKEN", kbs=None, default=None):
    return Provider(name=name, url=url, token_env=token, kbs=kbs, default=default)


def model(*providers, bindings=()):
    return Model(source=Path("m.yaml"), clients=None, providers=tuple(providers), bindings=tuple(bindings))


BOUND = Binding("/w/a", (("docs", Settings(kbs=("api-a",))),))


def test_bound_and_on_path_is_the_bridge_with_that_exact_path():
    result = plan(model(provider(), bindings=[BOUND]), "/home/me/.local/bin/projector")
    assert result.servers == (("docs", StdioServer("/home/me/.local/bin/projector", ("mcp", "--provider", "docs"), ("DOCS_TOKEN",))),)
    assert result.warnings == ()


def test_bound_but_not_on_path_is_http_with_a_warning_naming_the_provider():
    result = plan(model(provider(default=("handbook",)), bindings=[BOUND]), None)
    assert result.servers == (("docs", HttpServer("https://kb.example.com/mcp?kbs=handbook", "DOCS_TOKEN")),)
    assert len(result.warnings) == 1 and '"docs"' in result.warnings[0] and "not on PATH" in result.warnings[0]


@pytest.mark.parametrize(
    ("default", "url"),
    [
        (None, "https://kb.example.com/mcp"),  # absent: every KB, no parameter at all
        (("a", "b"), "https://kb.example.com/mcp?kbs=a,b"),  # commas literal
    ],
)
def test_unbound_is_http_narrowed_by_default(default, url):
    result = plan(model(provider(default=default)), "/bin/projector")
    assert result.servers == (("docs", HttpServer(url, "DOCS_TOKEN")),)


def test_default_none_and_unbound_writes_no_entry_at_all():
    assert plan(model(provider(default=())), "/bin/projector").servers == ()


def test_a_provider_without_an_entry_carries_why_for_explain():
    """explain says why a provider gets no entry from the plan itself, which decided it."""
    off = replace(provider("off"), enabled=False)
    assert plan(model(provider(default=()), off), "/bin/projector").no_entry == (
        ("docs", "its default shows no KB"), ("off", "it is turned off, and no binding turns it on"))
    assert plan(model(provider(default=()), bindings=[BOUND]), None).no_entry == (("docs", (
        "projector is not on PATH, so no bridge narrows it per folder, and its default shows no KB, so no plain HTTP entry "
        "stands in: no tools here until a sync finds projector on PATH")),)
    assert plan(model(provider(default=()), bindings=[BOUND]), "/bin/projector").no_entry == ()


def test_a_provider_the_bridge_was_wanted_for_and_that_gets_no_entry_is_warned_so():
    """Bound (or signing in through projector), projector not on PATH and `default: []`: no
    plain HTTP entry stands in either, and the warning says no entry was written."""
    bound = plan(model(provider(default=()), bindings=[BOUND]), None)
    assert (bound.servers, bound.warnings) == ((), ('provider "docs" gets no entry: ' + bound.no_entry[0][1],))
    signing = plan(model(replace(oauth(), default=())), None)
    assert (signing.servers, signing.warnings) == ((), (
        'provider "signin" gets no entry: projector is not on PATH, so no bridge signs in for it, and its default shows no KB, '
        "so no plain HTTP entry stands in: no tools here until a sync finds projector on PATH",))


def test_provider_without_token():
    assert plan(model(provider(token=None)), None).servers == (("docs", HttpServer("https://kb.example.com/mcp", None)),)
    assert plan(model(provider(token=None), bindings=[BOUND]), "/p").servers[0][1].pass_env == ()


def test_several_providers_in_name_order_and_deterministic():
    m = model(provider("a"), provider("b", default=("x",)), bindings=[Binding("/w", (("b", Settings(kbs=("x",))),))])
    first, second = plan(m, "/bin/projector"), plan(m, "/bin/projector")
    assert first == second
    assert [name for name, _ in first.servers] == ["a", "b"]


@pytest.mark.parametrize(
    ("url", "kbs", "expected"),
    [
        ("https://x/mcp", ("a",), "https://x/mcp?kbs=a"),
        ("https://x/mcp?team=1", ("a", "b"), "https://x/mcp?team=1&kbs=a,b"),
        ("https://x/mcp?kbs=old&team=1", ("n",), "https://x/mcp?team=1&kbs=n"),
        ("https://x/mcp?kbs=old", None, "https://x/mcp"),
        ("https://x/mcp#frag", ("a",), "https://x/mcp?kbs=a#frag"),
        # spelled as a server decodes it, an old kbs is still projector's to replace
        ("https://x/mcp?kb%73=old&KBS=o2&kbs&team=1", ("n",), "https://x/mcp?team=1&kbs=n"),
    ],
)
def test_with_kbs_keeps_the_query(url, kbs, expected):
    assert with_kbs(url, kbs) == expected


def test_an_empty_kb_set_never_becomes_a_url():
    with pytest.raises(ValueError):
        with_kbs("https://x/mcp", ())


def test_a_model_away_from_the_default_place_is_named_in_the_bridge_entry():
    options = ("--config", "/home/me/models/projector.yaml", "--state", "/srv/state/projector")
    result = plan(model(provider(), bindings=[BOUND]), "/bin/projector", options)
    assert result.servers[0][1].args == ("mcp", "--provider", "docs", *options)


def test_bridge_options_are_judged_against_a_cleared_environment(tmp_path):
    """Codex starts the bridge with HOME but without XDG_* or PROJECTOR_*: whatever those moved
    must be on the entry's command line."""
    from projector.core.invocation import bridge_options

    home = str(tmp_path)
    default = tmp_path / ".config" / "projector" / "projector.yaml"
    assert bridge_options(default, {"HOME": home}) == ()
    assert bridge_options(default, {"HOME": home, "XDG_CONFIG_HOME": f"{home}/.config", "XDG_STATE_HOME": f"{home}/.local/state"}) == ()
    moved = tmp_path / "xdg" / "projector" / "projector.yaml"
    assert bridge_options(moved, {"HOME": home, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}) == ("--config", str(moved))
    assert bridge_options(default, {"HOME": home, "XDG_STATE_HOME": "/srv/state"}) == ("--state", "/srv/state/projector")
    assert bridge_options(tmp_path / "m.yaml", {"HOME": home, "PROJECTOR_CONFIG": str(tmp_path / "m.yaml")}) == ("--config", str(tmp_path / "m.yaml"))
    assert bridge_options(Path("m.yaml"), {"HOME": home}) == ()  # a model made in code


def local(name="lint", env=(), enabled=True):
    return Provider(name, None, None, None, None, command="lint-mcp", env=env, enabled=enabled)


def test_a_local_provider_is_always_the_bridge_and_passes_the_variables_its_env_refers_to():
    lint = local(env=(("TOKEN", "${LINT_TOKEN}"), ("PATH", "${PATH}:/opt/bin"), ("MODE", "fast"), ("GONE", None)))
    bound = Binding("/w/a", (("lint", Settings(env=(("EXTRA", "${EXTRA_KEY:-x}"),))),))
    result = plan(model(lint, bindings=[bound]), "/bin/projector")
    assert result.servers == (("lint", StdioServer("/bin/projector", ("mcp", "--provider", "lint"), ("LINT_TOKEN", "PATH", "EXTRA_KEY"))),)


def test_a_local_provider_without_projector_on_path_gets_no_entry_and_a_warning():
    result = plan(model(local()), None)
    assert result.servers == ()
    assert len(result.warnings) == 1 and '"lint"' in result.warnings[0]


def test_providers_only_project_files_declare_get_the_bridge_and_bindings_there_count():
    from projector.core.modeltypes import Project

    own = Provider("notes", None, None, None, None, command="./notes", env=(("KEY", "${NOTES_KEY}"),))
    project = Project("/w/a", "/w/a/.projector.yaml", (own,), (("docs", Settings(kbs=("x",))),))
    result = plan(model(provider()), "/bin/projector", projects=(project,))
    assert result.servers == (
        ("docs", StdioServer("/bin/projector", ("mcp", "--provider", "docs"), ("DOCS_TOKEN",))),
        ("notes", StdioServer("/bin/projector", ("mcp", "--provider", "notes"), ("NOTES_KEY",))),
    )


# --------------------------------------------------------------------------- per client


def oauth(name="signin", by_client=False):
    return Provider(name=name, url="https://sso.example.com/mcp", token_env=None, kbs=None, default=None, oauth=OAuth(by_client=by_client))


def test_a_client_that_takes_no_remote_entries_gets_the_bridge_for_every_provider():
    compiled = plan(model(provider(), provider("open", token=None)), "/bin/projector")
    servers, warnings = for_client(compiled, "none", "Desk")
    assert servers == (("docs", StdioServer("/bin/projector", ("mcp", "--provider", "docs"), ("DOCS_TOKEN",))),
                       ("open", StdioServer("/bin/projector", ("mcp", "--provider", "open"), ())))
    assert warnings == ()


def test_a_client_that_cannot_reference_a_variable_gets_the_bridge_only_where_a_token_is_needed():
    compiled = plan(model(provider(), provider("open", token=None)), "/bin/projector")
    servers, _ = for_client(compiled, "no-token", "Ed")
    assert dict(servers) == {"docs": StdioServer("/bin/projector", ("mcp", "--provider", "docs"), ("DOCS_TOKEN",)),
                             "open": HttpServer("https://kb.example.com/mcp", None)}
    assert for_client(compiled, "token", "Any") == (compiled.servers, ())


def test_no_bridge_to_stand_in_means_no_entry_and_a_warning_that_says_why():
    compiled = plan(model(provider(), oauth(by_client=True)), None)
    servers, warnings = for_client(compiled, "none", "Desk")
    assert servers == ()
    assert warnings == (
        'Desk gets no entry for provider "docs": it cannot take its HTTP entry, and the bridge cannot stand in: projector is not on PATH',
        'Desk gets no entry for provider "signin": it cannot take its HTTP entry, and the bridge cannot stand in: '
        "each client signs itself in (oauth: client)",
    )
    on_path, _ = for_client(plan(model(oauth(by_client=True)), "/bin/projector"), "none", "Desk")
    assert on_path == ()


def test_an_oauth_provider_gets_the_bridge_in_every_client_bound_or_not():
    """One sign-in (projector login) serves every client: the bridge holds the token."""
    bridge = StdioServer("/bin/projector", ("mcp", "--provider", "signin"), (), SIGN_IN_ENV)
    for bindings in ([], [Binding("/w/a", (("signin", Settings(kbs=("a",))),))]):
        compiled = plan(model(oauth(), bindings=bindings), "/bin/projector")
        assert (compiled.servers, compiled.warnings) == ((("signin", bridge),), ())
        assert for_client(compiled, "none", "Desk") == ((("signin", bridge),), ())


SIGN_IN_ENV = ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "XAUTHORITY", "SSH_CONNECTION", "DBUS_SESSION_BUS_ADDRESS")


def test_the_bridge_of_an_oauth_provider_is_given_what_a_sign_in_it_starts_reads():
    """The sign-in a bridge starts for a session without a token is `projector login`: it reads
    the client's secret (and an enterprise IdP's) from the variables the model names, and where a
    person signs in, the display and $BROWSER; a machine's grant opens no browser."""
    def bridge(settings: OAuth) -> StdioServer:
        provider = replace(oauth(), oauth=settings)
        return dict(plan(model(provider), "/bin/projector").servers)["signin"]

    assert bridge(OAuth(client_id="app", client_secret_env="APP_SECRET")) == StdioServer(
        "/bin/projector", ("mcp", "--provider", "signin"), ("APP_SECRET",), SIGN_IN_ENV)
    machine = bridge(OAuth(client_id="bot", client_secret_env="BOT_SECRET", grant="client_credentials"))
    assert (machine.pass_env, machine.sign_in_env) == (("BOT_SECRET",), ("DBUS_SESSION_BUS_ADDRESS",))
    corp = bridge(OAuth(client_id="mcp", client_secret_env="CORP_SECRET", grant="enterprise", issuer="https://as.example.com",
                        idp_token_endpoint="https://idp.example.com/token", idp_client_id="idp", idp_client_secret_env="IDP_SECRET",
                        id_token_env="ID_TOKEN"))
    assert corp.pass_env == ("CORP_SECRET", "IDP_SECRET", "ID_TOKEN")


def test_an_oauth_provider_without_projector_on_path_keeps_its_http_entry_with_a_warning():
    compiled = plan(model(oauth()), None)
    assert compiled.servers == (("signin", HttpServer("https://sso.example.com/mcp", None)),)
    assert compiled.warnings == ('provider "signin" signs in through projector, which is not on PATH: its plain HTTP entry was '
                                 "written (each client signs itself in) until a sync finds projector on PATH",)


def test_a_bound_oauth_client_provider_keeps_its_http_entry_with_a_warning():
    bound = Binding("/w/a", (("signin", Settings(kbs=("a",))),))
    result = plan(model(oauth(by_client=True), bindings=[bound]), "/bin/projector")
    assert result.servers == (("signin", HttpServer("https://sso.example.com/mcp", None)),)
    assert result.warnings == ('provider "signin" has bindings but each client signs itself in (oauth: client): its plain HTTP entry '
                               "was written, so its bindings will not narrow the tools",)
