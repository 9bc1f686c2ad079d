"""The command line: parse, dispatch to one module per command (commands/), exit with its code.

Nothing here does work; each command's module does, and returns its exit status. Help is
click's plain layout (words wrapped at the terminal's width, never cut off) with metavars that
say what a value is.
"""

from __future__ import annotations

import os
import re
import sys
from functools import partial
from typing import Annotated, Optional

import typer

from projector.core.errors import ModelError

app = typer.Typer(
    add_completion=False,  # `projector completion SHELL` prints the script, like `projector hook SHELL`
    rich_markup_mode=None,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Compile one MCP model into every AI coding client's own config file.",
)

COMPLETE = "_PROJECTOR_COMPLETE"


class _Command(typer.core.TyperCommand):
    """typer writes a required argument as {NAME} and every argument's type as <str>; click's
    own NAME says it all (each argument's help says what it is)."""

    def format_help(self, ctx, formatter) -> None:  # type: ignore[no-untyped-def]
        super().format_help(ctx, formatter)
        formatter.buffer[:] = [re.sub(r"\{([A-Z]+)\}| <str>", r"\1", piece) for piece in formatter.buffer]


command = partial(app.command, cls=_Command)

ConfigOption = Annotated[
    Optional[str],
    typer.Option("--config", "-c", metavar="FILE",
                 help="The model file (default: $PROJECTOR_CONFIG, else $XDG_CONFIG_HOME/projector/projector.yaml, else ~/.config/projector/projector.yaml)."),
]


def _client_ids(incomplete: str) -> list[str]:
    from projector.core.resources import client_ids

    return [i for i in client_ids() if i.startswith(incomplete)]


def _completed_model(ctx: typer.Context):  # -> Model | None
    """The model a command line being completed names (its --config, else the default), or None
    when it cannot be read: completion then offers nothing rather than an error."""
    from projector.commands.common import load_model
    from projector.core.errors import ProjectorError

    try:
        return load_model(ctx.params.get("config"))
    except (ProjectorError, OSError):
        return None


def _provider_names(ctx: typer.Context, incomplete: str) -> list[str]:
    model = _completed_model(ctx)
    return [p.name for p in model.providers if p.name.startswith(incomplete)] if model else []


def _kb_names(ctx: typer.Context, incomplete: str) -> list[str]:
    """The KBs of the --provider given before (else of every provider) that the model lists."""
    model = _completed_model(ctx)
    if model is None:
        return []
    chosen = ctx.params.get("provider")
    kbs = [kb for p in model.providers if chosen in (None, p.name) for kb in (p.kbs or ())]
    return [kb for kb in dict.fromkeys(kbs) if kb.startswith(incomplete)]


def _shells(incomplete: str) -> list[str]:
    return [s for s in ("bash", "zsh", "fish") if s.startswith(incomplete)]


ClientOption = Annotated[
    Optional[list[str]],
    typer.Option("--client", metavar="ID", autocompletion=_client_ids, help="Only this client (repeatable). Default: the model's list, else the clients found here."),
]
ForceOption = Annotated[bool, typer.Option("--force", help="Overwrite entries changed by hand and adopt same-name entries.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output (with a schema version).")]


def _version(value: bool) -> None:
    if value:
        from projector import __version__

        print(f"projector {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", "-V", is_eager=True, callback=_version, help="Print projector's version and exit.")
    ] = False,
) -> None:
    """Compile one MCP model into every AI coding client's own config file."""


def _exit(code: int) -> None:
    raise typer.Exit(code)


def _with_clients(run, *args) -> None:
    """Run a command that takes --client; an unknown client is a usage error (exit 2)."""
    from projector.commands.common import UsageError

    try:
        _exit(run(*args))
    except UsageError as error:
        raise typer.BadParameter(str(error), param_hint="--client") from None


@command()
def diff(
    config: ConfigOption = None,
    client: ClientOption = None,
    force: ForceOption = False,
    stat: Annotated[bool, typer.Option("--stat", help="One line per file: how many lines sync would add and remove.")] = False,
    color: Annotated[
        Optional[bool],
        typer.Option("--color/--no-color", help="Colour the diff (default: on a terminal, unless $NO_COLOR is set or TERM=dumb)."),
    ] = None,
    pager: Annotated[
        Optional[bool],
        typer.Option("--pager/--no-pager", help="Show the diff through $PAGER, else less with LESS=FRX, as git does (default: on a terminal)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Show what `projector sync` would change.

    A unified diff per file (or --stat), and each entry changed by hand (drift) as `sync --force`
    would put it back. Exit 0: nothing to change, 1: changes or drift, 2: an error.
    """
    from projector.commands import diff as command

    _with_clients(command.run, config, client, force, stat, color, pager, as_json)


@command()
def sync(
    config: ConfigOption = None,
    client: ClientOption = None,
    force: ForceOption = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but warnings, errors and changes to a repository's files (for shell hooks).")] = False,
    wait: Annotated[float, typer.Option("--wait", metavar="SECONDS", help="How long to wait for another running sync.")] = 10.0,
    hook: Annotated[bool, typer.Option("--hook", hidden=True, help="Run from the shell hook (the fast path renews its stamp).")] = False,
    as_json: JsonOption = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", "-n", help="Say what would be written, and write nothing.")] = False,
) -> None:
    """Write the model into every client's file.

    Only the files whose bytes change are written; an entry changed by hand is kept, and said.
    Exit 1 when a file could not be read or parsed (it is left untouched; the others are synced).
    """
    from projector.commands import sync as command

    _with_clients(command.run, config, client, force, quiet, wait, hook, as_json, dry_run)


@command()
def status(config: ConfigOption = None, client: ClientOption = None, as_json: JsonOption = False) -> None:
    """Whether every client's file matches the model.

    Exit 0: in sync, 1: drift or pending changes, 2: an error.
    """
    from projector.commands import status as command

    _with_clients(command.run, config, client, as_json)


@command()
def explain(
    folder: Annotated[Optional[str], typer.Argument(metavar="DIR", help="The folder (default: the current one).")] = None,
    config: ConfigOption = None,
    client: ClientOption = None,
    as_json: JsonOption = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Everything: where each setting came from, the environment, each entry as it is in each file.")] = False,
) -> None:
    """What a folder gets, and why.

    One line per provider (what this folder gets, and why) and one per client (its entries as
    they are in its file, against what sync writes); --verbose for all of it. Exit 1 when DIR
    does not exist (it is still explained).
    """
    from projector.commands import explain as command

    _exit(command.run(folder, config, client, as_json, verbose))


@command()
def tools(
    folder: Annotated[Optional[str], typer.Argument(metavar="DIR", help="The folder (default: the current one).")] = None,
    provider: Annotated[Optional[str], typer.Option("--provider", "-p", metavar="NAME", help="Only this provider.")] = None,
    show_all: Annotated[bool, typer.Option("--all", help="Also the tools the folder's rule hides, marked (hidden).")] = False,
    root: Annotated[Optional[list[str]], typer.Option("--root", metavar="DIR", help="Ask as a client declaring this root (repeat for several).")] = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """The tools a folder is offered, as a client there sees them.

    Each provider is asked through the bridge, started in DIR as a client would start it; its
    tool rule there (tools: allow/deny) and where it came from. With --root, the client declares
    those roots (an editor with several folders): in an unbound folder a remote provider follows
    them. Exit 1 when a provider could not be asked.
    """
    from projector.commands import tools as command

    _exit(command.run(folder, provider, config, show_all, as_json, tuple(root or ())))


@command()
def doctor(
    config: ConfigOption = None,
    client: ClientOption = None,
    as_json: JsonOption = False,
    ack: Annotated[bool, typer.Option("--ack", help="Acknowledge the warnings given now: doctor counts them in one line until they change.")] = False,
    show_all: Annotated[bool, typer.Option("--all", help="List acknowledged warnings too.")] = False,
) -> None:
    """Check projector's set-up, each problem with what to do.

    projector on PATH and in the entries; each bridge entry started the way its client starts
    it; clients found and skipped; files that do not parse; token variables and the clients
    that will not pass them on; shadowed entries; pending removals; withdrawn trust. Exit 0
    healthy, 1 problems found.
    """
    from projector.commands import doctor as command

    _with_clients(command.run, config, client, as_json, ack, show_all)


@command()
def adopt(
    client: Annotated[str, typer.Argument(metavar="CLIENT", autocompletion=_client_ids, help="The client whose entry you changed (its id, as --client takes).")],
    provider: Annotated[str, typer.Argument(metavar="PROVIDER", autocompletion=_provider_names, help="The entry's name.")],
    config: ConfigOption = None,
) -> None:
    """Keep a hand edit of an entry as projector's own.

    The entry stays as you wrote it and `status` counts it in sync, until the model changes
    what projector writes there (then sync updates it).
    """
    from projector.commands import adopt as command

    _exit(command.run(client, provider, config))


@command()
def remove(
    config: ConfigOption = None,
    client: ClientOption = None,
    force: Annotated[bool, typer.Option("--force", help="Also remove entries changed by hand.")] = False,
) -> None:
    """Take every projector entry out of every client.

    Each file is left as it was before projector: files and keys projector created go too. The
    model is kept; a later `projector sync` (or the shell hook) writes the entries again.
    """
    from projector.commands import remove as command

    _with_clients(command.run, config, client, force)


@command(name="import")
def import_(
    config: ConfigOption = None,
    client: Annotated[
        Optional[list[str]],
        typer.Option("--client", metavar="ID", autocompletion=_client_ids, help="Only this client's entries (repeatable). Default: the clients found here."),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the model's diff and the report; write nothing.")] = False,
) -> None:
    """Bring your clients' MCP servers into the model.

    The same server in several clients becomes one provider; a token written in an entry
    becomes a variable you are told to set; what the model cannot say is listed. Comments in
    the model are kept. `projector remove` gives every imported entry back as it was.
    """
    from projector.commands import import_ as command

    _with_clients(command.run, config, client, dry_run)


FolderArgument = Annotated[str, typer.Argument(metavar="FOLDER", help="The folder (a path; ~ works).")]


@command()
def bind(
    folder: FolderArgument,
    provider: Annotated[str, typer.Option("--provider", metavar="NAME", autocompletion=_provider_names, help="The provider to bind.")],
    kb: Annotated[Optional[list[str]], typer.Option("--kb", metavar="KB", autocompletion=_kb_names, help="A KB shown there (repeatable).")] = None,
    no_kb: Annotated[bool, typer.Option("--no-kb", help="Show no KB there: the session has no tools.")] = False,
    on: Annotated[bool, typer.Option("--on", help="Turn the provider on there (a local server starts there).")] = False,
    off: Annotated[bool, typer.Option("--off", help="Turn the provider off there: no tools, nothing started.")] = False,
    config: ConfigOption = None,
) -> None:
    """Bind FOLDER: the KBs PROVIDER shows there, or on/off.

    In FOLDER and below, PROVIDER shows only the given KBs (--kb, --no-kb), or is turned on or
    off (--on, --off). Comments and order in the model are kept.
    """
    from projector.commands import bind as command

    _exit(command.bind(folder, provider, kb, no_kb, on, off, config))


@command()
def unbind(
    folder: FolderArgument,
    provider: Annotated[Optional[str], typer.Option("--provider", metavar="NAME", autocompletion=_provider_names, help="Only this provider's part of the binding.")] = None,
    config: ConfigOption = None,
) -> None:
    """Remove the binding of FOLDER (or only PROVIDER's part of it).

    Comments and order in the model are kept.
    """
    from projector.commands import bind as command

    _exit(command.unbind(folder, provider, config))


ProjectFolder = Annotated[Optional[str], typer.Argument(metavar="DIR", help="The workspace folder (default: the current one).")]
TrustedPlace = Annotated[Optional[str], typer.Argument(metavar="DIR", help="The workspace folder (default: the current one), or a file your model includes.")]


@command()
def trust(folder: TrustedPlace = None, config: ConfigOption = None) -> None:
    """Let DIR's .projector.yaml count.

    Its settings, and the local servers it declares (it can name commands to run, so read it
    first). Given a file your model includes (a team's layer), let the local servers and hooks
    it declares or sets run. Any later change to the file withdraws this trust until you run
    `projector trust` again.
    """
    from projector.commands import trust as command

    _exit(command.trust(folder, config))


@command()
def untrust(folder: TrustedPlace = None, config: ConfigOption = None) -> None:
    """Stop DIR's .projector.yaml from counting.

    The file is left as it is; `projector sync` removes the entries only it declared. Given a
    file your model includes, its local servers and hooks stop running.
    """
    from projector.commands import trust as command

    _exit(command.untrust(folder, config))


@command()
def edit(config: ConfigOption = None) -> None:
    """Edit the model in $EDITOR; it is checked on save.

    $VISUAL, else $EDITOR, else vi. A model with a mistake is not saved: you are shown what
    is wrong and asked to edit it again. No model yet: you start from the commented starter.
    """
    from projector.commands import edit as command

    _exit(command.run(config))


Shell = Annotated[str, typer.Argument(metavar="SHELL", autocompletion=_shells, help="bash, zsh or fish.")]


@command()
def hook(shell: Shell) -> None:
    """Print the prompt hook for bash, zsh or fish.

    At a prompt it runs `projector sync` when something that matters changed, and starts no
    process when nothing did. bash: eval "$(projector hook bash)" in ~/.bashrc; zsh: eval
    "$(projector hook zsh)" in ~/.zshrc; fish: projector hook fish | source in
    ~/.config/fish/config.fish.
    """
    from projector.commands import hook as command

    _exit(command.run(shell))


@command()
def completion(shell: Shell) -> None:
    """Print the shell completion script.

    bash: eval "$(projector completion bash)" in ~/.bashrc; zsh: eval "$(projector completion
    zsh)" in ~/.zshrc (after compinit); fish: projector completion fish | source in
    ~/.config/fish/config.fish.
    """
    from projector.commands import hook as command

    _exit(command.completion(shell, COMPLETE))


@command()
def init(config: ConfigOption = None) -> None:
    """Write a commented starter model (never over an existing one)."""
    from projector.commands import init as command

    _exit(command.run(config))


@command()
def log(
    count: Annotated[int, typer.Option("-n", "--count", metavar="N", help="How many of the last syncs to show.")] = 10,
    as_json: JsonOption = False,
) -> None:
    """The last syncs: when, why, and what each did.

    Each sync by the shell hook (with what changed) or by hand, and what it wrote or kept: the
    hook is quiet, this is its trace. projector keeps the last 200.
    """
    from projector.commands import log as command

    _exit(command.run(count, as_json))


@command()
def ps(as_json: JsonOption = False) -> None:
    """The shared servers running (`shared: true`).

    Workspace, provider, pid, protocol, sessions, uptime, resident memory.
    """
    from projector.commands import ps as command

    _exit(command.run(as_json))


@command()
def stop(
    folder: ProjectFolder = None,
    provider: Annotated[Optional[str], typer.Option("--provider", metavar="NAME", autocompletion=_provider_names, help="Only this provider's server.")] = None,
    config: ConfigOption = None,
) -> None:
    """End the shared servers of DIR's workspace now.

    Their sessions are closed; the next session starts a fresh server.
    """
    from projector.commands import stop as command

    _exit(command.run(folder, provider, config))


@command()
def login(
    provider: Annotated[str, typer.Argument(metavar="PROVIDER", help="An OAuth provider of the model.")],
    paste: Annotated[bool, typer.Option("--paste", help="Print the address to open elsewhere; paste back where the browser was sent.")] = False,
    device: Annotated[bool, typer.Option("--device", help="Sign in on another device with a code (the device authorization grant).")] = False,
    scope: Annotated[Optional[str], typer.Option("--scope", metavar="SCOPES", help="Ask for these scopes (space-separated) instead of the model's or the server's.")] = None,
    from_bridge: Annotated[Optional[str], typer.Option("--from-bridge", hidden=True, help="Started by a bridge that found the token file at this stamp.")] = None,
    config: ConfigOption = None,
) -> None:
    """Sign in to an OAuth provider, for every client.

    Opens the browser ($BROWSER when set); without a display or over SSH, prints an address and
    a code to confirm on any device where the server offers that (--device asks for it), else
    the address, and takes the one the browser was sent back to. Tokens go to the OS keyring
    and a 0600 file.
    """
    from projector.commands import login as command

    _exit(command.run(provider, config, paste, device, scope, from_bridge))


@command()
def logout(
    provider: Annotated[str, typer.Argument(metavar="PROVIDER", help="An OAuth provider of the model.")],
    config: ConfigOption = None,
) -> None:
    """Forget an OAuth provider's sign-in.

    Its tokens are removed from the keyring and the state folder.
    """
    from projector.commands import logout as command

    _exit(command.run(provider, config))


def main() -> None:
    if COMPLETE in os.environ:  # a shell asks for completions (see `projector completion`)
        from typer.completion import completion_init

        completion_init()
    try:
        app(prog_name="projector")
    except ModelError as error:  # pragma: no cover - commands handle their own
        from projector.commands.common import err

        err(f"error: {error}")
        sys.exit(2)
