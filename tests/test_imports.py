"""The shape of the house, read from the code: every import in src/projector (at module level,
under TYPE_CHECKING and inside functions alike), resolved to the module it loads.

- No circle: a module never reaches itself through the modules it imports.
- ``core/`` imports neither wing (``compile/``, ``runtime/``) nor what stands on them; the wings
  never import each other; nothing in ``compile/``, ``runtime/``, ``core/``, ``oauth/`` or
  ``commands/`` imports the entry points (``entry``, ``cli``, ``direct``, ``fastpath``): they
  call down, never the other way.
- ``oauth/`` (the sign-in, on the MCP SDK) is a leaf above ``core/`` for ``commands/`` only: it
  imports neither wing nor the commands, and neither wing imports it (a bridge signs in by
  running `projector login`, and never pays for the SDK).
- No private name (``_name``) crosses a file: neither ``from m import _name`` nor ``m._name``
  on a module imported from another file.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "projector"
ENTRY_POINTS = {"projector.entry", "projector.cli", "projector.direct", "projector.fastpath"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


class Imports:
    """What one module imports: the project's modules it loads, and the private names it takes
    from another file (``(line, module, name)``)."""

    def __init__(self, name: str, source: str, is_package: bool = False):
        self.name = name
        self.package = name if is_package else name.rpartition(".")[0]
        self.tree = ast.parse(source)
        self.targets: dict[str, int] = {}  # module -> the first line that imports it
        self.private: list[tuple[int, str, str]] = []
        bound: dict[str, str] = {}  # a local name -> the project module it stands for
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in MODULES:
                        self._add(alias.name, node.lineno)
                        bound[alias.asname or alias.name] = alias.name
            elif isinstance(node, ast.ImportFrom):
                base = self._absolute(node)
                if base is None:
                    continue
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    if submodule in MODULES:  # from projector.core import model
                        self._add(submodule, node.lineno)
                        bound[alias.asname or alias.name] = submodule
                    else:
                        self._add(base, node.lineno)
                        if _private(alias.name) and base != name:
                            self.private.append((node.lineno, base, alias.name))
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _private(node.attr):
                module = bound.get(node.value.id)
                if module is not None and module != name and f"{module}.{node.attr}" not in MODULES:
                    self.private.append((node.lineno, module, node.attr))

    def _absolute(self, node: ast.ImportFrom) -> str | None:
        if node.level:
            base = self.package.split(".")
            base = base[: len(base) - node.level + 1]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        return module if module in MODULES else None

    def _add(self, module: str, line: int) -> None:
        if module != self.name:
            self.targets.setdefault(module, line)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


GRAPH = {name: Imports(name, path.read_text(encoding="utf-8"), path.name == "__init__.py") for name, path in MODULES.items()}


def where(module: str, target: str) -> str:
    return f"{MODULES[module].relative_to(PACKAGE.parent)}:{GRAPH[module].targets[target]} imports {target}"


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one module (Tarjan), each in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def in_part(module: str, part: str) -> bool:
    return module == f"projector.{part}" or module.startswith(f"projector.{part}.")


def test_the_reader_sees_imports_at_every_level():
    """The reader itself: imports inside functions, under TYPE_CHECKING and relative ones count."""
    source = ("from __future__ import annotations\nTYPE_CHECKING = False\nif TYPE_CHECKING:\n    from projector.core import errors\n"
              "def f():\n    from projector.core.cache import stat_key\n    from . import digest\n    import projector.core.files\n"
              "    from projector.core.locations import _hidden\n    return digest._sha\n")
    imports = Imports("projector.core.reading", source)
    assert set(imports.targets) == {"projector.core.errors", "projector.core.cache", "projector.core.digest", "projector.core.files",
                                    "projector.core.locations"}
    assert sorted((m, n) for _, m, n in imports.private) == [("projector.core.digest", "_sha"), ("projector.core.locations", "_hidden")]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_itself_through_others():
    graph = {name: set(imports.targets) for name, imports in GRAPH.items()}
    found = circles(graph)
    ties = ["\n".join(where(a, b) for a in part for b in sorted(graph[a]) if b in part) for part in found]
    assert not found, "circles in the import graph:\n\n" + "\n\n".join(ties)


@pytest.mark.parametrize("part", ["core", "compile", "runtime", "oauth", "commands"])
def test_the_lower_floors_never_import_the_entry_points(part):
    wrong = [where(name, target) for name, imports in GRAPH.items() if in_part(name, part)
             for target in imports.targets if target in ENTRY_POINTS]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(("part", "above"), [("core", ("compile", "runtime", "oauth", "commands")),
                                             ("compile", ("runtime", "oauth", "commands")), ("runtime", ("compile", "oauth", "commands")),
                                             ("oauth", ("compile", "runtime", "commands"))])
def test_a_floor_never_imports_a_wing_beside_or_above_it(part, above):
    wrong = [where(name, target) for name, imports in GRAPH.items() if in_part(name, part)
             for target in imports.targets if any(in_part(target, other) for other in above)]
    assert not wrong, "\n".join(wrong)


def test_no_private_name_crosses_a_file():
    wrong = [f"{MODULES[name].relative_to(PACKAGE.parent)}:{line} takes {name_} from {module}"
             for name, imports in GRAPH.items() for line, module, name_ in imports.private]
    assert not wrong, "\n".join(wrong)
