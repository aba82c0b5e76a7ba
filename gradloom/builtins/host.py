"""Python-scope calls: a builtin, @wp.func or operator on host values is lowered to scalar IR by
the same code kernels use (scratch builder, the host values as free variables), then evaluated
on the host (ir/evaluate.py). The lowered program is cached per argument types.

A Python float argument is an untyped literal (it adopts the type of what it meets, as in a
kernel). To cache across its values, the call is lowered twice with two different probe values;
when the programs agree except for the probe constants, those constants become slots bound to
the argument's value at each call. Otherwise (the builtin folded the value at compile time) the
program is cached per value.
"""

from __future__ import annotations

import dataclasses
import operator
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import config
from ..errors import GradloomError, KernelTypeError, SourceLoc
from ..ir.builder import Builder
from ..ir.evaluate import HostUnavailableError, Prepared, evaluate, prepare, unavailable_ops
from ..ir.nodes import Block, Var, walk_ops
from ..ir.prims import PRIMS
from ..ir.printer import format_block
from ..types import (
    ArrayType,
    MatrixType,
    ScalarType,
    StructType,
    VectorType,
    VecValue,
    leaves,
)
from ..types.scalars import SCALAR_OPERATOR, scalar_type_of
from ..types.values import HOST_OPERATOR, python_scalar, value_from_array
from . import ops
from .values import (
    ArrayVal,
    Composite,
    Ctx,
    Literal,
    OutArgs,
    StructVal,
    TupleVal,
    Value,
    scalar,
)

#: lowers one call: (ctx, positional values, keyword values) -> the call's value
LowerFn = Callable[[Ctx, list[Any], dict[str, Any]], Any]

_PROBES = ((0.4142135623730951, 0.0137), (0.7390851332151607, 0.0219))


@dataclass(frozen=True, eq=False)
class HostProgram:
    """A lowered call: its block, the free variables the host values bind (in argument
    order), the constants that stand for Python float arguments, and the result's shape."""

    block: Block
    code: Prepared
    inputs: tuple[Var, ...]
    probes: tuple[tuple[Var, int | str], ...]
    result: Any
    writes: tuple[tuple[int, Any], ...] = ()
    temporaries_ok: bool = False
    #: the array arguments' values, by argument slot: one returned is that argument itself
    arrays: tuple[tuple[ArrayVal, int | str], ...] = ()


_PER_VALUE = object()  # cache marker: this key's Python floats are folded at compile time


class HostCache:
    """One callee's lowered programs by argument types; the oldest go beyond `limit`. Also the
    results of its pure programs (no memory, no output: `PrimEntry.pure` ops only) by the
    values of their scalar arguments: a @wp.func called from Python again and again with the
    same integers (mujoco-warp's `upper_trid_index`, 33 calls a step, ~0.1 ms each through
    the evaluator) is looked up."""

    def __init__(self, limit: int = 256) -> None:
        self._programs: dict[Any, Any] = {}
        self._limit = limit
        self.pure: dict[Any, bool] = {}
        self.results: dict[Any, Any] = {}

    def remember(self, key: Any, result: Any) -> None:
        if len(self.results) >= 4 * self._limit:
            self.results.pop(next(iter(self.results)))
        self.results[key] = result

    def get(self, key: Any) -> Any:
        return self._programs.get(key)

    def put(self, key: Any, value: Any) -> None:
        if len(self._programs) >= self._limit:
            self._programs.pop(next(iter(self._programs)))
        self._programs[key] = value

    def clear(self) -> None:
        self._programs.clear()
        self.pure.clear()
        self.results.clear()


# -- host values in and out ----------------------------------------------------------------------


def _is_python_float(v: Any) -> bool:
    return isinstance(v, float) and not isinstance(v, np.generic)


def _array_type(v: Any) -> ArrayType | None:
    """The type of an array argument (a `wp.array` or a subclass; not indexed or Fabric)."""
    of = getattr(v, "__gl_type__", None)
    if isinstance(v, type) or not callable(of) or not hasattr(v, "shape"):
        return None
    t = of()
    return t if isinstance(t, ArrayType) else None


def _arg_key(v: Any) -> Any:
    """What of an argument the lowered program depends on."""
    if isinstance(v, VecValue) and v.gl_type is not None:
        return ("c", v.gl_type)
    array_type = _array_type(v)
    if array_type is not None:  # by type: the program never reads its memory
        return ("a", array_type)
    if _is_scalar(v):
        return ("s", scalar_type_of(v) or v.dtype)
    if _is_python_float(v):
        return ("f",)
    if isinstance(v, (bool, int, str)):
        return (type(v).__name__, v)
    if isinstance(getattr(type(v), "__gl_type__", None), StructType):
        return ("struct", type(v).__gl_type__)
    return ("o", type(v), v)  # types, tuples, ...: by value (unhashable ones are not cached)


def _call_key(args: list[Any], kwargs: dict[str, Any], plain_kwargs: bool) -> Any:
    def plain(v: Any) -> Any:  # a builtin's keyword floats stay Python values: by value
        return ("o", float, v) if _is_python_float(v) else _arg_key(v)

    kw_key = plain if plain_kwargs else _arg_key
    key = (tuple(_arg_key(a) for a in args),
           tuple(sorted((k, kw_key(v)) for k, v in kwargs.items())))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _float_slots(args: list[Any], kwargs: dict[str, Any],
                 plain_kwargs: bool) -> dict[int | str, float]:
    """The Python float arguments (untyped literals), by position or keyword."""
    slots: list[tuple[int | str, Any]] = [*enumerate(args)]
    if not plain_kwargs:
        slots += kwargs.items()
    return {s: v for s, v in slots if _is_python_float(v)}


def _is_scalar(v: Any) -> bool:
    """A numpy scalar or a Python-scope scalar value (`wp.bool(x)` is an int)."""
    return isinstance(v, np.generic) or scalar_type_of(v) is not None


def _scalar_type(v: np.generic) -> ScalarType:
    t = scalar_type_of(v)
    if t is None:
        raise GradloomError(f"a numpy {v.dtype} value cannot be passed to a gradloom builtin")
    return t


class _Lowering:
    """Turns host arguments into kernel values for one lowering (inputs become free vars)."""

    def __init__(self, ctx: Ctx, probe: Callable[[int | str], float] | None) -> None:
        self.ctx = ctx
        self.inputs: list[Var] = []
        self.probe = probe
        self.arrays: list[tuple[ArrayVal, int | str]] = []

    def var(self, t: ScalarType) -> Var:
        v = self.ctx.b.new_var(t)
        self.inputs.append(v)
        return v

    def value(self, v: Any, slot: int | str, literal: bool = True) -> Any:
        """A host argument as a kernel value; with literal=False Python numbers stay as they
        are (a builtin's keyword arguments, as the kernel frontend passes them)."""
        if isinstance(v, VecValue) and v.gl_type is not None:
            t = v.gl_type
            return Composite(t, tuple(self.var(t.dtype) for _ in range(t.length)))
        if _is_scalar(v):
            return self.var(_scalar_type(v))
        if _is_python_float(v) and self.probe is not None and literal:
            return Literal(self.probe(slot))
        if isinstance(v, (bool, int, float)) and literal:
            return Literal(v)
        st = getattr(type(v), "__gl_type__", None)
        if isinstance(st, StructType):
            return self.struct(st, v)
        if isinstance(v, np.ndarray):
            raise GradloomError("a numpy array cannot be passed here: pass a vector or matrix "
                                "value (e.g. wp.vec3(...))")
        array_type = _array_type(v)
        if array_type is not None and literal:
            # its shape and strides are values; its memory is not (the host reads none)
            val = ArrayVal.from_words(array_type, [self.var(t) for _, t in leaves(array_type)])
            self.arrays.append((val, slot))
            return val
        if hasattr(v, "ptr") and hasattr(v, "shape") and hasattr(v, "dtype"):
            raise GradloomError("arrays can be used in kernels only, not in builtins called "
                                "from Python")
        return v

    def struct(self, st: StructType, obj: Any) -> StructVal:
        fields: list[Value] = []
        for name, ft in st.fields:
            fv = getattr(obj, name)
            if isinstance(ft, ScalarType):
                fields.append(self.var(ft))
            elif isinstance(ft, (VectorType, MatrixType)):
                fields.append(Composite(ft, tuple(self.var(ft.dtype) for _ in range(ft.length))))
            elif isinstance(ft, StructType):
                fields.append(self.struct(ft, fv))
            else:
                raise GradloomError(f"struct {st.name} has an array field '{name}': structs "
                                    "with arrays can be used in kernels only")
        return StructVal(st, tuple(fields))


def _host_leaves(v: Any) -> Iterator[Any]:
    """The scalars of a host value as numpy scalars of their kernel types, in the order
    _Lowering made its free variables."""
    if isinstance(v, VecValue) and v.gl_type is not None:
        yield from v.host_components()
    elif _array_type(v) is not None:  # null pointers: a host program loads no element
        yield from (np.uint64(0), np.uint64(0), *map(np.int64, v.shape), *map(np.int64, v.strides))
    elif _is_scalar(v):  # numpy's own scalar: the evaluator runs numpy's operators
        yield _scalar_type(v).host_dtype.type(v)
    elif isinstance(getattr(type(v), "__gl_type__", None), StructType):
        for name, ft in type(v).__gl_type__.fields:
            fv = getattr(v, name)
            if isinstance(ft, ScalarType):
                yield ft.host_dtype.type(fv)  # a field may hold a Python number
            elif isinstance(ft, (VectorType, MatrixType)):
                yield from np.ravel(np.asarray(fv, dtype=ft.dtype.host_dtype))
            else:
                yield from _host_leaves(fv)


def _literal_result(v: Any) -> Any:
    """A result folded from Python numbers alone (`wp.mul(x, y)` of two ints): Warp computes
    it in int32 / float32, as a kernel's literals are typed, so the number is wrapped or rounded
    to that type (a Python int / float, as Warp returns those two types)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return v
    if isinstance(v, int):
        return python_scalar(np.uint32(v & 0xFFFFFFFF).astype(np.int32), "int32")
    return python_scalar(np.float32(v), "float32")


def to_host(template: Any, env: dict[Var, Any], arrays: dict[ArrayVal, Any] | None = None) -> Any:
    """A lowered value's shape filled with the evaluated scalars, as Python-scope values; an
    array argument's value (`arrays`) is that argument."""
    if template is None or isinstance(template, str):
        return template
    if isinstance(template, ArrayVal) and arrays and template in arrays:
        return arrays[template]
    if isinstance(template, Var):
        return python_scalar(env[template], template.type.name)
    if isinstance(template, Literal):
        return _literal_result(template.value)
    if isinstance(template, Composite):
        t = template.type
        return value_from_array(t, [env[c] for c in template.comps])
    if isinstance(template, TupleVal):
        return tuple(to_host(i, env, arrays) for i in template.items)
    if isinstance(template, StructVal):
        names = [n for n, _ in template.type.fields]
        fields = {n: to_host(f, env, arrays) for n, f in zip(names, template.fields, strict=True)}
        return template.type.cls(**fields)
    if isinstance(template, ArrayVal):
        raise GradloomError("a call from Python cannot return an array")
    return template


# -- lowering, probing and running -----------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One Python-scope call: what it is (for errors), how to lower it, and its arguments."""

    what: str
    lower: LowerFn
    args: list[Any]
    kwargs: dict[str, Any]
    loc: SourceLoc
    #: keyword arguments are plain Python values (builtins), not literals (funcs)
    plain_kwargs: bool = False
    #: the builtin's name (`mul` for `*`) for Warp's words when the arguments fit no overload
    builtin: str = ""


def _lower(call: Call, probe: Callable[[int | str], float] | None) -> HostProgram:
    ctx = Ctx(Builder(), call.loc)
    conv = _Lowering(ctx, probe)
    vals = [conv.value(a, i) for i, a in enumerate(call.args)]
    kw = {k: conv.value(v, k, literal=not call.plain_kwargs) for k, v in call.kwargs.items()}
    try:
        result = call.lower(ctx, vals, kw)
    except KernelTypeError as exc:
        if not call.builtin:
            raise
        types = ", ".join(_type_word(a) for a in [*call.args, *call.kwargs.values()])
        # Warp's words alone (its tests anchor them with `$`); why, and where, in a note
        error = KernelTypeError(f"Couldn't find a function '{call.builtin}' compatible with "
                                f"the arguments '{types}'")
        error.add_note(f"{call.loc}: {exc.bare_message}")
        raise error from None
    writes: tuple[tuple[int, Any], ...] = ()
    temporaries_ok = False
    if isinstance(result, OutArgs):
        writes, temporaries_ok, result = result.writes, result.temporaries_ok, result.result
    block = ctx.b.finish()
    bad = unavailable_ops([block])
    if bad:
        op, reason = bad[0]
        raise HostUnavailableError(f"{call.loc}: {call.what} cannot run in Python: its '{op.prim}' "
                                   f"operation {reason}; call it inside a @wp.kernel")
    return HostProgram(block, prepare(block), tuple(conv.inputs), (), result, writes,
                       temporaries_ok, tuple(conv.arrays))


def _type_word(v: Any) -> str:
    """A Python-scope argument's type as Warp's messages name it (`float32`, `vec2i`, `float`)."""
    t = getattr(v, "gl_type", None)
    if t is not None:
        return repr(t)
    if isinstance(v, np.generic):
        return str(v.dtype)
    return type(v).__name__


class _Probe(float):
    """A probe value standing for a Python float argument. `float(p)` (how a literal becomes
    a constant) is silent; any other use at compile time (a comparison, truth, arithmetic that
    folds) is logged, and the call is then cached per value."""

    log: list[str]

    def __new__(cls, value: float, log: list[str]) -> _Probe:
        obj = super().__new__(cls, value)
        obj.log = log
        return obj


def _logged(name: str) -> Callable[..., Any]:
    base = getattr(float, name)

    def method(self: _Probe, *args: Any) -> Any:
        self.log.append(name)
        return base(self, *args)
    return method


for _name in ("__bool__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__",
              "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
              "__rmod__", "__pow__", "__rpow__", "__neg__", "__pos__", "__abs__", "__int__",
              "__round__", "__floor__", "__ceil__", "__trunc__", "__divmod__", "__rdivmod__"):
    setattr(_Probe, _name, _logged(_name))


def _probe_fn(k: int, slots: list[int | str], log: list[str]) -> Callable[[int | str], float]:
    base, step = _PROBES[k]
    return lambda slot: _Probe(base + step * slots.index(slot), log)


def _text(p: HostProgram, values: dict[int | str, float]) -> str:
    text = format_block(p.block) + "\n" + repr(p.result) + repr(p.writes)
    for slot, v in values.items():
        text = text.replace(repr(v), f"<{slot}>")
    return text


def _probed(call: Call, slots: list[int | str]) -> HostProgram | None:
    """The program with slots for the Python float arguments, or None where the lowering
    depends on their values."""
    log: list[str] = []
    try:
        first, second = (_lower(call, _probe_fn(k, slots, log)) for k in (0, 1))
    except GradloomError:
        return None
    if log:
        return None  # the value decides something at compile time: per value
    values = [{s: float(_probe_fn(k, slots, log)(s)) for s in slots} for k in (0, 1)]
    shape = repr(first.result) + repr(first.writes)
    if _text(first, values[0]) != _text(second, values[1]) or \
            any(repr(v) in shape for v in values[0].values()):
        return None  # folded, or the result is the literal itself: per value
    probes = []
    for op in walk_ops(first.block):
        if op.prim == "const" and isinstance(op.attr, float) and op.result is not None:
            probes += [(op.result, s) for s, v in values[0].items() if op.attr == v]
    return dataclasses.replace(first, probes=tuple(probes))


def host_call(cache: HostCache, call: Call) -> Any:
    """Evaluate a call on host values through its lowered program (cached by argument types)."""
    floats = _float_slots(call.args, call.kwargs, call.plain_kwargs)
    key = _call_key(call.args, call.kwargs, call.plain_kwargs)
    program = cache.get(key) if key is not None else None
    per_value = program is _PER_VALUE
    values = tuple(map(repr, floats.values()))  # repr: -0.0 and NaN are values of their own
    if per_value:
        key = (key, values)
        program = cache.get(key)
    if program is None:
        if floats and not per_value:
            program = _probed(call, list(floats))
            if program is None and key is not None:
                cache.put(key, _PER_VALUE)
                key = (key, values)
        if program is None:
            program = _lower(call, None)
        if key is not None:
            cache.put(key, program)
    memo = _memo_key(cache, key, program, call)
    if memo is None:
        return run(program, call)
    if memo in cache.results:
        return cache.results[memo]
    result = run(program, call)
    if isinstance(result, _IMMUTABLE):  # a mutable result (a vector) is made afresh each call
        cache.remember(memo, result)
    return result


_SCALARS = (bool, int, float, np.bool_, np.integer, np.floating)
_IMMUTABLE = (bool, int, float, np.generic)


def _memo_key(cache: HostCache, key: Any, program: HostProgram, call: Call) -> Any:
    """What a call's result is remembered under: its type key and its scalar arguments' types
    and values (repr: -0.0 and NaN apart); None where it is not remembered (arguments other
    than scalars, or a program that touches memory or has effects)."""
    if key is None or program.writes or program.arrays:
        return None
    pure = cache.pure.get(key)
    if pure is None:
        pure = cache.pure[key] = all(PRIMS[op.prim].pure for op in walk_ops(program.block))
    values = [*call.args, *call.kwargs.values()]
    if not pure or not all(isinstance(v, _SCALARS) for v in values):
        return None
    # the result's Python type follows config.legacy_scalar_return_types at each call
    legacy = bool(getattr(config, "legacy_scalar_return_types", False))
    return key, legacy, tuple(call.kwargs), tuple((type(v), repr(v)) for v in values)


def run(program: HostProgram, call: Call) -> Any:
    """Bind the call's host values to the program's free variables and slots, evaluate."""
    args, kwargs = call.args, call.kwargs
    leaves = [x for v in [*args, *kwargs.values()] for x in _host_leaves(v)]
    env: dict[Var, Any] = dict(zip(program.inputs, leaves, strict=True))
    for var, slot in program.probes:
        env[var] = var.type.host_dtype.type(args[slot] if isinstance(slot, int) else kwargs[slot])
    evaluate(program.code, env)
    for index, template in program.writes:
        _write_back(call.what, args, index, to_host(template, env), program.temporaries_ok)
    arrays = {val: args[slot] if isinstance(slot, int) else kwargs[slot]
              for val, slot in program.arrays}
    return to_host(program.result, env, arrays)


def _write_back(what: str, args: list[Any], index: int, value: Any, temporaries_ok: bool) -> None:
    """An output argument (svd3(A, U, sigma, V)): its vector/matrix is updated in place."""
    target = args[index] if index < len(args) else None
    if isinstance(target, VecValue) and isinstance(value, VecValue) and \
            target.gl_type.shape == value.gl_type.shape:
        target[...] = value
    elif not temporaries_ok:
        raise GradloomError(f"{what}: argument {index + 1} is an output: pass a "
                            f"{type_of_value(value)} value to receive it")


def type_of_value(v: Any) -> str:
    t = getattr(v, "gl_type", None)
    return repr(t) if t is not None else type(v).__name__



def caller_loc(depth: int) -> SourceLoc:
    """The user's source location `depth` frames above the caller of this function."""
    frame = sys._getframe(depth + 1)
    return SourceLoc(frame.f_code.co_filename, frame.f_lineno, 0, frame.f_code.co_name)


# -- operators on host values -----------------------------------------------------------------

_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%",
            "pow": "**", "matmul": "@", "neg": "-", "pos": "+", "eq": "==", "ne": "!=",
            "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_NUMPY: dict[str, Callable[..., Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "matmul": operator.matmul, "neg": operator.neg, "pos": operator.pos, "eq": operator.eq,
    "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
    "ge": operator.ge}
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")


def _broadcast(ctx: Ctx, a: Any, b: Any) -> tuple[Any, Any]:
    """`v + 1.0` / `1.0 - v` (Warp accepts these in Python, not in kernels): the scalar as a
    value of the composite's type, then the kernel's component-wise + / -."""
    if isinstance(a, Composite) and not isinstance(b, Composite):
        return a, Composite(a.type, (scalar(ctx, b, a.type.dtype),) * a.type.length)
    if isinstance(b, Composite) and not isinstance(a, Composite):
        return Composite(b.type, (scalar(ctx, a, b.type.dtype),) * b.type.length), b
    return a, b


def _lower_operator(name: str) -> LowerFn:
    def lower(ctx: Ctx, vals: list[Any], kwargs: dict[str, Any]) -> Any:
        if name in ("neg", "pos"):
            return ops.unary(ctx, name, vals[0])
        a, b = vals
        if name in _COMPARISONS:
            return ops.compare(ctx, name, a, b)
        if name in ("add", "sub"):
            a, b = _broadcast(ctx, a, b)
        return ops.binary(ctx, name, a, b)
    return lower


class _Operator:
    """One Python operator on host values: its lowering and its cache of programs."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.what = f"the operator '{_SYMBOLS[name]}'"
        self.lower = _lower_operator(name)
        self.cache = HostCache()
        self.numpy: Callable[..., Any] = _NUMPY[name]


_OPERATORS = {name: _Operator(name) for name in _SYMBOLS}


def _typed(v: Any) -> bool:
    return isinstance(v, VecValue) and v.gl_type is not None


@SCALAR_OPERATOR.fill
@HOST_OPERATOR.fill
def host_operator(name: str, *operands: Any) -> Any:
    """A Python operator on scalar/vector/matrix values (their dunder methods): the kernel's
    definition where every operand is a gradloom value or a number, numpy's otherwise."""
    op = _OPERATORS[name]
    hosted = all(_typed(v) or isinstance(v, (np.generic, int, float)) for v in operands)
    if name in _COMPARISONS:
        hosted = all(_typed(v) for v in operands)  # `v == 0` compares component-wise (numpy)
    if not hosted:
        return op.numpy(*(np.asarray(v) if isinstance(v, VecValue) else v for v in operands))
    return host_call(op.cache, Call(op.what, op.lower, list(operands), {}, caller_loc(3),
                                    builtin=op.name))
