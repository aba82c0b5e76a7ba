"""User source: parsing, locations in the user's file, name resolution and content hashes."""

from __future__ import annotations

import ast
import builtins
import copy
import hashlib
import inspect
import linecache
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


@dataclass(frozen=True)
class NameRefs:
    """What a function's code names: `names` are the free names it loads (first-seen order),
    `attributes` the `name.attr` pairs (walk order, repeats kept)."""

    names: tuple[str, ...]
    attributes: tuple[tuple[str, str], ...]


def _scan_refs(tree: ast.AST) -> NameRefs:
    # depth-first with an explicit stack: ast.walk's generators cost twice as much, and this
    # scan runs for every function a program declares
    seen: dict[str, None] = {}
    attributes = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                seen.setdefault(node.id, None)
            continue
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            attributes.append((node.value.id, node.attr))
        for name in reversed(node._fields):
            value = getattr(node, name, None)
            if isinstance(value, list):
                stack.extend(v for v in reversed(value) if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)
    return NameRefs(tuple(seen), tuple(attributes))


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
    #: the names the tree refers to, scanned once (a declaration's hash, its references and
    #: its callees all ask; newton's import asked ~3 times per function)
    _refs: NameRefs | None = field(default=None, init=False, repr=False, compare=False)

    def refs(self) -> NameRefs:
        """The free names and `name.attr` pairs of the function's code (the tree is never
        changed after parsing: rewrites work on copies)."""
        if self._refs is None:
            self._refs = _scan_refs(self.tree)
        return self._refs

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
    lines, first, file, guessed = _read_source(pyfunc, exact=False)
    try:
        text, tree = _parse_block(lines)
    except SyntaxError:
        if not guessed:
            raise
        lines, first, file, _ = _read_source(pyfunc, exact=True)
        text, tree = _parse_block(lines)
    indent = len(lines[0]) - len(lines[0].lstrip())
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


def _read_source(pyfunc: Any, exact: bool) -> tuple[list[str], int, str, bool]:
    try:
        if exact:
            lines, first = inspect.getsourcelines(pyfunc)
            return lines, first, inspect.getsourcefile(pyfunc) or "<unknown>", False
        return _source_lines(pyfunc)
    except (OSError, TypeError) as exc:
        raise UnsupportedSyntaxError(
            f"cannot read the source of {pyfunc.__name__!r}: kernels must be defined in a file"
        ) from exc


def _parse_block(lines: list[str]) -> tuple[str, ast.Module]:
    text = textwrap.dedent("".join(lines))
    return text, ast.parse(text)


def _source_lines(pyfunc: Any) -> tuple[list[str], int, str, bool]:
    """pyfunc's lines (decorators included), its first line, its file, and whether the lines
    are a guess by indentation (`_guess_block`; the caller parses them and asks again with
    `exact=True` on a syntax error). inspect.getsourcelines tokenizes the rest of the file for
    every function: a third of newton's import."""
    target = inspect.unwrap(pyfunc)  # as inspect does: a functools.wraps wrapper's source
    file = inspect.getsourcefile(target)
    code = getattr(target, "__code__", None)
    if file and code is not None:
        linecache.checkcache(file)
        lines = linecache.getlines(file, getattr(target, "__globals__", None))
        block = _guess_block(lines, code.co_firstlineno - 1)
        if block:
            return block, code.co_firstlineno, file, True
    lines, first = inspect.getsourcelines(pyfunc)
    return lines, first, file or "<unknown>", False


def _guess_block(lines: list[str], start: int) -> list[str] | None:
    """The `def` (with its decorators) starting at lines[start], ended by the first statement
    line indented no deeper than it. A cut inside a statement (a string or bracket running on
    at the left margin) leaves text that does not parse, which the caller detects."""
    if start >= len(lines):
        return None
    head = lines[start].lstrip()
    if not head.startswith(("def ", "@", "async def ")):
        return None  # a lambda, or lines that moved: inspect's way
    base = len(lines[start]) - len(head)
    seen_def = False
    last = start
    for i in range(start, len(lines)):
        stripped = lines[i].strip()
        if not stripped or stripped.startswith("#"):
            continue
        at_margin = len(lines[i]) - len(lines[i].lstrip()) <= base
        if at_margin and seen_def and not stripped.startswith((")", "]", "}")):
            break
        seen_def = seen_def or stripped.startswith(("def ", "async def "))
        last = i
    return lines[start:last + 1]


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
    for name in info.refs().names:
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
    for base, name in info.refs().attributes:
        found, holder = info.resolve(base)
        if found and _user_namespace(holder):
            attr = getattr(holder, name, None)
            parts.append(f"{base}.{name}={fingerprint_value(attr, visiting)}")
    return ";".join(parts)


def _user_namespace(value: Any) -> bool:
    if inspect.ismodule(value):
        return not value.__name__.startswith("gradloom")
    return isinstance(value, type) and \
        not str(getattr(value, "__module__", "")).startswith(("gradloom", "builtins", "numpy"))
