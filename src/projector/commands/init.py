"""`projector init`: a commented starter model (never over an existing one)."""

from __future__ import annotations

import os
from pathlib import Path

from projector.commands.common import err
from projector.core import files, model
from projector.core.errors import display_path

STARTER = Path(__file__).resolve().parent / "starter.yaml"


def run(config: str | None) -> int:
    path = model.model_path(config, os.environ)
    shown = display_path(path)
    if path.exists():
        err(f"error: {shown} exists already; projector init never overwrites a model")
        return 1
    files.write_text(path, starter_text())
    print(f"wrote {shown}: add your providers, then run `projector diff`")
    _offer_import()
    return 0


def starter_text() -> str:
    """The starter with this installation's facts: the client ids come from the descriptors (a
    client added as a data file is listed too), and the schema an editor checks the model with
    is the file projector itself checks it with, by its path here: projector has no published
    home whose URL would stay true, and a path on this machine works offline and always matches
    the installed version (`projector init` on another machine writes that machine's path)."""
    from projector.core.resources import client_ids, data_dir

    schema = data_dir("schemas") / "model.schema.json"
    text = STARTER.read_text(encoding="utf-8")
    return text.replace("{client_ids}", ", ".join(client_ids())).replace("{schema}", str(schema))


def _offer_import() -> None:
    """The MCP entries the clients here have already: `projector import` brings them in."""
    from projector.compile import clients
    from projector.compile.importing import found_entries

    found, _ = found_entries(clients.selected(None, os.environ), os.environ)
    counts: dict[str, int] = {}
    for entry in found:
        counts[entry.client.name] = counts.get(entry.client.name, 0) + 1
    if counts:
        listed = ", ".join(f"{name} {count}" for name, count in counts.items())
        print(f"found MCP entries in your clients ({listed}): `projector import` brings them into this model "
              "(`projector import --dry-run` shows how)")
