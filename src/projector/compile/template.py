"""Entry templates run without jinja2: each template is compiled once (when its descriptor is)
into a small program of plain lists, which a sync runs.

A descriptor's templates are small jinja2 templates that write JSON (clients/*.yaml). What they
do keeps to a handful of forms: text, values written with the ``json`` filter, strings joined
with ``~``, lists added with ``+`` or written out (``[command] + args``), the descriptor's
``env_ref(name)`` and ``env_refs(names)``, and ``if`` on whether an input is there (with
``not``, ``and``, ``or``, ``elif``, ``else``). ``compile`` reads a template with jinja2's own
parser (so whitespace control and every other rule of its syntax are jinja2's) and, when every
node keeps to these forms, turns the tree into a program; ``run`` evaluates it with the same
Python operations jinja2's generated code performs for them (``str`` for ``~``, ``+``,
truthiness, ``json.dumps`` with ``ensure_ascii=False``), so the text is jinja2's byte for byte.
A template that does anything else (another filter, a test, an index, a loop, a name it is not
given) gets no program and is rendered by jinja2 at every sync. tests/compile/test_template.py
holds the two to the same text for every descriptor and many values.

Program (JSON: a descriptor's programs are kept in the compiled-descriptor cache):
    statement := ["text", str] | ["write", expr] | ["if", [[test, [statement...]]...], [statement...]]
    expr      := ["const", value] | ["var", name] | ["join", [expr...]] | ["add", expr, expr]
               | ["list", [expr...]] | ["call", "env_ref" | "env_refs", expr]
    test      := ["var", name] | ["not", test] | ["and", test, test] | ["or", test, test]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

FUNCTIONS = ("env_ref", "env_refs")
# What each transport's template is given (besides the descriptor's functions).
VARIABLES = {
    "stdio": ("command", "args", "pass_env", "name"),
    "http": ("url", "token_env", "name"),
    "hook": ("command",),  # a dispatcher group (compile/hooks)
}

Program = list[Any]


def run(program: Program, values: Mapping[str, Any], functions: Mapping[str, Callable[[Any], Any]]) -> str:
    """The text the template renders for ``values``."""
    out: list[str] = []
    _statements(program, values, functions, out)
    return "".join(out)


def _statements(statements: list[Any], values: Mapping[str, Any], functions: Mapping[str, Callable], out: list[str]) -> None:
    for statement in statements:
        kind = statement[0]
        if kind == "text":
            out.append(statement[1])
        elif kind == "write":
            out.append(json.dumps(_value(statement[1], values, functions), ensure_ascii=False))
        else:  # if
            branches, otherwise = statement[1], statement[2]
            chosen = next((body for test, body in branches if _true(test, values)), otherwise)
            _statements(chosen, values, functions, out)


def _value(expr: list[Any], values: Mapping[str, Any], functions: Mapping[str, Callable]) -> Any:
    kind = expr[0]
    if kind == "const":
        return expr[1]
    if kind == "var":
        return values[expr[1]]
    if kind == "join":
        return "".join(str(_value(e, values, functions)) for e in expr[1])
    if kind == "add":
        return _value(expr[1], values, functions) + _value(expr[2], values, functions)
    if kind == "list":
        return [_value(e, values, functions) for e in expr[1]]
    return functions[expr[1]](_value(expr[2], values, functions))  # call


def _true(test: list[Any], values: Mapping[str, Any]) -> bool:
    kind = test[0]
    if kind == "not":
        return not _true(test[1], values)
    if kind == "and":
        return _true(test[1], values) and _true(test[2], values)
    if kind == "or":
        return _true(test[1], values) or _true(test[2], values)
    return bool(values[test[1]])


# --------------------------------------------------------------------------- compiling (jinja2's parser)


def compile(source: str, transport: str) -> Program | None:
    """The template's program, or None when it does more than the forms above."""
    import jinja2

    try:
        tree = jinja2.Environment().parse(source)
    except jinja2.TemplateSyntaxError:
        return None
    try:
        return _Compiler(VARIABLES[transport]).statements(tree.body)
    except _NotAForm:
        return None


class _NotAForm(Exception):
    pass


class _Compiler:
    def __init__(self, variables: tuple[str, ...]):
        from jinja2 import nodes

        self.nodes = nodes
        self.variables = variables

    def statements(self, body: list[Any]) -> list[Any]:
        nodes, program = self.nodes, []
        for statement in body:
            if isinstance(statement, nodes.Output):
                program += [["text", n.data] if isinstance(n, nodes.TemplateData) else ["write", self.written(n)] for n in statement.nodes]
            elif isinstance(statement, nodes.If):
                branches = [[self.test(statement.test), self.statements(statement.body)]]
                branches += [[self.test(e.test), self.statements(e.body)] for e in statement.elif_]
                program.append(["if", branches, self.statements(statement.else_)])
            else:
                raise _NotAForm
        return program

    def written(self, node: Any) -> list[Any]:
        """``{{ expr | json }}``: the expression."""
        nodes = self.nodes
        plain = not (node.args or node.kwargs or node.dyn_args or node.dyn_kwargs) if isinstance(node, nodes.Filter) else False
        if not (plain and node.name == "json" and node.node is not None):
            raise _NotAForm
        return self.expr(node.node)

    def expr(self, node: Any) -> list[Any]:
        nodes = self.nodes
        if isinstance(node, nodes.Const):
            return ["const", node.value]
        if isinstance(node, nodes.Name) and node.ctx == "load" and node.name in self.variables:
            return ["var", node.name]
        if isinstance(node, nodes.Concat):
            return ["join", [self.expr(n) for n in node.nodes]]
        if isinstance(node, nodes.Add):
            return ["add", self.expr(node.left), self.expr(node.right)]
        if isinstance(node, nodes.List):
            return ["list", [self.expr(n) for n in node.items]]
        plain = isinstance(node, nodes.Call) and not (node.kwargs or node.dyn_args or node.dyn_kwargs) and len(node.args) == 1
        if plain and isinstance(node.node, nodes.Name) and node.node.name in FUNCTIONS:
            return ["call", node.node.name, self.expr(node.args[0])]
        raise _NotAForm

    def test(self, node: Any) -> list[Any]:
        nodes = self.nodes
        if isinstance(node, nodes.Not):
            return ["not", self.test(node.node)]
        if isinstance(node, (nodes.And, nodes.Or)):
            return ["and" if isinstance(node, nodes.And) else "or", self.test(node.left), self.test(node.right)]
        if isinstance(node, nodes.Name) and node.ctx == "load" and node.name in self.variables:
            return ["var", node.name]
        raise _NotAForm
