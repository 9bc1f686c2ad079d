"""`projector edit`: the model in $VISUAL or $EDITOR, checked before it is saved.

As `visudo` and `crontab -e` do, the editor works on a copy; the model is replaced (compare and
swap) only by a copy that passes every check a sync makes. A copy with mistakes is shown with
them and offered to the editor again; if that is declined the copy stays where it is and its
path is printed, so no keystroke is lost.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from projector.commands.common import err
from projector.commands.init import starter_text
from projector.compile import clients as client_registry
from projector.core import files, model
from projector.core.errors import ProjectorError, display_path


def run(config: str | None) -> int:
    path = model.model_path(config, os.environ)
    shown = display_path(path)
    try:
        original: str | None = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        original = None
    copy = Path(tempfile.mkdtemp(prefix="projector-edit-")) / path.name
    copy.write_text(original if original is not None else starter_text(), encoding="utf-8")
    editor = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
    known = tuple(client_registry.registry())
    while True:
        code = subprocess.run([*editor, str(copy)], check=False).returncode
        if code != 0:
            err(f"error: the editor ({editor[0]}) exited with status {code}; {shown} was not changed (your copy: {copy})")
            return 1
        text = copy.read_text(encoding="utf-8")
        try:
            model.checked_text(text, path, os.environ, known)
            break
        except ProjectorError as error:
            err(f"error: {error}")
            if not _again():
                err(f"{shown} was not changed; your edit is kept in {copy}")
                return 1
    return _save(path, shown, original, text, copy)


def _again() -> bool:
    err("edit again? [Y/n] ", end="")
    try:
        answer = input()
    except EOFError:
        err("")
        return False
    return answer.strip().lower() in ("", "y", "yes")


def _save(path: Path, shown: str, original: str | None, text: str, copy: Path) -> int:
    if text == original:
        print(f"{shown}: no change")
    else:
        try:
            files.write_text(path, text, expected=original)
        except files.ChangedMeanwhile:
            err(f"error: {shown} changed while you edited it; it was not replaced (your edit: {copy})")
            return 1
        print(f"{'updated' if original is not None else 'wrote'} {shown}: run `projector sync` to apply it "
              "(the shell hook does it at the next prompt)")
    copy.unlink()
    copy.parent.rmdir()
    return 0
