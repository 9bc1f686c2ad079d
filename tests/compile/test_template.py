"""Entry templates run without jinja2 (compile/template.py) give exactly the text jinja2 renders:
for every descriptor, every transport and many values (absent, empty, listed twice, with every
kind of character), and a template that does more than the module knows is left to jinja2."""

from __future__ import annotations

import json

import pytest

from test_clients import BRIDGE, BRIDGE_WEB, HTTP

from projector.compile import template
from projector.compile.clients import client, registry
from projector.compile.plan import HttpServer, StdioServer

ODD = 'quote " back \\ slash, ünïcödé ✓, tab\t, new\nline, ${NAME} NAME {env:X} $X, {{ url }} \x00\u2028'
SERVERS = [
    BRIDGE,  # test_clients.py's scenarios
    BRIDGE_WEB,
    HTTP,
    StdioServer("/usr/local/bin/projector", ("mcp", "--provider", "docs"), ("DOCS_TOKEN",)),
    StdioServer("/usr/local/bin/projector", ("mcp", "--provider", "web", "--config", "/m/projector.yaml"), ("WEB_TOKEN",)),
    StdioServer("/opt/bin/projector", (), ()),
    StdioServer("projector", ("mcp",), ("A", "B", "A")),  # a variable listed twice
    StdioServer(ODD, (ODD, "", "--x=1"), (ODD,)),
    StdioServer("", ("",), ("",)),
    HttpServer("https://kb.example.com/mcp?kbs=a,b", "WEB_TOKEN"),
    HttpServer("https://api.example.com/mcp/", None),
    HttpServer(ODD, ODD),
    HttpServer("", ""),
]
NAMES = ["docs", "Web", ODD, ""]


def _context(server, name):
    if isinstance(server, StdioServer):
        return "stdio", {"command": server.command, "args": list(server.args), "pass_env": list(server.pass_env), "name": name}
    return "http", {"url": server.url, "token_env": server.token_env, "name": name}


def _outcome(render):
    try:
        return ("text", render())
    except Exception as error:  # noqa: BLE001 - the same error either way
        return ("error", type(error).__name__, str(error))


def _same_text(descriptor, server, name):
    """The program's text and jinja2's, for one server."""
    transport, context = _context(server, name)
    program = descriptor.programs[transport]
    functions = {"env_ref": descriptor.env_ref, "env_refs": descriptor.env_refs}
    ours = _outcome(lambda: template.run(program, context, functions))
    assert ours == _outcome(lambda: descriptor.jinja2_text(transport, context)), (descriptor.id, server, name)


@pytest.mark.parametrize("client_id", sorted(registry()))
def test_every_descriptor_runs_what_jinja2_renders(client_id):
    descriptor = registry()[client_id]
    for transport, _ in descriptor.templates:
        assert descriptor.programs.get(transport) is not None, f"{transport}: projector's own templates compile"
    for server in SERVERS:
        if _context(server, "")[0] in dict(descriptor.templates):
            for name in NAMES:
                _same_text(descriptor, server, name)


def test_a_sync_renders_with_the_program(monkeypatch):
    """Not jinja2 behind the scenes: the program itself gives the entry."""
    from projector.compile import clients

    monkeypatch.setattr(clients, "_template", lambda *args: pytest.fail("jinja2 rendered an entry"))
    kiro = registry()["kiro"]
    entry = kiro.render(StdioServer("/p", ("mcp", ODD), ("T", "U")), "x")
    assert entry == {"command": "/p", "args": ["mcp", ODD], "env": {"T": "${T}", "U": "${U}"}}


DATA = {  # the smallest valid descriptor; its templates vary below
    "id": "mine", "name": "Mine", "format": "json", "global": {"dirs": ["~"], "files": ["mine.json"]},
    "servers_key": ["servers"], "env_reference": "${NAME}", "stdio_env": "inherit",
}


@pytest.mark.parametrize(
    "source",
    [
        '{"url": {{ url | upper | json }}}',
        '{"url": {{ url | json }}{% if "kbs" in url %}, "narrowed": true{% endif %}}',
        '{"command": {{ command | json }}, "first": {{ args[0] | json }}}',
        '{"command": {{ command | json }}, "count": {{ args | length }}}',
        '{"command": {{ command | json }}, "args": [{% for a in args %}{{ a | json }}{% if not loop.last %}, {% endif %}{% endfor %}]}',
        '{"command": "{{ command }}"}',
        '{"url": {{ unknown | json }}}',
        '{"url": {{ url | json(indent=2) }}}',
        '{% set u = url %}{"url": {{ u | json }}}',
    ],
)
def test_a_template_it_does_not_know_is_rendered_by_jinja2(source):
    transport = "stdio" if "command" in source else "http"
    mine = client(DATA | {"templates": {transport: source}})
    assert mine.compiled()[transport] is None
    server = BRIDGE if transport == "stdio" else HTTP  # values every one of these writes as JSON
    assert _outcome(lambda: mine.render(server, "p")) == _outcome(lambda: json.loads(mine.jinja2_text(*_context(server, "p"))))


def test_a_template_that_does_not_write_json_is_refused_alike():
    data = DATA | {"templates": {"http": '{"url": {{ url | json }}'}}
    compiled = client(data, client(data).compiled())
    assert compiled.programs["http"] is not None
    server = HttpServer("https://x", None)
    assert _outcome(lambda: compiled.render(server, "p")) == _outcome(lambda: client(data).render(server, "p"))
    with pytest.raises(RuntimeError, match="the http template renders invalid JSON"):
        compiled.render(server, "p")


@pytest.mark.parametrize(
    "source",
    [
        '{"url": {{ url | json }}{% if token_env and not name %}, "anonymous": {{ token_env | json }}{% elif token_env or name %}, "t": 1{% else %}, "none": null{% endif %}}',
        '{"all": {{ (["-x"] + args + [command, "~" ~ name]) | json }}, "refs": {{ env_refs(pass_env + ["EXTRA"]) | json }}, "k": {{ 3 | json }}}',
        '{"headers": {"Authorization": {{ ("Bearer " ~ env_ref(token_env ~ "_" ~ name)) | json }}}, "u": {{ url | json }}}',
        '{"joined": {{ (url ~ token_env ~ 1.5 ~ none) | json }}}',
        """{"c": {{ command | json }}
           {%- if pass_env -%}
             , "e": {{ env_refs(pass_env) | json }}
           {%- endif %}}
        """,
    ],
)
def test_the_forms_it_knows_run_what_jinja2_renders(source):
    transport = "stdio" if "command" in source or "args" in source else "http"
    mine = client(DATA | {"templates": {transport: source}})
    mine = client(DATA | {"templates": {transport: source}}, mine.compiled())
    assert mine.programs[transport] is not None
    for server in SERVERS:
        if _context(server, "")[0] == transport:
            for name in NAMES:
                _same_text(mine, server, name)


def test_a_reference_the_client_cannot_write_keeps_its_error():
    """No variable syntax: a token reference cannot be written, and the error says so."""
    source = '{"url": {{ url | json }}, "headers": {"Authorization": {{ ("Bearer " ~ env_ref(token_env)) | json }}}}'
    data = DATA | {"env_reference": None, "templates": {"http": source}}
    mine = client(data, client(data).compiled())
    assert mine.programs["http"] is not None
    with pytest.raises(RuntimeError, match="Mine has no way to reference a variable"):
        mine.render(HttpServer("https://x", "T"), "p")
    _same_text(mine, HttpServer("https://x", "T"), "p")
