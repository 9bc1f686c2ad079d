"""`sync`, `status` and `diff` parsed by hand, so the commands a prompt and a person run most start
without typer (and the pydantic it converts values with): about half of their start-up.

Only a command line this parser reads exactly as typer would runs here: the options below, each
spelled as typer takes it (``--config F``, ``--config=F``, ``-c F``, ``-cF``; flags as often as
given; ``--client`` repeated). Anything else goes to typer (cli.py), which parses, helps and
fails as it always has: ``--help``, an option or argument this parser does not know, a value it
is not sure typer reads the same (one starting with ``-``, a number it does not spell plainly),
an option given twice, grouped short flags, a client name no descriptor has (typer's usage
error), and shell completion. tests/commands/test_direct.py holds the two parsers to the same
calls, option by option, against the typer command itself.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping

from projector.core.record import Record

TYPE_CHECKING = False  # typing is not imported at run time: the commands read here start without it
if TYPE_CHECKING:
    from typing import Any

FLAG, SWITCH, TEXT, TEXTS, NUMBER = "flag", "switch", "text", "texts", "number"
_PLAIN_NUMBER = re.compile(r"[0-9]+(\.[0-9]*)?|\.[0-9]+")


class Option(Record):
    """One option of a command as typer reads it."""

    dest: str  # the typer function's parameter
    kind: str  # flag | switch (--x/--no-x) | text | texts (repeatable) | number
    names: tuple[str, ...]
    default: Any = None


class Command(Record):
    """A command direct.py reads as typer would."""

    module: str  # projector.commands.<name>, whose ``run`` takes the options in this order
    options: tuple[Option, ...]


CONFIG = Option("config", TEXT, ("--config", "-c"))
CLIENT = Option("client", TEXTS, ("--client",))
FORCE = Option("force", FLAG, ("--force",), False)
JSON = Option("as_json", FLAG, ("--json",), False)

COMMANDS = {
    "sync": Command("projector.commands.sync", (CONFIG, CLIENT, FORCE, Option("quiet", FLAG, ("--quiet", "-q"), False),
                                                Option("wait", NUMBER, ("--wait",), 10.0), Option("hook", FLAG, ("--hook",), False),
                                                JSON, Option("dry_run", FLAG, ("--dry-run", "-n"), False))),
    "status": Command("projector.commands.status", (CONFIG, CLIENT, JSON)),
    "diff": Command("projector.commands.diff", (CONFIG, CLIENT, FORCE, Option("stat", FLAG, ("--stat",), False),
                                                Option("color", SWITCH, ("--color", "--no-color"), None), Option("pager", SWITCH, ("--pager", "--no-pager"), None),
                                                JSON)),
}


class Call(Record):
    """What a command line asks for."""

    command: Command
    values: tuple[Any, ...]  # in the order of command.options


def parse(argv: list[str], environ: Mapping[str, str]) -> Call | None:
    """The call ``argv`` asks for, or None when typer must read it."""
    command = COMMANDS.get(argv[0]) if argv else None
    if command is None or any(name.startswith("_") and name.endswith("_COMPLETE") for name in environ):
        return None
    by_name = {name: option for option in command.options for name in option.names}
    values: dict[str, Any] = {option.dest: option.default for option in command.options}
    given: set[str] = set()
    words = argv[1:]
    index = 0
    while index < len(words):
        word = words[index]
        if word.startswith("--"):
            name, equals, attached = word.partition("=")
        elif word.startswith("-") and len(word) > 2:  # -cFILE
            name, equals, attached = word[:2], "=", word[2:]
        else:
            name, equals, attached = word, "", ""
        option = by_name.get(name)
        if option is None:
            return None
        if option.kind in (FLAG, SWITCH):
            if equals:
                return None
            values[option.dest] = name == option.names[0] if option.kind == SWITCH else True
        else:
            if equals:
                text = attached
            elif index + 1 < len(words) and not words[index + 1].startswith("-"):
                index += 1
                text = words[index]
            else:
                return None
            if option.kind == TEXTS:
                values[option.dest] = (values[option.dest] or []) + [text]
            elif option.dest in given or (option.kind == NUMBER and not _PLAIN_NUMBER.fullmatch(text)):
                return None
            else:
                values[option.dest] = float(text) if option.kind == NUMBER else text
        given.add(option.dest)
        index += 1
    if values.get("client") and not _known_clients(values["client"]):
        return None
    return Call(command, tuple(values[option.dest] for option in command.options))


def _known_clients(names: list[str]) -> bool:
    from projector.core.resources import client_ids

    return set(names) <= set(client_ids())


def run(call: Call) -> int:
    """The command's exit status; an interrupted command exits 130, and one whose reader went
    away (``| head``) exits 1 quietly, as under typer."""
    import errno
    import importlib

    try:
        return importlib.import_module(call.command.module).run(*call.values)
    except KeyboardInterrupt:
        return 130
    except OSError as error:
        if error.errno != errno.EPIPE:
            raise
        sys.stdout, sys.stderr = _Pacified(sys.stdout), _Pacified(sys.stderr)
        return 1


class _Pacified:
    """A stream whose flush ignores a closed pipe (click's PacifyFlushWrapper): the interpreter
    flushes stdout once more at exit."""

    def __init__(self, stream: Any):
        self._stream = stream

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            import errno

            if error.errno != errno.EPIPE:
                raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
