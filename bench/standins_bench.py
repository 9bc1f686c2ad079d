"""What each of projector's stand-ins for a library saves, in instructions (callgrind).

    .venv/bin/python bench/standins_bench.py [--runs N]

Each row runs the same work twice, once through the library and once through projector's own
version of it, in a fresh interpreter (imports included: most of what a stand-in saves is the
library's import), and prints the instructions saved and what that is in `python -c pass`es:
- core/record.py: forty frozen records of five fields made (a sync defines some forty);
- core/quickschema.py: examples/projector.yaml said yes to by the model's schema;
- compile/template.py: the entries of the six clients of a typical model, stdio and http;
- the TOML table spelling (compile/documents/toml.py, ``written_table``): Codex's entry table;
- direct.py: `projector status` parsed by hand, or by typer (cli.py);
- the bridge's response head (runtime/bridge/response.py, ``read_fields``): a typical MCP
  answer's five fields read and looked up, per response (1,000 heads, both modules imported
  either way).
Counts do not depend on the machine's load; ``--runs`` repeats them (they agree). Needs valgrind.
The real HOME is never touched.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import Case, instructions, table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ["claude-code", "codex", "opencode", "crush", "kiro", "copilot"]
HEADS = 1000
HEAD = (b"Content-Type: application/json\r\nContent-Length: 36\r\nMcp-Session-Id: abc-123\r\n"
        b"Date: Tue, 01 Dec 2026 15:00:00 GMT\r\nConnection: keep-alive\r\n\r\n")

RECORDS = """
FIELDS = {"a": "int", "b": "str", "c": "int", "d": "str | None", "e": "int"}
for i in range(40):
    MAKE(f"R{i}", {"__annotations__": FIELDS, "e": 0})
"""

ENTRIES = f"""
from projector.compile.clients import registry
from projector.compile.plan import HttpServer, StdioServer
clients = [registry()[c] for c in {CLIENTS!r}]
stdio = StdioServer("/usr/local/bin/projector", ("mcp", "--provider", "docs"), ("DOCS_TOKEN",))
http = HttpServer("https://kb.example.com/mcp?kbs=a,b", "DOCS_TOKEN")
for client in clients:
    for transport, context in (("stdio", {{"command": stdio.command, "args": list(stdio.args), "pass_env": list(stdio.pass_env), "name": "docs"}}),
                               ("http", {{"url": http.url, "token_env": http.token_env, "name": "docs"}})):
        if transport in dict(client.templates):
            RENDER
"""

ENTRY = {"command": "/usr/local/bin/projector", "args": ["mcp", "--provider", "docs"], "env_vars": ["DOCS_TOKEN"]}

HEADS_READ = f"""
import http.client, io
from projector.runtime.bridge.response import read_fields
HEAD = {HEAD!r}
for _ in range({HEADS}):
    fields = READ(io.BytesIO(HEAD))
    for name in ("transfer-encoding", "content-length", "connection", "content-type", "mcp-session-id"):
        fields.get(name)
"""


def pairs(python: str, home: Path, env: dict[str, str]) -> list[tuple[str, str, list[str], list[str]]]:
    """(stand-in, library, its command, the library's command)."""
    from ruamel.yaml import YAML

    example = json.dumps(YAML(typ="safe").load((ROOT / "examples" / "projector.yaml").read_text()))
    model = home / "projector.yaml"
    model.write_text("version: 1\nproviders:\n  docs:\n    url: https://kb.example.com/mcp\n    token_env: DOCS_TOKEN\n"
                     f"bindings:\n  {home}/work:\n    docs: []\n")
    status = ["status", "--config", str(model)]
    code = lambda text: [python, "-c", text]  # noqa: E731
    return [
        ("core/record.py", "dataclasses",
         code("from projector.core.record import Record\nMAKE = lambda name, body: type(name, (Record,), body)" + RECORDS),
         code("import dataclasses\nMAKE = lambda name, body: dataclasses.dataclass(frozen=True)(type(name, (), body))" + RECORDS)),
        ("core/quickschema.py", "jsonschema",
         code(f"import json\nfrom projector.core.quickschema import conforms\nassert conforms(json.loads({example!r}), 'model')"),
         code(f"import json\nfrom projector.core.resources import validator\nassert validator('model').is_valid(json.loads({example!r}))")),
        ("compile/template.py", "jinja2",
         code(ENTRIES.replace("RENDER", "client.render(stdio if transport == 'stdio' else http, 'docs')")),
         code(ENTRIES.replace("RENDER", "json.loads(client.jinja2_text(transport, context))").replace("from projector", "import json\nfrom projector", 1))),
        ("TOML table spelling", "tomlkit",
         code(f"from projector.compile.documents.toml import written_table\nwritten_table(('mcp_servers',), 'docs', {ENTRY!r})"),
         code(f"from projector.compile.documents.toml import tomlkit_table\ntomlkit_table(('mcp_servers',), 'docs', {ENTRY!r})")),
        ("direct.py", "typer",
         [python, "-m", "projector", *status],
         code(f"import sys\nsys.argv = ['projector', *{status!r}]\nfrom projector.cli import main\nmain()")),
        (f"bridge response head (per head, of {HEADS:,})", "http.client",
         code(HEADS_READ.replace("READ(", "read_fields(")),
         code(HEADS_READ.replace("READ(", "http.client.parse_headers("))),
    ]


def spread(counts: list[tuple[int, int]]) -> float:
    """How far the runs' counts lie apart, relative to their largest."""
    return max((max(c) - min(c)) / max(c) if max(c) else 0.0 for c in zip(*counts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1, help="times each count is taken (they agree: callgrind)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        (home / "work").mkdir(parents=True)
        env = {"HOME": str(home), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "LANG": "C.UTF-8"}
        baseline = Case("python -c pass", [sys.executable, "-c", "pass"], env)
        rows = []
        floor = instructions(baseline)
        if floor is None:
            raise SystemExit("valgrind is not installed (apt-get install valgrind)")
        for ours, library, mine, theirs in pairs(sys.executable, home, env):
            for command in (mine, theirs):  # fills the caches (compiled descriptors, the model's check)
                subprocess.run(command, env=env, cwd=tmp, capture_output=True, check=False)
            counts = []
            for _ in range(options.runs):
                with_ours = instructions(Case(ours, mine, env, cwd=tmp))
                with_library = instructions(Case(library, theirs, env, cwd=tmp))
                counts.append((with_ours or 0, with_library or 0))
            a, b = counts[-1]
            per = HEADS if ours.startswith("bridge") else 1
            shown = (lambda n: f"{n / per / 1e3:8.1f} k") if per > 1 else (lambda n: f"{n / 1e6:8.1f} M")  # noqa: E731
            rows.append((f"{ours} (for {library})", [shown(a), shown(b), shown(b - a), "—" if per > 1 else f"{(b - a) / floor:6.2f}x",
                                                     f"±{spread(counts):.2%}"]))
        print(f"python -c pass: {floor / 1e6:.1f} M instructions")
        table(rows, ["with it", "with the library", "saved", "× python -c pass", f"over {options.runs} runs"])


if __name__ == "__main__":
    main()
