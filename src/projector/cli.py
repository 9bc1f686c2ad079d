"""The command line: parse, dispatch to one module per command (commands/), exit with its code.

Nothing here does work; each command's module does, and returns its exit status.
"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from projector.core.errors import ModelError

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
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output (with a schema version).")]


def _exit(code: int) -> None:
    raise typer.Exit(code)


def _with_clients(run, *args) -> None:
    """Run a command that takes --client; an unknown client is a usage error (exit 2)."""
    from projector.commands.common import UsageError

    try:
        _exit(run(*args))
    except UsageError as error:
        raise typer.BadParameter(str(error), param_hint="--client") from None


@app.command()
def diff(
    config: ConfigOption = None,
    client: ClientOption = None,
    force: ForceOption = False,
    color: Annotated[Optional[bool], typer.Option("--color/--no-color", help="Colour the diff (default: on a terminal).")] = None,
) -> None:
    """Show what `projector sync` would change, as a unified diff per file. Exit 0: nothing to
    change, 1: changes, 2: an error."""
    from projector.commands import diff as command

    _with_clients(command.run, config, client, force, color)


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
    from projector.commands import sync as command

    _with_clients(command.run, config, client, force, quiet, wait, hook)


@app.command()
def status(config: ConfigOption = None, client: ClientOption = None, as_json: JsonOption = False) -> None:
    """Whether every client's file matches the model. Exit 0: in sync, 1: drift or pending
    changes, 2: an error."""
    from projector.commands import status as command

    _with_clients(command.run, config, client, as_json)


@app.command()
def explain(
    folder: Annotated[Optional[str], typer.Argument(help="The folder (default: the current one).")] = None,
    config: ConfigOption = None,
    client: ClientOption = None,
    as_json: JsonOption = False,
) -> None:
    """What a folder gets, and why: the binding that applies (and the others around it), each
    provider's KB set, and each client's entry."""
    from projector.commands import explain as command

    _exit(command.run(folder, config, client, as_json))


@app.command()
def doctor(config: ConfigOption = None, client: ClientOption = None) -> None:
    """Check projector's set-up: projector on PATH and in the entries, clients and their files,
    files that do not parse, token variables, tokens a client will not pass on, shadowed entries.
    Exit 0 healthy, 1 problems found."""
    from projector.commands import doctor as command

    _with_clients(command.run, config, client)


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
    from projector.commands import bind as command

    _exit(command.bind(folder, provider, kb, no_kb, on, off, config))


@app.command()
def unbind(
    folder: FolderArgument,
    provider: Annotated[Optional[str], typer.Option("--provider", help="Only this provider's part of the binding.")] = None,
    config: ConfigOption = None,
) -> None:
    """Remove the binding of FOLDER (or only PROVIDER's part of it). Comments are kept."""
    from projector.commands import bind as command

    _exit(command.unbind(folder, provider, config))


ProjectFolder = Annotated[Optional[str], typer.Argument(help="The workspace folder (default: the current one).")]


@app.command()
def trust(folder: ProjectFolder = None, config: ConfigOption = None) -> None:
    """Let FOLDER's .projector.yaml count: its settings, and the local servers it declares (it
    can name commands to run, so read it first). Any later change to the file withdraws this
    trust until you run `projector trust` again."""
    from projector.commands import trust as command

    _exit(command.trust(folder, config))


@app.command()
def untrust(folder: ProjectFolder = None) -> None:
    """Stop FOLDER's .projector.yaml from counting (the file is left as it is)."""
    from projector.commands import trust as command

    _exit(command.untrust(folder))


@app.command()
def hook(shell: Annotated[str, typer.Argument(help="bash, zsh or fish")]) -> None:
    """Print the shell hook: `eval "$(projector hook bash)"`, `eval "$(projector hook zsh)"` or
    `projector hook fish | source`. It syncs at a prompt only when something that matters changed
    (the model, a client's file, where projector is on PATH), and starts no process otherwise."""
    from projector.commands import hook as command

    _exit(command.run(shell))


@app.command()
def init(config: ConfigOption = None) -> None:
    """Write a commented starter model (never over an existing one)."""
    from projector.commands import init as command

    _exit(command.run(config))


@app.command()
def ps(as_json: JsonOption = False) -> None:
    """The shared servers running (`shared: true`): workspace, provider, pid, sessions, uptime,
    resident memory."""
    from projector.commands import ps as command

    _exit(command.run(as_json))


@app.command()
def stop(
    folder: ProjectFolder = None,
    provider: Annotated[Optional[str], typer.Option("--provider", help="Only this provider's server.")] = None,
    config: ConfigOption = None,
) -> None:
    """End the shared servers of FOLDER's workspace now (their sessions are closed; the next
    session starts a fresh server)."""
    from projector.commands import stop as command

    _exit(command.run(folder, provider, config))


def main() -> None:
    try:
        app()
    except ModelError as error:  # pragma: no cover - commands handle their own
        from projector.commands.common import err

        err(f"error: {error}")
        sys.exit(2)
