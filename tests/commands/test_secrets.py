"""Secret canary: each token variable holds a canary value; it appears in no written file, no
diff, no status output, no warning and no error message."""

from __future__ import annotations

from models import SIX_CLIENTS

CANARY = "canary-7f3a9c-do-not-leak"
MODEL = SIX_CLIENTS


def test_token_values_never_appear_anywhere(sandbox):
    sandbox.env.update(DOCS_TOKEN=CANARY, WEB_TOKEN=CANARY + "-web")
    sandbox.install_projector()
    config = sandbox.model(MODEL)
    sandbox.file(".kiro/settings/mcp.json", "{ broken")  # an error message too
    outputs = [sandbox.run(*args, config=config) for args in (["diff", "--color"], ["sync"], ["status"], ["status", "--json"], ["sync", "--force"])]
    outputs.append(sandbox.run("sync", config=sandbox.model(MODEL.replace("[x]", "[x, y, 'z,w']"), "bad.yaml")))
    for result in outputs:
        assert CANARY not in result.stdout + result.stderr
    assert any("error:" in r.stderr for r in outputs)
    written = [p for p in sandbox.root.rglob("*") if p.is_file()]
    assert len(written) > 6
    for path in written:
        assert CANARY.encode() not in path.read_bytes(), path
