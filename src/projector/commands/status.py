"""`projector status`: whether every client's file matches the model."""

from __future__ import annotations

import json
import os

from projector.commands.common import compute, err, layer_report, load_model, report_warnings, sign_in_states
from projector.core import projects
from projector.core.errors import ProjectorError, display_path
from projector.core.modeltypes import Model

TYPE_CHECKING = False
if TYPE_CHECKING:
    from projector.core.layers import Provenance


def run(config: str | None, client: list[str] | None, as_json: bool) -> int:
    from projector.compile.report import status_lines, status_report

    try:
        loaded = load_model(config)
        sign_ins = sign_in_states(loaded.providers)  # each said in its own line, and as a warning where it wants a sign-in
        outcome, _ = compute(config, client, False, loaded=loaded, sign_ins=sign_ins)
    except ProjectorError as error:
        if as_json:
            print(json.dumps({"schema": 1, "in_sync": False, "files": [], "warnings": [], "errors": [str(p) for p in error.problems]}, indent=2))
        else:
            err(f"error: {error}")
        return 2
    report = status_report(outcome)
    report["withdrawn"] = [{"file": display_path(file), "why": why} for file, why in projects.withdrawn(os.environ)]
    report["in_sync"] = report["in_sync"] and not report["withdrawn"]
    report["sign_in"] = [{"provider": name, "ok": ok, "state": state} for name, (ok, state) in sign_ins.items()]
    if as_json:
        report["layers"] = layer_report(loaded, _provenance(loaded))
        print(json.dumps(report, indent=2))
    else:
        for line in status_lines(report):
            print(line)
        for entry in report["sign_in"]:
            print(f"sign-in: {entry['state']}")
        report_warnings(outcome)
    return 2 if outcome.problems else (0 if report["in_sync"] else 1)


def _provenance(loaded: Model) -> Provenance | None:
    """Where the layers came from, for a model that has more than its own file (core.layers is
    imported only then)."""
    if len(loaded.layers) < 2:
        return None
    from projector.core.layers import Provenance

    return Provenance(loaded, os.environ)
