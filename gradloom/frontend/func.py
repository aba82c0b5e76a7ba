"""`@wp.func` (with overloads) and `@wp.func_grad`: user functions that kernels inline per call."""

from __future__ import annotations

import ast
import contextlib
import copy
import functools
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from ..builtins import fixedarray
from ..builtins.host import Call, HostCache, caller_loc, host_call
from ..builtins.values import Ctx, KernelValue, Literal, type_of
from ..errors import CompileError, GradloomError, KernelTypeError, SourceLoc
from ..hooks import Hook
from ..types import ScalarType, resolve_annotation
from .generic import is_generic, matches_template, tuple_template
from .refs import ref_params
from .source import (
    SourceInfo,
    fingerprint_value,
    parse_function,
    source_digest,
)
from .static import parse_declared

#: a lowerer of function bodies into a builder, for calls from Python (frontend/lower.py
#: fills these: the kernel lowerer sits above the functions it inlines)
LOWERER: Hook[Callable[[Any, SourceInfo], Any]] = Hook("the function lowerer",
                                                       "gradloom.frontend.lower")
#: a call's arguments bound to a function's parameters, as lowered values
BIND_ARGUMENTS: Hook[Callable[..., dict[str, Any]]] = Hook("argument binding",
                                                            "gradloom.frontend.lower")
#: the kernel module a function belongs to, from `@wp.func(module=...)`'s value, its key and
#: its Python function (kernel.py fills it: modules are a layer above the frontend)
MODULE_OF: Hook[Callable[[Any, str, Any], Any]] = Hook("Function.module", "gradloom.kernel")

_P = ParamSpec("_P")
_R = TypeVar("_R")


class Overload:
    """One definition of a function: its source, parameter types and optional custom gradient."""

    def __init__(self, pyfunc: Any, key: str) -> None:
        self.pyfunc = pyfunc
        self.key = key
        self.grad: Any = None  # the @wp.func_grad Python function, if any
        self.replay: Any = None  # the @wp.func_replay Python function, if any (never run)
        #: parameter defaults (Warp's `Function.defaults`: a call uses what this holds now)
        self.defaults: dict[str, Any] = _defaults(pyfunc)
        self._info: SourceInfo | None = None
        self._params: list[tuple[str, Any]] | None = None
        with contextlib.suppress(GradloomError, SyntaxError):  # read the source now, as Warp
            self._info = parse_declared(pyfunc)  # does (its file may be gone later)

    @property
    def info(self) -> SourceInfo:
        if self._info is None:
            self._info = parse_declared(self.pyfunc)
        return self._info

    def param_types(self) -> list[tuple[str, Any]]:
        """(name, type) per parameter; typing.Any or no annotation means generic."""
        if self._params is None:
            self._params = annotated_params(self.info)
        return self._params

    def accepts(self, args: list[Any], kwargs: dict[str, Any]) -> int | None:
        """How specific a match the call is (typed params matched), or None if it does not fit."""
        try:
            bound = inspect.signature(self.pyfunc).bind(*args, **kwargs)
        except TypeError:
            return None
        score = 0
        for name, t in self.param_types():
            if t is Any or name not in bound.arguments:
                continue
            fit = _fits(bound.arguments[name], t)
            if fit is None:
                return None
            score += fit
        return score

    def signature_text(self) -> str:
        parts = [f"{n}: {'Any' if t is Any else repr(t)}" for n, t in self.param_types()]
        return f"{self.key}({', '.join(parts)})"


class FunctionParam:
    """The type of a `g: wp.Function` parameter: the argument is a function (a @wp.func or a
    builtin), bound by name in the callee, so `g(x)` there calls it."""

    def __repr__(self) -> str:
        return "wp.Function"


FUNCTION_PARAM = FunctionParam()


def is_function_value(v: Any) -> bool:
    """v can be passed for a `wp.Function` parameter."""
    return isinstance(v, Function) or type(v).__name__ in ("Builtin", "GradFunction")


def _functions_fit(o: Overload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Every `wp.Function` parameter of overload o gets a function (other mismatches are
    reported where the call is lowered)."""
    if not any(t is FUNCTION_PARAM for _, t in o.param_types()):
        return True
    try:
        bound = inspect.signature(o.pyfunc).bind(*args, **kwargs)
    except TypeError:
        return True
    return all(is_function_value(bound.arguments[n]) for n, t in o.param_types()
               if t is FUNCTION_PARAM and n in bound.arguments)


def _defaults(pyfunc: Any) -> dict[str, Any]:
    try:
        params = inspect.signature(pyfunc).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in params if p.default is not p.empty}


def _fits(v: Any, t: Any) -> int | None:
    """How well an argument fits a parameter type: 2 exactly, 1 by converting a literal, 0 a
    generic parameter; None not at all."""
    if t is FUNCTION_PARAM:
        return 2 if is_function_value(v) else None
    if isinstance(v, Literal):
        if is_generic(t):
            return 0 if matches_template(v.default_type, t) else None
        if not isinstance(t, ScalarType) or (isinstance(v.value, float) and not t.is_float):
            return None
        return 2 if t == v.default_type else 1
    if isinstance(v, KernelValue) and matches_template(type_of(v), t):
        return 0 if is_generic(t) else 2
    if isinstance(v, KernelValue) and fixedarray.accepts(t, v):
        return 2
    return None


class Function:
    """A kernel-language function; each call inlines the overload that matches its arguments."""

    def __init__(self, pyfunc: Any, module: Any = None, inline: bool | None = None) -> None:
        self.key = pyfunc.__qualname__
        self.overloads: list[Overload] = [Overload(pyfunc, self.key)]
        #: programs lowered for calls from Python, by argument types (builtins/host.py)
        self.host_cache = HostCache()
        #: Warp's inlining hint (calls are always inlined here; it is part of the hash)
        self.inline = inline
        self._module_spec = module
        self._module: Any = None
        functools.update_wrapper(self, pyfunc)

    @property
    def module(self) -> Any:
        """The kernel module the function belongs to (Warp's `Function.module`): the one
        `@wp.func(module=...)` named (a fresh one for "unique"), else its Python module's."""
        if self._module is None:
            self._module = MODULE_OF.get()(self._module_spec, self.key, self.pyfunc)
        return self._module

    def redefined(self, pyfunc: Any) -> Function:
        """A copy of this function with pyfunc's definition added (`add_overload`); this one is
        left as it is."""
        fn = copy.copy(self)
        fn.overloads = list(self.overloads)
        fn.host_cache = HostCache()
        fn.add_overload(pyfunc)
        functools.update_wrapper(fn, pyfunc)
        return fn

    @property
    def pyfunc(self) -> Any:
        return self.overloads[0].pyfunc

    @property
    def info(self) -> SourceInfo:
        return self.overloads[0].info

    def param_types(self) -> list[tuple[str, Any]]:
        return self.overloads[0].param_types()

    @property
    def defaults(self) -> dict[str, Any]:
        """The first overload's parameter defaults, by name (Warp's `Function.defaults`)."""
        return self.overloads[0].defaults

    @defaults.setter
    def defaults(self, value: dict[str, Any]) -> None:
        self.overloads[0].defaults = dict(value)

    def add_overload(self, pyfunc: Any) -> None:
        """Another definition under the same name; one with the same parameter types replaces
        the earlier one (re-running a cell or a module redefines, it does not add)."""
        new = Overload(pyfunc, self.key)
        self.host_cache.clear()
        types = [t for _, t in new.param_types()]
        for i, old in enumerate(self.overloads):
            if [t for _, t in old.param_types()] == types:
                if set(ref_params(old)) != set(ref_params(new)):
                    raise RuntimeError(f"overloads of {self.key}() differ only in which "
                                       "parameters are wp.ref[T]; Warp cannot tell such calls "
                                       "apart")
                self.overloads[i] = new
                return
        self.overloads.append(new)

    def resolve(self, args: list[Any], kwargs: dict[str, Any], loc: SourceLoc) -> Overload:
        """The overload a call uses: the one with the most typed parameters that all match."""
        if len(self.overloads) == 1:
            return self.overloads[0]
        scored = [(o.accepts(args, kwargs), k, o) for k, o in enumerate(self.overloads)]
        fits = [(s, -k, o) for s, k, o in scored if s is not None]
        if not fits:
            given = ", ".join(_describe_arg(a) for a in args)
            options = "\n  ".join(o.signature_text() for o in self.overloads)
            raise KernelTypeError(f"no overload of {self.key}() takes ({given}); overloads:\n  "
                                  f"{options}", loc)
        return max(fits, key=lambda f: (f[0], f[1]))[2]

    def __gl_fingerprint__(self, visiting: set[int]) -> str:
        parts = [] if self.inline is None else [f"inline={self.inline}"]
        for o in self.overloads:
            parts.append(source_digest(o.info, visiting))
            parts.extend(f"{k}={fingerprint_value(v, visiting)}" for k, v in o.defaults.items())
            if o.grad is not None:
                parts.append("grad:" + source_digest(parse_function(o.grad), visiting))
        return "func:" + ",".join(parts)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """A call from Python: the function as a kernel computes it (lowered once per argument
        types, evaluated on the host values)."""
        loc = caller_loc(1)
        if not any(_functions_fit(o, args, kwargs) for o in self.overloads):
            raise RuntimeError(f"Error calling function '{self.key}', no overload found for "
                               f"arguments {args!r}")  # Warp's words
        return host_call(self.host_cache, Call(f"{self.key}()", self._lower, list(args), kwargs,
                                               loc))

    def _lower(self, ctx: Ctx, args: list[Any], kwargs: dict[str, Any]) -> Any:
        node = ast.Call(ast.Name(self.key), [], [])  # the call site: Python, not source
        return LOWERER.get()(ctx.b, self.info).inline_call(ctx, node, self, args, kwargs)

    def __repr__(self) -> str:
        return f"<gradloom func {self.key}>"


def _describe_arg(v: Any) -> str:
    if isinstance(v, Literal):
        return type(v.value).__name__
    if isinstance(v, KernelValue):
        return repr(type_of(v))
    return repr(v)


def annotated_params(info: SourceInfo) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    sig = inspect.signature(info.pyfunc)
    fdef = info.tree
    for (name, p), node in zip(sig.parameters.items(), fdef.args.args, strict=False):
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise KernelTypeError(f"parameter {name!r}: *args and **kwargs are not supported",
                                  info.loc(node))
        ann = p.annotation
        if isinstance(ann, str):  # `from __future__ import annotations` in the user's file
            ann = _eval_annotation(info, name, ann, node)
        if ann is inspect.Parameter.empty:
            out.append((name, Any))
            continue
        if ann is Function:  # `g: wp.Function`: a function passed by name, inlined where called
            out.append((name, FUNCTION_PARAM))
            continue
        try:
            out.append((name, tuple_template(ann) or resolve_annotation(ann)))
        except TypeError as exc:
            raise KernelTypeError(f"parameter {name!r}: {exc}", info.loc(node)) from None
    return out


def _eval_annotation(info: SourceInfo, name: str, text: str, node: Any) -> Any:
    namespace = {**info.pyfunc.__globals__, **info.closure}
    try:
        return eval(text, namespace)
    except Exception as exc:
        raise KernelTypeError(f"parameter {name!r}: cannot evaluate annotation {text!r}: {exc}",
                              info.loc(node)) from None


@typing.overload
def func(f: Callable[_P, _R]) -> Callable[_P, _R]: ...


@typing.overload
def func(f: None = None, *, name: str | None = None, module: Any = None,
         inline: bool | None = None) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]: ...


def func(f: Any = None, *, name: str | None = None, module: Any = None,
         inline: bool | None = None) -> Any:
    """Decorator: `@wp.func`, or `@wp.func(name=..., module=..., inline=...)` as in Warp (calls
    are always inlined here: `module` is what `f.module` gives, `inline` a hint kept in module
    hashes, and neither changes the code). Defining a function
    again under the same name in the same module with different parameter types adds an
    overload, as in Warp."""
    if inline is not None and not isinstance(inline, bool):
        raise TypeError(f"@wp.func: inline must be a bool or None, got {inline!r}")
    if f is None:
        return lambda fn: _define(fn, name, module, inline)
    return _define(f, name, module, inline)


def define(pyfunc: Any, name: str | None = None) -> Function:
    """`@wp.func` applied to pyfunc (typed for gradloom's own callers)."""
    return _define(pyfunc, name)


def _define(pyfunc: Any, name: str | None, module: Any = None,
            inline: bool | None = None) -> Function:
    """A new Function for pyfunc. A function of the same key already in its kernel module,
    defined in the same namespace (a module, a reloaded module, a notebook), lends it its other
    overloads (a definition with the same parameter types replaces one,
    as re-running a cell does); the earlier Function object keeps its own definitions, so a
    name bound to it (`f_1 = f` before `f` is defined again, or a closure made by an earlier
    call of a factory) still means what it meant, as in Warp."""
    _refuse_unions(pyfunc)
    refuse_array_instances(pyfunc)
    key = pyfunc.__qualname__ if name is None else name
    kernel_module = MODULE_OF.get()(module, key, pyfunc)
    existing = kernel_module.functions.get(key)
    if (isinstance(existing, Function) and name is None
            and existing.pyfunc.__globals__ is pyfunc.__globals__):  # not code made elsewhere
        fn = existing.redefined(pyfunc)
        kernel_module.function_redefined()  # kernels built with the old definition go
    else:
        fn = Function(pyfunc, module, inline)
        fn.key = key
    fn._module = kernel_module
    kernel_module.functions[key] = fn
    return fn


def referenced_functions(info: SourceInfo) -> list[Function]:
    """The functions a kernel or function's code can call: named by its free names or as
    attributes of a module or class (`ref.magic`, also when bound to a local first), and those
    their own code names, recursively (Warp's module references follow these)."""
    found: dict[int, Function] = {}

    def visit(info: SourceInfo) -> None:
        for value in _named_values(info):
            if isinstance(value, Function) and id(value) not in found:
                found[id(value)] = value
                for o in value.overloads:
                    with contextlib.suppress(GradloomError, OSError, SyntaxError, TypeError):
                        visit(o.info)

    visit(info)
    return list(found.values())


def _named_values(info: SourceInfo) -> list[Any]:
    values = []
    refs = info.refs()
    for name in refs.names:
        found, value = info.resolve(name)
        if found:
            values.append(value)
    for base, attr in refs.attributes:
        found, holder = info.resolve(base)
        if found and _user_holder(holder):
            values.append(inspect.getattr_static(holder, attr, None))
    return values


def _user_holder(value: Any) -> bool:
    """A module or class of the user's (gradloom's own hold no user functions; asking them
    for attributes could load subsystems on first use)."""
    if inspect.ismodule(value):
        name = value.__name__
    elif isinstance(value, type):
        name = str(getattr(value, "__module__", ""))
    else:
        return False
    return not name.startswith(("gradloom", "numpy", "builtins"))


def refuse_array_instances(pyfunc: Any) -> None:
    """An array with memory written as a parameter annotation (`a: my_array`) is refused when
    the function is declared, as Warp does: an annotation names a type."""
    for pname, ann in getattr(pyfunc, "__annotations__", {}).items():
        key = getattr(ann, "_annotation_key", None)
        if not isinstance(ann, type) and key is not None and key() is None:
            raise KernelTypeError(f"{pyfunc.__qualname__}: parameter '{pname}': an array with "
                                  f"memory ({type(ann).__name__}) cannot be used as an "
                                  "annotation; write its type (wp.array[float], ...)")


def _refuse_unions(pyfunc: Any) -> None:
    """`a: int | float` in a @wp.func: kernels have one type per value (Warp's words)."""
    for pname, ann in getattr(pyfunc, "__annotations__", {}).items():
        union = isinstance(ann, types.UnionType) or typing.get_origin(ann) is typing.Union
        if pname != "return" and union:
            raise CompileError(f"@wp.func {pyfunc.__qualname__}: parameter '{pname}' is "
                               f"annotated {ann}: Union type annotations are only supported at "
                               "Python scope")


def func_grad(forward: Function) -> Any:
    """Decorator: `@wp.func_grad(f)` gives f a hand-written reverse rule.

    The gradient function takes f's parameters followed by the adjoint of each of f's results
    (none when f returns nothing), and adds into `wp.adjoint[param]`; it returns nothing. For
    an array parameter `a`, `wp.adjoint[a]` is a's gradient array. It applies to the overload
    of f whose parameter types match its first parameters.
    """
    if not isinstance(forward, Function):
        raise GradloomError(f"wp.func_grad() takes a @wp.func, got {forward!r}")

    def register(grad: Any) -> Any:
        _grad_target(forward, grad).grad = grad
        return grad

    return register


def _grad_target(forward: Function, grad: Any) -> Overload:
    grad_types = [t for _, t in annotated_params(parse_function(grad))]
    for o in forward.overloads:
        n = len(o.param_types())
        # adjoints of results follow the parameters, so only a function that returns has them
        if [t for _, t in o.param_types()] == grad_types[:n] and \
                (len(grad_types) > n) == _returns_value(o.info):
            return o
    raise GradloomError(
        f"wp.func_grad({forward.key}): the gradient function's parameters must be those of an "
        f"overload of {forward.key} followed by the adjoints of its results; overloads: "
        + "; ".join(o.signature_text() for o in forward.overloads))


def _returns_value(info: SourceInfo) -> bool:
    """The function has a `return <value>` (nested functions and classes aside)."""
    todo: list[ast.AST] = list(info.tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                 ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return False
