"""Environment variables in the model's text: folder paths and ``env`` values.

Two spellings, each with one meaning everywhere:
- a folder (a binding, a descriptor's folder): ``~`` and ``$VAR``/``${VAR}``; an unset or empty
  variable makes the folder unknown;
- an ``env`` value: ``${VAR}`` and ``${VAR:-default}``, python-dotenv's own rules, expanded when a
  server starts against the environment built so far.
Only ``os`` and ``re`` are imported here: the bridge and the fast path use this module.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from projector.core.locations import home_text

_FOLDER_VARIABLE = re.compile(r"\$(\w+)|\$\{(\w+)\}")


def expand_folder(raw: str, environ: Mapping[str, str]) -> str:
    """``~`` and ``$VAR``/``${VAR}`` expanded, normalised when absolute; KeyError names an unset
    (or empty) variable."""

    def variable(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if not environ.get(name):
            raise KeyError(name)
        return environ[name]

    text = _FOLDER_VARIABLE.sub(variable, raw)
    if text == "~" or text.startswith("~/"):
        text = home_text(environ) + text[1:]
    return os.path.normpath(text) if text.startswith("/") else text


def folder_or_none(raw: str, environ: Mapping[str, str]) -> str | None:
    """``expand_folder``, or None when a variable it names is unset."""
    try:
        return expand_folder(raw, environ)
    except KeyError:
        return None


def expand_value(value: str, environ: Mapping[str, str]) -> str:
    """An ``env`` value with ``${VAR}`` and ``${VAR:-default}`` expanded against ``environ``."""
    if "${" not in value:
        return value  # nothing to expand: spare a start the import of python-dotenv
    from dotenv.variables import parse_variables

    return "".join(atom.resolve(environ) for atom in parse_variables(value))


def references(values: Iterable[str]) -> tuple[str, ...]:
    """The variables ``${VAR}`` references in ``values`` name, in order: what a client must pass on."""
    return tuple(dict.fromkeys(name for name, _ in _references(values)))


def unset_references(values: Iterable[str], environ: Mapping[str, str]) -> tuple[str, ...]:
    """Variables ``values`` refer to without a default that ``environ`` lacks (names, for a warning)."""
    return tuple(dict.fromkeys(name for name, default in _references(values) if default is None and name not in environ))


def _references(values: Iterable[str]) -> list[tuple[str, str | None]]:
    wanted = [value for value in values if "${" in value]
    if not wanted:
        return []
    from dotenv.variables import Variable, parse_variables

    atoms = [atom for value in wanted for atom in parse_variables(value)]
    return [(atom.name, atom.default) for atom in atoms if isinstance(atom, Variable)]


# Variables that change which program runs, or what runs inside it (a library preloaded, a module
# path, interpreter options), whatever the command says: `projector trust` marks them.
CHANGES_WHAT_RUNS = frozenset({
    "PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE",
    "NODE_OPTIONS", "NODE_PATH", "PERL5LIB", "PERL5OPT", "PERLLIB", "RUBYOPT", "RUBYLIB", "GEM_PATH", "GEM_HOME",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "BASH_ENV", "ENV", "ZDOTDIR", "SHELLOPTS",
    "GIT_EXEC_PATH", "GIT_SSH_COMMAND", "GIT_CONFIG_GLOBAL", "LUA_PATH", "LUA_CPATH", "GOFLAGS",
    # where `npx PKG`, `uvx PKG` and pip find the package they run
    "UV_INDEX", "UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS",
    "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS",
})
# macOS's dynamic loader, the rest of glibc's, any npm setting (its registry), git's settings by number
CHANGES_WHAT_RUNS_PREFIXES = ("DYLD_", "LD_", "NPM_CONFIG_", "GIT_CONFIG_")


def changes_what_runs(name: str) -> bool:
    """Whether setting variable ``name`` can change what a command runs (``CHANGES_WHAT_RUNS``;
    npm reads its settings whatever their case)."""
    return name in CHANGES_WHAT_RUNS or name.startswith(CHANGES_WHAT_RUNS_PREFIXES) or name.upper().startswith("NPM_CONFIG_")
