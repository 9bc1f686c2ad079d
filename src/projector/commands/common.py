"""What the commands share: loading the model and computing a sync's outcome."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from projector.compile import clients as client_registry
from projector.compile import engine, ledger
from projector.compile.system import DryRunSystem, RealSystem, System
from projector.core import files, model, projects
from projector.core.errors import did_you_mean, display_path
from projector.core.locations import state_dir


class UsageError(Exception):
    """A command line that names something unknown (exit 2)."""


def err(text: str, end: str = "\n") -> None:
    print(text, file=sys.stderr, end=end, flush=True)


def load_model(config: str | None) -> model.Model:
    """The model, checked (answered from the checked-model cache while the file is unchanged)."""
    cache = state_dir(os.environ) / "model-cache.json"
    return model.cached(model.model_path(config, os.environ), os.environ, lambda: tuple(client_registry.registry()), cache)


def compute(config: str | None, only: list[str] | None, force: bool, dry_run: bool = True) -> tuple[engine.Outcome, ledger.Ledger]:
    """The outcome of a sync, read through a dry-run system (``diff``, ``status``) or the real one."""
    environ = os.environ
    known = tuple(client_registry.registry())
    loaded = load_model(config)
    unknown = [c for c in only or () if c not in known]
    if unknown:
        raise UsageError(f"unknown client {unknown[0]!r}{did_you_mean(unknown[0], known)} (known: {', '.join(known)})")
    ids = tuple(only) if only else loaded.clients
    chosen = client_registry.selected(ids, environ)
    state = ledger.load(ledger.ledger_path(environ))
    system: System = DryRunSystem() if dry_run else RealSystem()
    outcome = engine.compute(loaded, chosen, environ, state, system, force=force, projects=projects.recorded(environ))
    return outcome, state


def sync_lock(environ: Mapping[str, str]) -> Path:
    return state_dir(environ) / "sync.lock"


def carry_out(work: Callable[[], tuple[engine.Outcome, ledger.Ledger]], wait: float) -> tuple[engine.Outcome, engine.Written]:
    """Under the sync lock: ``work`` computes an outcome through the real system (and gives the
    ledger it started from); it is written, the ledger with it (engine.write). files.Busy when
    another sync holds the lock longer than ``wait`` seconds."""
    with files.exclusive(sync_lock(os.environ), wait):
        outcome, state = work()
        written = engine.write(outcome, state, ledger.ledger_path(os.environ))
    return outcome, written


def busy(consequence: str) -> int:
    """Another sync holds the lock: say so (exit 2)."""
    err(f"error: another projector sync is running (it holds {display_path(sync_lock(os.environ))}); {consequence}, try again")
    return 2


def report_warnings(outcome: engine.Outcome, problems: tuple = ()) -> None:
    for warning in outcome.warnings:
        err(f"warning: {warning}")
    for problem in outcome.problems + tuple(problems):
        err(f"error: {problem}")
