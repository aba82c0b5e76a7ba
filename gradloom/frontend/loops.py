"""`for` over `range`/`reversed(range)` and `while` loops; names first set in a loop outlive it.

As in Python (and Warp), a variable first assigned inside a loop body is visible after the loop
with its value from the last trip, and so is a `for` loop's target. Such a variable is declared
before the loop with a zero of its type (found by lowering the loop once into a scratch builder)
and carried through the loop like any other; after a loop that ran no trip it holds that zero.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import numpy as np

from ..builtins import lang, ops
from ..builtins.values import Ctx, KernelValue, Literal, Value, type_of, zeros_of
from ..errors import CompileError, GradloomError, KernelTypeError, UnsupportedSyntaxError
from ..ir.builder import Builder
from ..types import ScalarType
from .control import BREAK, CONTINUE, RETURN, ControlLowerer, assigned_names, contains_jump
from .static import is_static_call, reads_in_static


class LoopLowerer(ControlLowerer):
    """Loop statements; the statement lowerer (lower.py) builds on it."""

    return_types: list[Any]
    #: lowering into a scratch builder to learn types: statements reading unknown names are
    #: skipped (lower.py's `stmt`)
    probing: bool = False

    def stmt_While(self, node: ast.While) -> None:
        if node.orelse:
            raise UnsupportedSyntaxError("while/else is not supported in kernels",
                                         self.info.loc(node))
        loc = self.info.loc(node)
        writes = self.test_writes(node.test)
        if writes:  # `while wp.hash_grid_query_next(query, index):` (frontend/iterate.py)
            self.rotated_while(node, writes)
            return
        self.in_loop(node, loc, lambda ps: self.truth_at(self.value(node.test), loc),
                     lambda ps: [], [])

    def stmt_For(self, node: ast.For) -> None:
        loc = self.info.loc(node)
        if node.orelse:
            raise UnsupportedSyntaxError("for/else is not supported in kernels", loc)
        iterator = self.iterator_step(node)
        if iterator is not None:  # `for index in query:` (frontend/iterate.py)
            self.for_over_iterator(node, *iterator)
            return
        if not isinstance(node.target, ast.Name):
            raise UnsupportedSyntaxError("a loop target other than a single name is not supported", loc)
        start, stop, step, backwards = self.range_args(node)
        ctx = self.ctx(node)
        name = node.target.id

        def test(ps: list[Any]) -> Any:
            c = self.ctx_at(loc)  # the builder of this lowering (also a scratch one)
            if isinstance(step, Literal):
                return c.op("lt" if step.value > 0 else "gt", ps[0], stop_v)
            up = c.op("lt", ps[0], stop_v)
            down = c.op("gt", ps[0], stop_v)
            return c.op("select", c.op("gt", step_v, c.const(0, step_v.type)), up, down)

        def body(ps: list[Any]) -> list[Any]:
            self.env[name] = ps[0]
            return [self.ctx_at(loc).op("add", ps[0], step_v)]

        counter_t = self.counter_type(ctx, (start, stop, step))
        start_v, stop_v = (ops.scalar(ctx, v, counter_t) for v in (start, stop))
        if isinstance(step, Literal) and step.value == 0:
            raise CompileError("range() step must not be zero", loc)
        if backwards:
            first, last, step = reversed_range(ctx, start_v, stop_v, step)
            start_v, stop_v = ops.scalar(ctx, first, counter_t), ops.scalar(ctx, last, counter_t)
        step_v = ops.scalar(ctx, step, counter_t)
        if self.unrolls(node, name, (start, stop, step)):
            bounds = (int(v.value) for v in (start, stop, step))  # type: ignore[union-attr]
            self.unrolled(node, name, range(*bounds), counter_t, loc)
            return
        target = name if self.read_outside(node, name) else None
        self.in_loop(node, loc, test, body, [start_v], target, fresh=name)

    def unrolls(self, node: ast.For, name: str, bounds: tuple[Value, Value, Value]) -> bool:
        """A constant-range loop is unrolled when a static expression reads its index, or when
        it rebinds the index of a loop unrolled around it."""
        return all(isinstance(v, Literal) for v in bounds) and (
            reads_in_static(node.body, name) or name in self.__dict__.get("static_indices", {}))

    def unrolled(self, node: ast.For, name: str, values: range, t: ScalarType,
                 loc: Any) -> None:
        """A constant-range loop whose index a `wp.static(...)` reads (or that rebinds the index
        of such a loop around it), unrolled as in Warp: each trip is lowered with the index a
        constant that static expressions see."""
        saved = {f: self.env.get(f) for f in (BREAK, CONTINUE)}
        self.env.pop(CONTINUE, None)
        if contains_jump(node.body, (ast.Break,)):
            self.env[BREAK] = self.flag(False, loc)
        else:
            self.env.pop(BREAK, None)
        has_continue = contains_jump(node.body, (ast.Continue,))
        indices: dict[str, Any] = self.__dict__.setdefault("static_indices", {})
        outer = indices.get(name)

        def trip() -> None:
            if has_continue:
                self.env[CONTINUE] = self.flag(False, loc)
            self.stmts(node.body)
            self.env.pop(CONTINUE, None)

        for k in values:
            indices[name] = k
            self.env[name] = self.b.const(k, t, loc)
            stop = [self.env[f] for f in (BREAK, RETURN) if f in self.env]
            if not stop:
                trip()
                continue
            done = stop[0] if len(stop) == 1 else self.b.op("or", (stop[0], stop[1]), loc)
            self.if_region(self.b.op("not", (done,), loc), trip, lambda: None, loc)
        indices.pop(name, None)
        if outer is not None:  # inside a loop unrolled over the same name, which static
            # expressions after this loop see with this loop's last value, as in Python
            indices[name] = values[-1] if len(values) else outer
        for f, v in saved.items():
            self.env.pop(f, None)
            if v is not None:
                self.env[f] = v

    def test_writes(self, test: ast.expr) -> list[str]:
        raise NotImplementedError  # frontend/iterate.py

    def rotated_while(self, node: ast.While, writes: list[str]) -> None:
        raise NotImplementedError  # frontend/iterate.py

    def iterator_step(self, node: ast.For) -> Any:
        raise NotImplementedError  # frontend/iterate.py

    def for_over_iterator(self, node: ast.For, value: Any, step: Any) -> None:
        raise NotImplementedError  # frontend/iterate.py

    def in_loop(self, node: ast.For | ast.While, loc: Any, test: Any, pre_body: Any,
                extras: list[Any], target: str | None = None,
                post_body: Callable[[], None] | None = None,
                also_carried: tuple[str, ...] = (), fresh: str | None = None) -> None:
        """Lower a loop; names it sets first (and `target`, a for loop's name when read after
        the loop) are declared before it, so they are carried and outlive it. `post_body` runs
        after each trip's body; `also_carried` names are carried although the body does not
        assign them (the state of a rotated loop test). `fresh`: a for loop's name, bound anew
        at each trip's start, so carried only as `target` (a variable of another type before
        the loop is shadowed, as in Warp: `k = 0.5 ... for k in range(n)`)."""
        new = [n for n in assigned_names(node.body) if n not in self.env]
        if target is not None and target not in self.env:
            new.append(target)
        if new:
            types = self.loop_local_types(node, new, loc, lambda probe: self._loop(
                node.body, loc, test, pre_body, extras, None, (new, probe), post_body,
                also_carried, fresh))
            for n, t in types.items():
                try:
                    self.env[n] = zeros_of(self.ctx_at(loc), t)
                except CompileError:
                    continue  # no zero value (an array): the name stays local to the body
                self.assign_locs.setdefault(n, loc)
        counter_t = extras[0].type if extras else None
        carry_target = target is not None and isinstance(self.env.get(target), KernelValue) \
            and type_of(self.env[target]) == counter_t
        self._loop(node.body, loc, test, pre_body, extras, target if carry_target else None, None,
                   post_body, also_carried, fresh)

    def _loop(self, body: list[ast.stmt], loc: Any, test: Any, pre_body: Any,
              extras: list[Any], target: str | None,
              probe: tuple[list[str], dict[str, Any]] | None,
              post_body: Callable[[], None] | None = None,
              also_carried: tuple[str, ...] = (), fresh: str | None = None) -> None:
        saved = {f: self.env.get(f) for f in (BREAK, CONTINUE)}
        self.env.pop(CONTINUE, None)
        if contains_jump(body, (ast.Break,)):
            self.env[BREAK] = self.flag(False, loc)
        else:
            self.env.pop(BREAK, None)
        carried = [n for n in self.carried_names(body) if n != fresh]
        if target is not None and target not in carried:
            carried.append(target)  # the for loop's name, read after the loop
        carried += [n for n in also_carried if n not in carried and n in self.env]
        has_continue = contains_jump(body, (ast.Continue,))

        def run_body(ps: list[Any]) -> list[Any]:
            nxt = pre_body(ps)
            if has_continue:
                self.env[CONTINUE] = self.flag(False, loc)
            self.stmts(body)
            self.env.pop(CONTINUE, None)
            if post_body is not None:
                post_body()
            if probe is not None:  # the types the loop's new names have after a trip
                names, found = probe
                found.update({n: type_of(self.env[n]) for n in names
                              if isinstance(self.env.get(n), KernelValue)})
            return list(nxt)

        self.loop_region(carried, extras, lambda ps: self.continue_cond(test(ps), loc),
                         run_body, loc)
        for f, v in saved.items():
            self.env.pop(f, None)
            if v is not None:
                self.env[f] = v

    def loop_local_types(self, node: ast.AST, names: list[str], loc: Any,
                         run: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """The types `names` take in the loop `node`: `run` lowers it into a scratch builder,
        skipping statements that read a name not yet known (`s += prev` before `prev = ...`),
        then again with the names found so far declared, until no more are found. Errors are
        left for the real lowering to report. Remembered per loop and the types of the names it
        reads but never sets, so nested loops are not lowered exponentially often (an outer
        loop's probe declares names the inner loop sets; that does not change their types)."""
        cache: dict[Any, dict[str, Any]] = self.__dict__.setdefault("_loop_types", {})
        assigned = set(assigned_names([node])) | set(names)  # type: ignore[list-item]
        inputs = sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - assigned)
        key = (id(node), tuple((n, type_of(self.env[n])) for n in inputs
                               if isinstance(self.env.get(n), KernelValue)))
        if key in cache:
            return cache[key]
        saved = (self.b, self.env, self.assign_locs, self.tid_arity, self.return_types,
                 self.probing)
        found: dict[str, Any] = {}
        try:
            for _ in range(3):
                self.b, self.env, self.assign_locs = Builder(), dict(saved[1]), dict(saved[2])
                self.tid_arity, self.return_types = list(saved[3]), list(saved[4])
                self.probing = True
                self.env.update({n: zeros_of(self.ctx_at(loc), t) for n, t in found.items()})
                trip: dict[str, Any] = {}
                try:
                    run(trip)
                except GradloomError:
                    break
                known = len(found)
                found.update(trip)
                if len(found) == known or len(found) == len(names):
                    break
        finally:
            (self.b, self.env, self.assign_locs, self.tid_arity, self.return_types,
             self.probing) = saved
        cache[key] = found
        return found

    def read_outside(self, loop: ast.AST, name: str) -> bool:
        """Whether the function reads `name` anywhere outside the loop statement."""
        inside = {id(n) for n in ast.walk(loop)}
        return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
                   and id(n) not in inside for n in ast.walk(self.info.tree))

    def range_args(self, node: ast.For) -> tuple[Value, Value, Value, bool]:
        """range(...)'s start, stop and step, and whether `reversed(range(...))` walks it
        backwards."""
        it = node.iter
        backwards = isinstance(it, ast.Call) and len(it.args) == 1 and not it.keywords and \
            self.expr(it.func) is reversed
        if backwards:
            assert isinstance(it, ast.Call)
            it = it.args[0]
        if not (isinstance(it, ast.Call) and self.expr(it.func) is range):
            raise UnsupportedSyntaxError("for loops must iterate over range(...) or "
                                         "reversed(range(...))", self.info.loc(node))
        args = [self.range_bound(a) for a in it.args]
        if not 1 <= len(args) <= 3:
            raise CompileError("range() takes 1 to 3 arguments", self.info.loc(it))
        if len(args) == 1:
            return Literal(0), args[0], Literal(1), backwards
        return args[0], args[1], args[2] if len(args) == 3 else Literal(1), backwards

    def range_bound(self, node: ast.expr) -> Value:
        """A range() argument; an integer from `wp.static(...)` is a constant bound (of any
        integer type, as a literal), so the loop can be unrolled for static expressions."""
        if isinstance(node, ast.Call) and len(node.args) == 1 and (
                id(node) in self.info.statics or (is_static_call(node.func) and
                                                  self.expr(node.func) is lang.STATIC)):
            raw = self.static_value(node)
            if isinstance(raw, (int, np.integer)) and not isinstance(raw, bool):
                return Literal(int(raw))
        return self.value(node)

    def counter_type(self, ctx: Ctx, vals: tuple[Value, ...]) -> ScalarType:
        types = {v.type for v in vals if not isinstance(v, Literal)}  # type: ignore[union-attr]
        if len(types) > 1:
            raise KernelTypeError(f"range() arguments have different types "
                                  f"{', '.join(map(str, types))}", ctx.loc)
        t = types.pop() if types else Literal(0).default_type
        if not isinstance(t, ScalarType) or not t.is_int:
            raise KernelTypeError(f"range() arguments must be integers, got {t!r}", ctx.loc)
        return t


def reversed_range(ctx: Ctx, start: Value, stop: Value, step: Value) -> tuple[Value, Value, Value]:
    """(start, stop, step) of the range that walks range(start, stop, step) backwards: from its
    last element to start (the step may be a run-time value)."""
    # the last element is start + q*s with q = (count - 1) = floor((|stop - start| - 1) / |s|),
    # negative (so the loop runs no trip) when the range is empty
    if isinstance(step, Literal):
        s = int(step.value)
        span = ops.binary(ctx, "sub", stop, start) if s > 0 else ops.binary(ctx, "sub", start, stop)
        q = ops.binary(ctx, "floordiv", ops.binary(ctx, "sub", span, Literal(1)), Literal(abs(s)))
        last = ops.binary(ctx, "add", start, ops.binary(ctx, "mul", q, Literal(s)))
        return last, ops.binary(ctx, "sub", start, Literal(s)), Literal(-s)
    st = ops.scalar(ctx, step)
    up = ctx.op("gt", st, ctx.const(0, st.type))
    span = ctx.op("select", up, ops.scalar(ctx, ops.binary(ctx, "sub", stop, start)),
                  ops.scalar(ctx, ops.binary(ctx, "sub", start, stop)))
    size = ctx.op("select", up, st, ctx.op("neg", st))
    q = ops.binary(ctx, "floordiv", ops.binary(ctx, "sub", span, Literal(1)), size)
    last = ops.binary(ctx, "add", start, ops.binary(ctx, "mul", q, st))
    return last, ops.binary(ctx, "sub", start, st), ctx.op("neg", st)
