"""What `wp.static(expr)` sees of a kernel's local variables while it is being compiled.

Besides globals and the closure, a static expression sees, as in Warp: the index of a loop that
is unrolled because a static expression reads it (`for i in range(3): f = wp.static(fs[i])`),
names assigned once from a constant (`n = 3`), and the shape of other local values: a vector's or
tuple's `len()` (a tile's: its first dimension), a value's `dtype` and `length`.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any

from ..builtins import lang
from ..builtins.values import ArrayVal, Composite, KernelValue, Literal, TileVal, TupleVal, type_of
from ..types import MatrixType, TileType, VectorType
from .source import SourceInfo, parse_function


class StaticView:
    """A kernel value as a static expression sees it: its type and shape, not its value."""

    def __init__(self, value: Any) -> None:
        self.type = type_of(value)

    def __len__(self) -> int:
        t = self.type
        if isinstance(t, VectorType):
            return t.length
        if isinstance(t, MatrixType):
            return t.rows
        if isinstance(t, TileType):  # Warp: a tile's first dimension
            return t.shape[0]
        raise TypeError(f"a {t!r} value has no len() at compile time")

    @property
    def dtype(self) -> Any:
        return self.type.dtype

    @property
    def length(self) -> int:
        return len(self)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.type.shape)

    def __repr__(self) -> str:
        return f"<{self.type!r} value>"


def _view(value: Any) -> Any:
    if isinstance(value, Literal):
        return value.value
    if isinstance(value, TupleVal):
        return tuple(_view(v) for v in value.items)
    if isinstance(value, ArrayVal):
        return value.type
    return StaticView(value)


def static_locals(env: dict[str, Any], constants: dict[str, Any]) -> dict[str, Any]:
    """The local names a static expression may read: constants by value, others by shape."""
    out: dict[str, Any] = {}
    for name, value in env.items():
        if name.startswith("$") or not isinstance(value, KernelValue):
            continue
        if name in constants:
            out[name] = constants[name]
        elif isinstance(value, (Literal, TupleVal, Composite, ArrayVal, TileVal)):
            out[name] = _view(value)
    return out


def constant_names(tree: ast.FunctionDef, statics: dict[int, Any] | None = None
                   ) -> dict[str, Any]:
    """Names a function assigns exactly once, from a number (`n = 3`, `eps = -1e-6`) or from a
    `wp.static(...)` evaluated when it was declared (`statics`: by the call's node id), as
    Warp's static expressions see them (`TILE = wp.static(n)`, then `wp.static(f(TILE))`)."""
    statics = statics or {}
    counts: dict[str, int] = {}
    values: dict[str, Any] = {}
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = [node.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    counts[n.id] = counts.get(n.id, 0) + 1
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            number = _number(node.value)
            if number is not None:
                values[node.targets[0].id] = number
            elif id(node.value) in statics:
                values[node.targets[0].id] = statics[id(node.value)]
    return {n: v for n, v in values.items() if counts.get(n) == 1}


def literal_names(tree: ast.FunctionDef, is_type: Callable[[ast.expr], bool]) -> set[str]:
    """Names a function binds exactly once, by a plain `name = ...` statement of its top level
    (never reassigned, augmented, used as a loop target or passed to a call other than a type's,
    which may rebind an output argument): when that value is a number literal, the name stays
    an untyped constant, as a Warp constant variable does (`x = 0.1; wp.float64(x)` is exactly
    0.1). is_type(func) tells whether a call's target is a type (a cast or constructor)."""
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and not is_type(node.func):
            targets = [a for a in node.args if isinstance(a, ast.Name)]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    counts[n.id] = counts.get(n.id, 0) + 1
    top = {s.targets[0].id for s in tree.body if isinstance(s, ast.Assign)
           and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)}
    params = {a.arg for a in tree.args.args}
    return {n for n in top if counts.get(n) == 1 and n not in params}


def _number(node: ast.expr) -> Any:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and \
            not isinstance(node.value, bool):
        return node.value
    return None


def reads_in_static(body: list[ast.stmt], name: str) -> bool:
    """Whether a `wp.static(...)` expression in the statements reads `name`."""
    for node in (n for s in body for n in ast.walk(s)):
        if isinstance(node, ast.Call) and is_static_call(node.func) and any(
                isinstance(n, ast.Name) and n.id == name for a in node.args for n in ast.walk(a)):
            return True
    return False


def is_static_call(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "static") or \
        (isinstance(func, ast.Name) and func.id == "static")


def parse_declared(pyfunc: Any, transformers: Any = ()) -> SourceInfo:
    """pyfunc's parsed source with its static expressions resolved as at declaration."""
    info = parse_function(pyfunc, transformers)
    resolve_declared(info)
    return info


def resolve_declared(info: SourceInfo) -> None:
    """Evaluate, now, the `wp.static(...)` calls that read no index of a loop around them, as
    Warp does when a function is declared (into info.statics; an expression that fails now,
    e.g. on a local name, is evaluated while compiling instead). A static nested in another
    is evaluated once, as part of the outer one."""
    if not _may_call_static(info):
        return
    namespace = {**info.pyfunc.__globals__, **info.closure}

    def visit(node: ast.AST, loop_vars: frozenset[str]) -> None:
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            loop_vars = loop_vars | {node.target.id}
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and \
                _resolves_to_static(node.func, namespace):
            arg = node.args[0]
            if not any(isinstance(n, ast.Name) and n.id in loop_vars for n in ast.walk(arg)):
                try:
                    code = compile(ast.Expression(arg), info.file, "eval")
                    info.statics[id(node)] = eval(code, namespace)
                    return
                except Exception:  # evaluated again, with the locals, when compiling
                    pass
        for child in ast.iter_child_nodes(node):
            visit(child, loop_vars)

    for stmt in info.tree.body:
        visit(stmt, frozenset())


def _may_call_static(info: SourceInfo) -> bool:
    """Whether the code can name `wp.static`: its text says `static`, or a free name (or a
    `name.attr` of one) is `wp.static` under another name. Most functions do neither, and the
    walk below is most of a declaration's cost (newton declares ~1,000 functions at import)."""
    if "static" in info.text:
        return True
    refs = info.refs()
    if any(info.resolve(name)[1] is lang.STATIC for name in refs.names):
        return True
    # without calling a module's __getattr__ (gradloom's own would load subsystems)
    return any(inspect.getattr_static(info.resolve(base)[1], attr, None) is lang.STATIC
               for base, attr in refs.attributes)


def _resolves_to_static(func: ast.expr, namespace: dict[str, Any]) -> bool:
    """Whether a call's target is `wp.static` (a name or an attribute chain from a global)."""
    parts: list[str] = []
    node: ast.expr = func
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in namespace:
        return False
    obj = namespace[node.id]
    for attr in reversed(parts):
        obj = getattr(obj, attr, None)
    return obj is lang.STATIC
