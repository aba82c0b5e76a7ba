"""`wp.grad(f)`: a function computing f's gradient inside kernel code (forward mode, inlined).

`wp.grad(f)(x, y)` returns the gradient of f's outputs (summed, when f returns several values or
a vector) with respect to each input: one value for a one-parameter f, else a tuple. f is a
`@wp.func` or a differentiable builtin. The call lowers f's code once and carries, next to every
float value, its tangent along each input component (dual numbers); an op's partial derivatives
come from its reverse rule in ir/prims.py evaluated with a unit adjoint (every rule is linear in
the adjoint). Branches and loops carry tangents as extra region values, so nothing is stored.
Array elements f reads are constants; `@wp.func_grad` rules of functions f calls are not used
(their bodies are differentiated).
"""

from __future__ import annotations

import ast
from typing import Any

from ..builtins.host import Call, HostCache, caller_loc, host_call
from ..builtins.registry import Builtin
from ..builtins.values import Ctx, TupleVal, Value, flatten, materialize, rebuild
from ..errors import CompileError, GradloomError, SourceLoc
from ..ir.builder import Builder
from ..ir.nodes import Block, Custom, If, Loop, Op, Var
from ..ir.prims import PRIMS
from ..types import ScalarType
from .custom import GRADIENT_SCOPE
from .func import BIND_ARGUMENTS, LOWERER, is_function_value
from .source import fingerprint_value, parse_function

#: per float value: its tangent along each input component (None: zero)
Tangent = list[Var | None]


class GradFunction:
    """What `wp.grad(f)` returns: call it (in a kernel, a @wp.func, or from Python) with f's
    arguments to get the gradient with respect to each of them."""

    def __init__(self, func: Any) -> None:
        if not isinstance(func, Builtin) and not hasattr(func, "overloads"):
            raise GradloomError(f"wp.grad() takes a @wp.func or a kernel builtin, got {func!r}")
        self.func = func
        self.key = f"grad({getattr(func, 'key', None) or getattr(func, 'name', func)})"
        self.host_cache = HostCache()

    def __repr__(self) -> str:
        return f"<gradloom {self.key}>"

    def __gl_fingerprint__(self, visiting: set[int]) -> str:
        """What a kernel capturing this object depends on: the function (cache keys)."""
        if isinstance(self.func, Builtin):
            return f"grad:builtin:{self.func.name}"
        return "grad:" + fingerprint_value(self.func, visiting)

    def __gl_call__(self, lowerer: Any, ctx: Ctx, node: ast.Call, args: list[Any],
                    kwargs: dict[str, Any]) -> Value:
        """A call inside kernel code: emit f and its gradient into the current block."""
        if kwargs:
            raise CompileError(f"{self.key}: pass f's arguments by position", ctx.loc)
        return lower_gradient(lowerer, ctx, node, self.func, args)

    def __call__(self, *args: Any) -> Any:
        """A call from Python: the gradient evaluated on host values."""
        return host_call(self.host_cache, Call(f"wp.{self.key}", self._host_lower, list(args),
                                               {}, caller_loc(1)))

    def _host_lower(self, ctx: Ctx, args: list[Any], kwargs: dict[str, Any]) -> Any:
        info = getattr(self.func, "info", None) or parse_function(grad)
        lowerer = LOWERER.get()(ctx.b, info)
        return lower_gradient(lowerer, ctx, ast.Call(ast.Name(self.key), [], []), self.func,
                              args)


def grad(func: Any) -> GradFunction:
    """`wp.grad(f)`: a callable giving the gradient of f (a @wp.func or a differentiable
    builtin) with respect to each input, at the arguments it is called with.

    A function with several outputs (a tuple, a vector) is differentiated as the sum of its
    outputs' components. Unlike Warp, a gradient computed this way in a kernel is itself
    differentiated when the kernel's adjoint runs (Warp treats it as a constant)."""
    return GradFunction(func)


def _grad_in_kernel(lowerer: Any, ctx: Ctx, node: ast.Call, args: list[Any],
                    kwargs: dict[str, Any]) -> GradFunction:
    if len(args) != 1 or kwargs:
        raise CompileError("wp.grad() takes one function", ctx.loc)
    try:
        return GradFunction(args[0])
    except GradloomError as exc:
        raise CompileError(str(exc), ctx.loc) from None


grad.__gl_call__ = _grad_in_kernel  # type: ignore[attr-defined]


def lower_gradient(lowerer: Any, ctx: Ctx, node: ast.Call, func: Any, args: list[Any]) -> Value:
    """Emit func(args) with tangents; return the gradient of its summed outputs."""
    b: Builder = ctx.b
    given = _inputs(ctx, func, args)
    values = [v for v in given if not is_function_value(v)]  # wp.Function arguments: no gradient
    inputs = [_fresh(b, v, ctx.loc) for v in flatten_all(values)]
    b.open_block()
    scope = [*lowerer.stack, GRADIENT_SCOPE]
    saved, lowerer.stack = lowerer.stack, scope
    try:
        result = lowerer.call(ctx, node, func, _with_functions(given, _rebuilt(values, inputs)), {})
    finally:
        lowerer.stack = saved
    if result is None:
        raise CompileError(f"wp.grad(): {getattr(func, 'key', func)} returns nothing", ctx.loc)
    outputs = [v for v in flatten(result) if v.type.is_float]
    primal = b.close_block(outputs)
    floats = [v for v in inputs if v.type.is_float]
    dual = _Dual(b, ctx.loc, len(floats))
    for j, v in enumerate(floats):
        dual.tangent[v] = [dual.one(v.type) if k == j else None for k in range(len(floats))]
    dual.block(primal, top=True)
    lanes = [dual.sum_lane(primal.yields, j, t) for j, t in enumerate(v.type for v in floats)]
    grads = iter(lanes)
    comps = [next(grads) if v.type.is_float else b.const(0, v.type, ctx.loc) for v in inputs]
    out = list(_rebuilt(values, comps))
    return out[0] if len(out) == 1 else TupleVal(tuple(out))


def _with_functions(given: list[Any], values: list[Value]) -> list[Any]:
    """The call's arguments: the function arguments where they were, the values between."""
    it = iter(values)
    return [g if is_function_value(g) else next(it) for g in given]


def flatten_all(values: list[Value]) -> list[Var]:
    return [c for v in values for c in flatten(v)]


def _rebuilt(templates: list[Value], comps: list[Var]) -> list[Value]:
    it = iter(comps)
    return [rebuild(t, it) for t in templates]


def _inputs(ctx: Ctx, func: Any, args: list[Any]) -> list[Value]:
    """The arguments as typed values (literals take the parameter's type, else their own)."""
    if isinstance(func, Builtin):
        return [materialize(ctx, a) for a in args]
    overload = func.resolve(args, {}, ctx.loc)
    env = BIND_ARGUMENTS.get()(ctx, overload, args, {})
    return [env[name] for name, _ in overload.param_types()]


def _fresh(b: Builder, v: Var, loc: SourceLoc) -> Var:
    """A copy of v with a variable of its own (an argument may be passed twice)."""
    if not v.type.is_float:
        return v
    return b.op("mul", (v, b.const(1.0, v.type, loc)), loc)


class _Dual:
    """Re-emits a primal block with every float value's tangents next to it."""

    def __init__(self, b: Builder, loc: SourceLoc, lanes: int) -> None:
        self.b = b
        self.loc = loc
        self.lanes = lanes
        self.tangent: dict[Var, Tangent] = {}

    # -- the Emit protocol of ir/prims.py's rules (primal values are all in scope) ----------

    def op(self, prim: str, *args: Var, type: ScalarType | None = None) -> Var:
        return self.b.op(prim, args, self.loc, type=type)

    def effect(self, prim: str, *args: Var, attr: Any = None) -> None:
        self.b.effect(prim, args, self.loc, attr=attr)

    def const(self, value: float, t: ScalarType) -> Var:
        return self.b.const(value, t, self.loc)

    def primal(self, v: Var) -> Var:
        return v

    def one(self, t: ScalarType) -> Var:
        return self.const(1.0, t)

    # -- blocks ---------------------------------------------------------------------------

    def block(self, blk: Block, top: bool = False) -> list[Tangent]:
        """Emit blk's statements with tangents into the current block; the yields' tangents."""
        for s in blk.stmts:
            if isinstance(s, Op):
                self.b.append(s)
                self.op_tangent(s)
            elif isinstance(s, If):
                self.if_tangent(s)
            elif isinstance(s, Loop):
                self.loop_tangent(s)
            else:
                assert isinstance(s, Custom)  # lowered under GRADIENT_SCOPE: never made
                raise CompileError("wp.grad(): a @wp.func_grad region", s.loc)
        return [self.tangent.get(y, [None] * self.lanes) for y in blk.yields]

    def op_tangent(self, op: Op) -> None:
        rule = PRIMS[op.prim].vjp
        r = op.result
        if rule is None or r is None or not r.type.is_float or PRIMS[op.prim].memory:
            return
        if not any(a in self.tangent for a in op.args):
            return
        partials = rule(self, op, self.one(r.type))
        lanes: Tangent = [None] * self.lanes
        for a, p in zip(op.args, partials, strict=True):
            if p is None or a not in self.tangent:
                continue
            for j, t in enumerate(self.tangent[a]):
                if t is None:
                    continue
                d = self.op("mul", p, t)
                if d.type != r.type:
                    d = self.op("cast", d, type=r.type)
                cur = lanes[j]
                lanes[j] = d if cur is None else self.op("add", cur, d)
        self.tangent[r] = lanes

    def _dense(self, t: Tangent, like: Var) -> list[Var]:
        return [x if x is not None else self.const(0.0, like.type) for x in t]

    def if_tangent(self, s: If) -> None:
        blocks = []
        for blk in (s.then, s.orelse):
            self.b.open_block()
            ts = self.block(blk)
            extra = [x for t, y in zip(ts, blk.yields, strict=True) if y.type.is_float
                     for x in self._dense(t, y)]
            blocks.append(self.b.close_block([*blk.yields, *extra]))
        floats = [r for r in s.results if r.type.is_float]
        extra_results = [self.b.new_var(r.type) for r in floats for _ in range(self.lanes)]
        self.b.append(If(s.cond, blocks[0], blocks[1], (*s.results, *extra_results), s.loc))
        for k, r in enumerate(floats):
            self.tangent[r] = list(extra_results[k * self.lanes:(k + 1) * self.lanes])

    def loop_tangent(self, s: Loop) -> None:
        carried = [j for j, p in enumerate(s.params) if p.type.is_float]
        inits = [x for j in carried
                 for x in self._dense(self.tangent.get(s.inits[j], [None] * self.lanes),
                                      s.inits[j])]
        params = [self.b.new_var(s.params[j].type) for j in carried for _ in range(self.lanes)]
        for k, j in enumerate(carried):
            self.tangent[s.params[j]] = list(params[k * self.lanes:(k + 1) * self.lanes])
        self.b.open_block()
        self.block(s.cond)
        cond = self.b.close_block(s.cond.yields)
        self.b.open_block()
        ts = self.block(s.body)
        extra = [x for j in carried for x in self._dense(ts[j], s.body.yields[j])]
        body = self.b.close_block([*s.body.yields, *extra])
        results = [self.b.new_var(p.type) for p in params]
        self.b.append(Loop((*s.inits, *inits), (*s.params, *params), cond, body,
                           (*s.results, *results), s.loc))
        for k, j in enumerate(carried):
            self.tangent[s.results[j]] = list(results[k * self.lanes:(k + 1) * self.lanes])

    def sum_lane(self, outputs: tuple[Var, ...], lane: int, t: ScalarType) -> Var:
        """d(sum of outputs)/d(input component `lane`), in the input's type."""
        total: Var | None = None
        for y in outputs:
            d = self.tangent.get(y, [None] * self.lanes)[lane]
            if d is None:
                continue
            if d.type != t:
                d = self.op("cast", d, type=t)
            total = d if total is None else self.op("add", total, d)
        return total if total is not None else self.const(0.0, t)


__all__ = ["GradFunction", "grad"]
