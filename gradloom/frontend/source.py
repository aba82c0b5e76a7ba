"""User source: parsing, locations in the user's file, name resolution and content hashes."""

from __future__ import annotations

import ast
import builtins
import copy
import hashlib
import inspect
import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..builtins.registry import Builtin
from ..errors import SourceLoc, UnsupportedSyntaxError
from ..types import (
    ArrayType,
    FabricArrayType,
    FixedArrayType,
    IndexedArrayType,
    MatrixType,
    ScalarType,
    StackType,
    StructType,
    TileType,
    VectorType,
)

#: kernel-language type objects: a captured one (`vec_type(1.0)` in a factory's kernel) is
#: fingerprinted by what it is (vec2f and vec3f are one class)
_TYPE_OBJECTS = (ScalarType, VectorType, MatrixType, ArrayType, IndexedArrayType,
                 FabricArrayType, FixedArrayType, TileType, StackType)


class Closure(Mapping[str, Any]):
    """A function's closure variables, read when looked up (as Python and Warp resolve them):
    a kernel may use a name its enclosing function assigns only after the definition. An empty
    cell is no entry."""

    def __init__(self, cells: dict[str, Any]) -> None:
        self._cells = cells

    def __getitem__(self, name: str) -> Any:
        try:
            return self._cells[name].cell_contents
        except ValueError:  # not assigned (yet)
            raise KeyError(name) from None

    def __iter__(self) -> Iterator[str]:
        return (n for n in self._cells if n in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, name: object) -> bool:
        cell = self._cells.get(name) if isinstance(name, str) else None
        try:
            return cell is not None and (cell.cell_contents, True)[1]
        except ValueError:
            return False


@dataclass
class SourceInfo:
    """A Python function's parsed source and the namespaces its names resolve in."""

    pyfunc: Any
    tree: ast.FunctionDef
    file: str
    first_line: int
    col_offset: int
    text: str
    closure: Mapping[str, Any] = field(default_factory=dict)
    #: the `wp.static(...)` calls evaluated when the function was declared (id of the call
    #: node: its value), as Warp does; the others are evaluated while compiling (static.py)
    statics: dict[int, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.pyfunc.__name__)

    def loc(self, node: ast.AST) -> SourceLoc:
        line = getattr(node, "lineno", 1) + self.first_line - 1
        col = getattr(node, "col_offset", 0) + self.col_offset
        return SourceLoc(self.file, line, col, self.name)

    def resolve(self, name: str) -> tuple[bool, Any]:
        """Look a free name up as Python would: closure, module globals, builtins."""
        if name in self.closure:
            return True, self.closure[name]
        globs = self.pyfunc.__globals__
        if name in globs:
            return True, globs[name]
        if hasattr(builtins, name):
            return True, getattr(builtins, name)
        return False, None


def parse_function(pyfunc: Any, transformers: Any = ()) -> SourceInfo:
    """pyfunc's source, parsed (then rewritten by Warp-style `code_transformers`: ast
    NodeTransformers applied to its definition)."""
    try:
        lines, first = inspect.getsourcelines(pyfunc)
        file = inspect.getsourcefile(pyfunc) or "<unknown>"
    except (OSError, TypeError) as exc:
        raise UnsupportedSyntaxError(
            f"cannot read the source of {pyfunc.__name__!r}: kernels must be defined in a file"
        ) from exc
    raw = "".join(lines)
    text = textwrap.dedent(raw)
    indent = len(lines[0]) - len(lines[0].lstrip())
    tree = ast.parse(text)
    for transformer in transformers or ():
        tree.body[0] = ast.fix_missing_locations(transformer.visit(tree.body[0]))
    if transformers:
        _unshare(tree.body[0])
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        what = ("an 'async def' function" if isinstance(fdef, ast.AsyncFunctionDef)
                else "not a plain function definition")
        loc = SourceLoc(file, first + getattr(fdef, "lineno", 1) - 1,
                        indent + getattr(fdef, "col_offset", 0), pyfunc.__name__)
        raise UnsupportedSyntaxError(f"{pyfunc.__name__!r} is {what}; kernels and funcs are "
                                     "plain 'def' functions", loc)
    closure = Closure(dict(zip(pyfunc.__code__.co_freevars, pyfunc.__closure__ or (),
                               strict=True)))
    if transformers:  # the rewritten code is what compiles: hash it too
        text += "\n# transformed:\n" + ast.dump(fdef)
    return SourceInfo(pyfunc, fdef, file, first, indent, text, closure)


def _unshare(tree: ast.AST) -> None:
    """Copy every node a transformer placed at more than one spot, so that each occurrence is
    its own node (a `wp.static` call reused twice is evaluated for each occurrence)."""
    seen: set[int] = set()

    def fresh(child: ast.AST) -> ast.AST:
        if id(child) in seen:
            child = copy.deepcopy(child)
        visit(child)
        return child

    def visit(node: ast.AST) -> None:
        seen.add(id(node))
        for name, value in ast.iter_fields(node):
            if isinstance(value, list):
                value[:] = [fresh(c) if isinstance(c, ast.AST) else c for c in value]
            elif isinstance(value, ast.AST):
                setattr(node, name, fresh(value))

    visit(tree)


def referenced_names(tree: ast.AST) -> list[str]:
    """Free names a function body refers to, in first-seen order."""
    seen: dict[str, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            seen.setdefault(node.id, None)
    return list(seen)


def fingerprint_value(value: Any, visiting: set[int]) -> str:
    """A stable text for a captured value that changes whenever its meaning to a kernel does."""
    if hasattr(type(value), "__gl_struct__") and not isinstance(value, type):  # an instance
        fields = ",".join(f"{n}={fingerprint_value(getattr(value, n), visiting)}"
                          for n, _ in type(value).__gl_type__.fields)
        return f"{type(value).__gl_fingerprint__(visiting)}({fields})"
    if isinstance(value, Builtin):
        return f"builtin:{value.name}"
    if isinstance(value, _TYPE_OBJECTS):
        return f"type:{type(value).__name__}:{value!r}"
    if isinstance(value, StructType):
        fields = ",".join(f"{n}:{fingerprint_value(t, visiting)}" for n, t in value.fields)
        return f"struct:{value.name}({fields})"
    annotation = getattr(value, "_annotation_key", None)  # `wp.array(dtype=...)` written as a value
    if callable(annotation) and not isinstance(value, type) and annotation() is not None:
        return f"annotation:{annotation()!r}"
    fp = getattr(value, "__gl_fingerprint__", None)
    if isinstance(value, type) and not hasattr(value, "__gl_struct__"):
        fp = None  # a class whose instances have fingerprints (wp.Function in an annotation)
    if fp is not None:
        return str(fp(visiting))
    if isinstance(value, (bool, int, float, complex, str, bytes, type(None))):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, type):  # a class (np.float32 has `dtype` and `tobytes` too)
        return f"class:{value.__module__}.{value.__qualname__}"
    if hasattr(value, "dtype") and hasattr(value, "tobytes"):
        digest = hashlib.sha256(value.tobytes()).hexdigest()
        return f"np:{value.dtype}:{getattr(value, 'shape', ())}:{digest}"
    if inspect.ismodule(value):
        return f"module:{value.__name__}"
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(fingerprint_value(v, visiting) for v in value) + ")"
    if isinstance(value, dict):  # `table[wp.static(key)]`
        return "{" + ",".join(f"{k!r}:{fingerprint_value(v, visiting)}"
                              for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))) + "}"
    return f"obj:{type(value).__module__}.{type(value).__qualname__}"


def source_digest(info: SourceInfo, visiting: set[int]) -> str:
    """Hash of a function's text and everything its free names resolve to."""
    h = hashlib.sha256(info.text.encode())
    if id(info.pyfunc) in visiting:
        return "recursive:" + info.name
    visiting = visiting | {id(info.pyfunc)}
    for name in referenced_names(info.tree):
        found, value = info.resolve(name)
        if found and inspect.ismodule(value):
            h.update(f"{name}=module:{value.__name__};".encode())
            continue
        if found and not inspect.isbuiltin(value) and value is not getattr(builtins, name, None):
            h.update(f"{name}={fingerprint_value(value, visiting)};".encode())
    h.update(_module_attr_digest(info, visiting).encode())
    for value in info.statics.values():  # values `wp.static` gave at declaration
        h.update(f"static={fingerprint_value(value, visiting)};".encode())
    returns = getattr(info.pyfunc, "__annotations__", {}).get("return")  # evaluated at def
    h.update(f"returns={fingerprint_value(returns, visiting)};".encode())
    return h.hexdigest()


def _module_attr_digest(info: SourceInfo, visiting: set[int]) -> str:
    """Values reached as attributes of a user's module or class (`cfg.SCALE`, `helpers.f(x)`,
    `Params.LIMIT`: a struct class's constants) also change the hash (a class's own
    fingerprint is its name, or a struct's fields)."""
    parts = []
    for node in ast.walk(info.tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            found, holder = info.resolve(node.value.id)
            if found and _user_namespace(holder):
                attr = getattr(holder, node.attr, None)
                parts.append(f"{node.value.id}.{node.attr}={fingerprint_value(attr, visiting)}")
    return ";".join(parts)


def _user_namespace(value: Any) -> bool:
    if inspect.ismodule(value):
        return not value.__name__.startswith("gradloom")
    return isinstance(value, type) and \
        not str(getattr(value, "__module__", "")).startswith(("gradloom", "builtins", "numpy"))
