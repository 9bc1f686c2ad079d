"""What the commands share: loading the model and computing a sync's outcome."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from projector.compile import clients as client_registry
from projector.compile import engine, ledger
from projector.compile.system import DryRunSystem, RealSystem, System
from projector.core import files, model, projects
from projector.core.errors import ProjectorError, did_you_mean, display_path
from projector.core.locations import state_dir
from projector.core.modeltypes import Model, Provider
from projector.core.record import replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from projector.core.layers import Provenance


SignIn = tuple[bool, str]  # core.signin.sign_in_state's: whether the provider's sessions can authenticate, and a line saying how


class UsageError(Exception):
    """A command line that names something unknown (exit 2)."""


def err(text: str, end: str = "\n") -> None:
    print(text, file=sys.stderr, end=end, flush=True)


def load_model(config: str | None) -> Model:
    """The model, checked (answered from the checked-model cache while its files are unchanged),
    with the clones of its repository bindings looked for again."""
    cache = state_dir(os.environ) / "model-cache.json"
    return model.cached(model.model_path(config, os.environ), os.environ, lambda: tuple(client_registry.registry()), cache, rescan=True)


def oauth_provider(providers: tuple[Provider, ...], name: str) -> Provider:
    """The provider called ``name``, if projector signs in to it (`login`, `logout`)."""
    found = next((p for p in providers if p.name == name), None)
    if found is None:
        names = [p.name for p in providers if p.oauth]
        raise ProjectorError(f'no provider named "{name}"{did_you_mean(name, names)} (OAuth providers: {", ".join(names) or "none"})')
    if found.oauth is None:
        raise ProjectorError(f'provider "{name}" does not sign in with OAuth (give it oauth: true in the model)')
    if found.oauth.by_client:
        raise ProjectorError(f'provider "{name}" has oauth: client: each client signs itself in, projector does not')
    return found


def compute(config: str | None, only: list[str] | None, force: bool, dry_run: bool = True,
            loaded: Model | None = None, sign_ins: Mapping[str, SignIn] | None = None) -> tuple[engine.Outcome, ledger.Ledger]:
    """The outcome of a sync, read through a dry-run system (``diff``, ``status``) or the real one;
    ``loaded``: the model, when the caller has loaded it; ``sign_ins``: its OAuth providers'
    sign-ins (sign_in_states), when the caller has worked them out to say them itself."""
    environ = os.environ
    loaded = loaded or load_model(config)
    known_clients(only)
    ids = tuple(only) if only else loaded.clients
    chosen = client_registry.selected(ids, environ)
    state = ledger.load(ledger.ledger_path(environ))
    system: System = DryRunSystem() if dry_run else RealSystem()
    outcome = engine.compute(loaded, chosen, environ, state, system, force=force, projects=projects.recorded(environ))
    if said := sign_in_warnings(loaded, sign_ins) + issuer_warnings(loaded):
        outcome = replace(outcome, warnings=outcome.warnings + said)
    return outcome, state


def issuer_warnings(loaded: Model) -> tuple[str, ...]:
    """A machine's client_credentials sign-in that names no ``issuer``: the MCP server decides
    which authorization server its secret goes to (the MCP SDK's deprecation warning, which
    `projector login` keeps off the terminal and the bridge's sign-in log, said here once)."""
    return tuple(f'provider "{p.name}" signs in as a machine (client_credentials) with no issuer: the MCP server chooses '
                 "which authorization server receives the client's secret, so a hostile server or a hijacked metadata "
                 "document would get it; add issuer: <URL> under its oauth (its authorization server's issuer, as that "
                 "server's metadata says it): projector then sends the secret there only"
                 for p in loaded.providers if p.oauth is not None and p.oauth.unpinned and p.enabled)


def sign_in_states(providers: Iterable[Provider]) -> dict[str, SignIn]:
    """Each OAuth provider's sign-in by name, worked out once (a read of its token file) for a
    command that says it in more than one place: its warnings, and its own line (status,
    doctor, explain)."""
    signing_in = [p for p in providers if p.oauth is not None]
    if not signing_in:
        return {}  # core.signin is not imported: a command on a model without OAuth does not pay for it
    from projector.core.signin import sign_in_state

    return {p.name: sign_in_state(p, os.environ) for p in signing_in}


def sign_in_warnings(loaded: Model, sign_ins: Mapping[str, SignIn] | None = None) -> tuple[str, ...]:
    """A provider that signs in through projector and whose bridge entry a client now has, but
    that nobody has signed in to: said at the sync (once, as every warning), or its sessions
    fail with no word in the client that the user would see. ``sign_ins``: as sign_in_states
    gives them, when the caller has them; else they are worked out here."""
    signing_in = [p for p in loaded.providers if p.oauth is not None and not p.oauth.by_client and p.enabled]
    if not signing_in:
        return ()
    states = sign_in_states(signing_in) if sign_ins is None else sign_ins
    return tuple(f'provider "{p.name}" signs in through projector, once for every client: {state.split(": ", 1)[1]} '
                 f"({_first_session(p)})" for p in signing_in for ok, state in [states[p.name]] if not ok)


def _first_session(provider: Provider) -> str:
    """What a session does about a provider nobody signed in to: the bridge starts the sign-in."""
    assert provider.oauth is not None
    if not provider.oauth.by_person:  # client_credentials, enterprise
        return "or the first session signs in itself: its grant needs no person"
    return "or the first session opens the browser for it, where one can open; `oauth: client` lets each client sign itself in instead"


def dry_sync(config: str | None, only: list[str] | None, force: bool) -> tuple[engine.Outcome, ledger.Ledger, engine.Written]:
    """What a sync would do, through the dry-run system (which writes nothing): `diff`, `sync --dry-run`;
    with the ledger it started from (diff evaluates its drifted files again from it)."""
    outcome, state = compute(config, only, force)
    return outcome, state, engine.write(outcome, state)


def entries_in_file(result: engine.FileResult) -> dict:
    """The entries under a client file's servers key as they are in the file (before a sync)."""
    from projector.compile import documents

    if result.before is None:
        return {}
    return documents.parse(result.target.format, result.before, result.shown).servers(result.target.key) or {}


def known_clients(only: list[str] | None) -> dict[str, client_registry.Client]:
    """Every client projector knows, by id; UsageError when ``only`` (--client) names another."""
    known = client_registry.registry()
    unknown = [c for c in only or () if c not in known]
    if unknown:
        raise UsageError(f"unknown client {unknown[0]!r}{did_you_mean(unknown[0], known)} (known: {', '.join(known)})")
    return known


def layer_report(loaded: Model, provenance: Provenance | None = None) -> list[dict]:
    """The model's layers in order (its own file last): each file, its sha256, the include that
    brought it in, the local servers and hooks it declares or sets, the token-carrying providers it
    places, and whether they may run (and count)."""
    return [
        {
            "file": display_path(layer.path),
            "sha256": layer.sha256,
            "included_by": provenance.included_by(index) if provenance else None,
            "local": list(layer.local),
            "hooks": list(layer.hooks),
            "remote": list(layer.remote),
            "trusted": None if layer.included_by is None or not (layer.local or layer.hooks or layer.remote) else layer.distrust is None,
            "notice": layer.distrust,
        }
        for index, layer in enumerate(loaded.layers)
    ]


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
    """Errors every time; a warning once while the state it tells of holds (the shell hook syncs
    at many prompts, and a user's own entry stays the user's): `projector doctor` lists them all."""
    for warning in unsaid(outcome.warnings, os.environ):
        err(f"warning: {warning}")
    for problem in outcome.problems + tuple(problems):
        err(f"error: {problem}")


def said_path(environ: Mapping[str, str]) -> Path:
    return state_dir(environ) / "said.json"


def stored_warnings(path: Path) -> set[str]:
    """Warnings kept in the state folder (said, acknowledged); none when the file is missing or unreadable."""
    import json

    try:
        return set(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return set()


def store_warnings(path: Path, warnings: Iterable[str]) -> None:
    import json

    files.write_text(path, json.dumps(sorted(set(warnings)), indent=0))


def unsaid(warnings: tuple[str, ...], environ: Mapping[str, str]) -> list[str]:
    """The warnings not said before, and remembered as said. Only those still given are kept,
    so a state that goes away and comes back is told again."""
    path = said_path(environ)
    before = stored_warnings(path)
    current = list(dict.fromkeys(warnings))
    if set(current) != before:
        try:
            store_warnings(path, current)
        except OSError:
            return current  # nowhere to remember: say each
    return [warning for warning in current if warning not in before]
