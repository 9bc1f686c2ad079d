"""Client files as editable documents, one module per format.

Every format follows the same rule (tomlkit's "edit, don't regenerate"): a maintained parser
finds the byte span of each entry, a change is a splice of exactly those bytes, and everything
else in the file stays byte for byte. After the splices the result is parsed again and compared
with what was meant; a mismatch is a bug and nothing is written.
"""

from __future__ import annotations

from typing import Any, Protocol

from projector.compile.documents.base import Edits, Verbatim, splice
from projector.compile.documents.jsonc import JsonDocument
from projector.compile.documents.namedlist import NamedLists
from projector.compile.documents.toml import TomlDocument
from projector.compile.documents.yaml import YamlDocument
from projector.core.errors import DocumentError, Problem


class Document(Protocol):
    """A parsed client file. ``text`` is what was read; edits return new text."""

    text: str

    def servers(self, key: tuple[str, ...]) -> dict[str, Any] | None:
        """The entries under ``key`` by name; None when ``key`` is absent."""

    def edited(self, key: tuple[str, ...], edits: Edits) -> str:
        """The text with entries under ``key`` set (value) or removed (None), nothing else changed."""

    def edit(self, key: tuple[str, ...], edits: Edits) -> Document:
        """``edited``'s text as a document (the one its check parsed: no parse again)."""

    def key_is_empty(self, key: tuple[str, ...]) -> bool:
        """Whether ``key`` exists and holds no entries."""

    def source_of(self, key: tuple[str, ...], name: str) -> str | None:
        """Entry ``name``'s text under ``key`` as the file spells it, what an edit with
        ``Verbatim(value, text)`` puts back byte for byte (None: absent, or not one span)."""

    def without_key(self, key: tuple[str, ...]) -> str:
        """The text with ``key`` itself removed."""


FORMATS: dict[str, type] = {"json": JsonDocument, "json-comments": JsonDocument, "jsonc": JsonDocument, "toml": TomlDocument, "yaml": YamlDocument}
# How strictly a JSON file is read: json = no comments, no trailing commas; json-comments = //
# and /* */ comments but no trailing commas (strip-json-comments, then JSON.parse); jsonc = both.
STRICTNESS = {"json": "json", "json-comments": "comments"}


def parse(format: str, text: str, source: str) -> Document:
    """Parse ``text`` (shown as ``source`` in errors); raises DocumentError with line and column.
    A servers key that ends in ``[FIELD]`` reads and edits a list of named tables (namedlist.py).
    Each format names the place where a file nests too deeply for it; a parser that gives up on
    depth without saying where still makes this file's error, never a crash of the sync."""
    try:
        return NamedLists(FORMATS[format](text, source=source, strict=STRICTNESS.get(format, "")))
    except RecursionError:
        raise DocumentError(Problem(source, None, None, "nested too deeply for projector to read; left untouched")) from None


__all__ = ["Document", "Edits", "FORMATS", "Verbatim", "parse", "splice"]
