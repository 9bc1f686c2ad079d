"""Errors a person can act on: each names the file, the line and column, and what to do."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from projector.core.record import Record


def display_path(path: Path | str, home: Path | None = None) -> str:
    """A path as a person reads it: under the home folder it starts with ``~``."""
    text = str(path)
    home_text = str(home if home is not None else Path.home())
    if home_text not in ("", "/") and (text == home_text or text.startswith(home_text + "/")):
        return "~" + text[len(home_text) :]
    return text


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean "x"?)' for the choice closest to a mistyped ``word``; "" when none is close."""
    from difflib import get_close_matches

    close = get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


class Problem(Record):
    """One thing wrong in a file, and where."""

    file: str
    line: int | None  # 1-based; None when the problem has no place in the file
    column: int | None
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.message}"


class ProjectorError(Exception):
    """One or more problems; nothing was written because of them."""

    def __init__(self, problems: list[Problem] | Problem):
        self.problems = problems if isinstance(problems, list) else [problems]
        super().__init__("\n".join(str(p) for p in self.problems))


class ModelError(ProjectorError):
    """The model file is missing, not YAML, or not a valid model."""

    read: dict[str, list[int] | None] = {}  # the files its check read or looked for, each stat taken before (core.layers.checked)


class DocumentError(ProjectorError):
    """A client's file could not be read or parsed; it was left untouched."""


def quoted(value: object) -> str:
    """A value in a message: quoted, with a newline or a control character shown as an escape."""
    import json

    return json.dumps(value, ensure_ascii=False)


def shown_name(text: str) -> str:
    """A name in a message (an entry's, a folder's): as it is, unless it is empty or a newline or
    a control character in it would break the line or hide part of it: then ``quoted``."""
    return text if text and text.isprintable() else quoted(text)
