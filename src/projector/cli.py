"""The command line: parse, call, print. The work happens in engine.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from projector import clients as client_registry
from projector import engine, ledger, model, projects
from projector.errors import ModelError, ProjectorError, display_path

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Compile one MCP model into every AI coding client's own config file.",
)

ConfigOption = Annotated[
    Optional[str],
    typer.Option("--config", "-c", help="The model file (default: $PROJECTOR_CONFIG, else ~/.config/projector/projector.yaml)."),
]
ClientOption = Annotated[
    Optional[list[str]],
    typer.Option("--client", help="Only this client (repeatable). Default: the model's list, else the clients found here."),
]
ForceOption = Annotated[bool, typer.Option("--force", help="Overwrite entries changed by hand and adopt same-name entries.")]


def _err(text: str) -> None:
    print(text, file=sys.stderr)


def _load(config: str | None) -> model.Model:
    """The model, checked (answered from the checked-model cache while the file is unchanged)."""
    cache = ledger.state_dir(os.environ) / "model-cache.json"
    return model.cached(model.model_path(config, os.environ), os.environ, lambda: tuple(client_registry.registry()), cache)


def _compute(config: str | None, only: list[str] | None, force: bool) -> tuple[engine.Outcome, ledger.Ledger]:
    environ = os.environ
    known = tuple(client_registry.registry())
    loaded = _load(config)
    unknown = [c for c in only or () if c not in known]
    if unknown:
        raise typer.BadParameter(f"unknown client {unknown[0]!r} (known: {', '.join(known)})", param_hint="--client")
    ids = tuple(only) if only else loaded.clients
    chosen = client_registry.selected(ids, environ)
    state = ledger.load(ledger.ledger_path(environ))
    return engine.compute(loaded, chosen, environ, state, force=force, projects=projects.recorded(environ)), state


def _remember(config: str | None, complete: bool, hook: bool) -> None:
    """After a sync: the fast path's fingerprint (a complete, clean sync only) and, for the shell
    hook, the files to watch and the stamp they are compared with."""
    from projector import __version__, fastpath, files

    environ = os.environ
    model_file = str(model.model_path(config, environ))
    try:
        loaded = _load(config)
        recorded = projects.recorded(environ)
        paths, binaries = engine.dependencies(loaded, list(client_registry.registry().values()), environ, recorded)
    except ProjectorError:
        paths, binaries = [model_file], ["projector"]
    if complete:
        fastpath.record(model_file, paths + [str(ledger.ledger_path(environ))], binaries, environ, __version__)
    else:
        fastpath.forget(environ)
    if hook:
        folder = ledger.state_dir(environ)
        watch = "".join(("+" if os.path.exists(p) else "-") + p + "\n" for p in sorted(set(paths)))
        watch += f"@{engine.projector_on_path(environ) or ''}\n"  # where projector was on PATH
        files.write_text(folder / "hook-watch", watch)
        files.write_text(folder / "hook-stamp", "")  # last: what the hook compares files with


def _report_warnings(outcome: engine.Outcome, problems: tuple = ()) -> None:
    for warning in outcome.warnings:
        _err(f"warning: {warning}")
    for problem in outcome.problems + tuple(problems):
        _err(f"error: {problem}")


@app.command()
def diff(
    config: ConfigOption = None,
    client: ClientOption = None,
    force: ForceOption = False,
    color: Annotated[Optional[bool], typer.Option("--color/--no-color", help="Colour the diff (default: on a terminal).")] = None,
) -> None:
    """Show what `projector sync` would change, as a unified diff per file. Exit 0: nothing to
    change, 1: changes, 2: an error."""
    try:
        outcome, _ = _compute(config, client, force)
    except ProjectorError as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from None
    colour = sys.stdout.isatty() if color is None else color
    from projector.report import unified_diff

    for result in outcome.changed:
        sys.stdout.write(unified_diff(result, colour))
    _report_warnings(outcome)
    if outcome.problems:
        raise typer.Exit(2)
    raise typer.Exit(1 if outcome.changed else 0)


@app.command()
def sync(
    config: ConfigOption = None,
    client: ClientOption = None,
    force: ForceOption = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but warnings and errors (for shell hooks).")] = False,
    wait: Annotated[float, typer.Option("--wait", help="Seconds to wait for another running sync.")] = 10.0,
    hook: Annotated[bool, typer.Option("--hook", hidden=True, help="Run from the shell hook.")] = False,
) -> None:
    """Write the model into every client's file: only the files whose bytes change. Exit 1
    when a file could not be read or parsed (it is left untouched; the others are synced)."""
    from projector import files
    from projector.report import change_line

    lock = ledger.state_dir(os.environ) / "sync.lock"
    try:
        with files.exclusive(lock, wait):
            outcome, state = _compute(config, client, force)
            written = engine.write(outcome, state)
            if written.ledger != state:
                files.write_text(ledger.ledger_path(os.environ), written.ledger.to_json(), locked=True)
    except files.Busy:
        _err(f"error: another projector sync is running (it holds {display_path(lock)}); nothing was written, try again")
        raise typer.Exit(2) from None
    except ProjectorError as error:
        _err(f"error: {error}")
        _remember(config, complete=False, hook=hook)
        raise typer.Exit(2) from None
    complete = not (outcome.problems or written.problems or client or force)
    _remember(config, complete=complete, hook=hook)
    if not quiet:
        for result in written.results:
            if result.changed:
                print(change_line(result))
    _report_warnings(outcome, written.problems)
    raise typer.Exit(1 if outcome.problems or written.problems else 0)


@app.command()
def status(
    config: ConfigOption = None,
    client: ClientOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output (with a schema version).")] = False,
) -> None:
    """Whether every client's file matches the model. Exit 0: in sync, 1: drift or pending
    changes, 2: an error."""
    import json

    from projector.report import status_lines, status_report

    try:
        outcome, _ = _compute(config, client, False)
    except ProjectorError as error:
        if as_json:
            print(json.dumps({"schema": 1, "in_sync": False, "files": [], "warnings": [], "errors": [str(p) for p in error.problems]}, indent=2))
        else:
            _err(f"error: {error}")
        raise typer.Exit(2) from None
    report = status_report(outcome)
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        for line in status_lines(report):
            print(line)
        _report_warnings(outcome)
    raise typer.Exit(2 if outcome.problems else (0 if report["in_sync"] else 1))


@app.command()
def explain(
    folder: Annotated[Optional[str], typer.Argument(help="The folder (default: the current one).")] = None,
    config: ConfigOption = None,
    client: ClientOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output (with a schema version).")] = False,
) -> None:
    """What a folder gets, and why: the binding that applies (and the others around it), each
    provider's KB set, and each client's entry."""
    import json

    from projector import diagnose
    from projector.report import explain_lines

    try:
        loaded = _load(config)
        chosen = client_registry.selected(tuple(client) if client else loaded.clients, os.environ)
    except ProjectorError as error:
        _err(f"error: {error}")
        raise typer.Exit(2) from None
    report = diagnose.explain(loaded, folder or os.getcwd(), chosen, os.environ)
    print(json.dumps(report, indent=2) if as_json else "\n".join(explain_lines(report)))


@app.command()
def doctor(config: ConfigOption = None, client: ClientOption = None) -> None:
    """Check projector's set-up: projector on PATH and in the entries, clients and their files,
    files that do not parse, token variables, tokens a client will not pass on, shadowed entries.
    Exit 0 healthy, 1 problems found."""
    from projector import diagnose

    try:
        outcome, _ = _compute(config, client, False)
        loaded = _load(config)
    except ProjectorError as error:
        _err(f"error: {error}")
        raise typer.Exit(1) from None
    report = diagnose.doctor(loaded, outcome, [r.client for r in outcome.results if not r.target.is_project], os.environ)
    for item in report["checks"]:
        print(("ok       " if item["ok"] else "PROBLEM  ") + item["message"])
    raise typer.Exit(0 if report["healthy"] else 1)


FolderArgument = Annotated[str, typer.Argument(help="The folder to bind (a path; ~ works).")]


@app.command()
def bind(
    folder: FolderArgument,
    provider: Annotated[str, typer.Option("--provider", help="The provider to bind.")],
    kb: Annotated[Optional[list[str]], typer.Option("--kb", help="A KB shown there (repeatable).")] = None,
    no_kb: Annotated[bool, typer.Option("--no-kb", help="Show no KB there: the session has no tools.")] = False,
    on: Annotated[bool, typer.Option("--on", help="Turn the provider on there (a local server starts there).")] = False,
    off: Annotated[bool, typer.Option("--off", help="Turn the provider off there: no tools, nothing started.")] = False,
    config: ConfigOption = None,
) -> None:
    """Bind FOLDER: in it and below, PROVIDER shows only the given KBs, or is turned on or off.
    Comments and order in the model are kept."""
    if [bool(kb), no_kb, on, off].count(True) != 1:
        _err("error: give one of --kb NAME (repeatable), --no-kb, --on or --off")
        raise typer.Exit(2)
    from projector import modeledit

    kbs = list(kb or []) if (kb or no_kb) else None
    enabled = on if (on or off) else None
    _edit_model(config, lambda text, shown: modeledit.bind(text, shown, folder, provider, kbs, os.environ, enabled))


@app.command()
def unbind(
    folder: FolderArgument,
    provider: Annotated[Optional[str], typer.Option("--provider", help="Only this provider's part of the binding.")] = None,
    config: ConfigOption = None,
) -> None:
    """Remove the binding of FOLDER (or only PROVIDER's part of it). Comments are kept."""
    from projector import modeledit

    _edit_model(config, lambda text, shown: modeledit.unbind(text, shown, folder, provider, os.environ))


def _edit_model(config: str | None, edit) -> None:
    """Edit the model's text, check the result like a hand edit, write it (compare-and-swap)."""
    from projector import files

    path = model.model_path(config, os.environ)
    shown = display_path(path)
    try:
        text = path.read_text(encoding="utf-8")
        edited = edit(text, shown)
        model.checked_text(edited, shown, os.environ, tuple(client_registry.registry()))
        files.write_text(path, edited, expected=text)
    except FileNotFoundError:
        _err(f"error: {shown}: no model here: run `projector init` first")
        raise typer.Exit(2) from None
    except ProjectorError as error:
        _err(f"error: {error}")
        raise typer.Exit(1) from None
    except files.ChangedMeanwhile:
        _err(f"error: {shown} changed while projector edited it; nothing was written, try again")
        raise typer.Exit(1) from None
    print(f"updated {shown}: run `projector sync` to apply it")


ProjectFolder = Annotated[Optional[str], typer.Argument(help="The workspace folder (default: the current one).")]


@app.command()
def trust(folder: ProjectFolder = None, config: ConfigOption = None) -> None:
    """Let FOLDER's .projector.yaml count: its settings, and the local servers it declares (it
    can name commands to run, so read it first). Any later change to the file withdraws this
    trust until you run `projector trust` again."""
    file = projects.project_file(folder or os.getcwd())
    shown = display_path(file)
    try:
        raw = Path(file).read_bytes()
    except FileNotFoundError:
        _err(f"error: {shown}: no project file here; write one (README: Project files) or give another folder")
        raise typer.Exit(2) from None
    except OSError as error:
        _err(f"error: {shown}: cannot be read ({error.strerror})")
        raise typer.Exit(2) from None
    try:
        data = projects.checked(raw, projects.specs(_load(config)), shown)
    except ProjectorError as error:
        _err(f"error: {error}\nnothing was trusted")
        raise typer.Exit(1) from None
    projects.trust(file, data, raw, os.environ)
    print(f"trusted {shown} (sha256 {projects.digest(raw)[:12]})")
    for name, spec in sorted((data.get("providers") or {}).items()):
        print(f"  local server {name}: runs {' '.join([spec['command'], *spec.get('args', [])])}")
    mentioned = sorted(name for name in data if name != "providers")
    if mentioned:
        print(f"  settings for: {', '.join(mentioned)}")
    print("run `projector sync` (the shell hook does it at the next prompt) so every client has its entries")


@app.command()
def untrust(folder: ProjectFolder = None) -> None:
    """Stop FOLDER's .projector.yaml from counting (the file is left as it is)."""
    file = projects.project_file(folder or os.getcwd())
    if not projects.untrust(file, os.environ):
        _err(f"error: {display_path(file)} is not trusted; nothing to do")
        raise typer.Exit(1)
    print(f"{display_path(file)} no longer counts; run `projector sync` to remove entries only it declared")


SHELLS = {"bash": "bash.sh", "zsh": "zsh.sh", "fish": "fish.fish"}


@app.command()
def hook(shell: Annotated[str, typer.Argument(help="bash, zsh or fish")]) -> None:
    """Print the shell hook: `eval "$(projector hook bash)"`, `eval "$(projector hook zsh)"` or
    `projector hook fish | source`. It syncs at a prompt only when something that matters changed
    (the model, a client's file, where projector is on PATH), and starts no process otherwise."""
    if shell not in SHELLS:
        _err(f"error: no hook for {shell!r} (shells: {', '.join(SHELLS)})")
        raise typer.Exit(2)
    sys.stdout.write((Path(__file__).parent / "hooks" / SHELLS[shell]).read_text(encoding="utf-8"))


@app.command()
def init(config: ConfigOption = None) -> None:
    """Write a commented starter model (never over an existing one)."""
    path = model.model_path(config, os.environ)
    shown = display_path(path)
    if path.exists():
        _err(f"error: {shown} exists already; projector init never overwrites a model")
        raise typer.Exit(1)
    from projector import files

    starter = (Path(__file__).parent / "starter.yaml").read_text(encoding="utf-8")
    files.write_text(path, starter)
    print(f"wrote {shown}: add your providers, then run `projector diff`")


def main() -> None:
    try:
        app()
    except ModelError as error:  # pragma: no cover - commands handle their own
        _err(f"error: {error}")
        sys.exit(2)
