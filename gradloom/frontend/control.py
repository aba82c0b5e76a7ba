"""Structured control flow: if-regions that merge variables, loops that carry them, jump flags."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from ..builtins import tiles
from ..builtins.values import (
    ArrayVal,
    KernelValue,
    Literal,
    TileVal,
    Value,
    flatten,
    materialize,
    rebuild,
    type_of,
    zeros_of,
)
from ..errors import KernelTypeError, SourceLoc
from ..ir.nodes import Var
from ..types import bool_
from .expr import ExprLowerer
from .logic import truth

BREAK, CONTINUE, RETURN, RETVAL = "$break", "$continue", "$return", "$retval"
IFEXP = "$ifexp"  # the value of a conditional expression, merged like a variable
BOOLOP = "$boolop"  # the value of a short-circuit `and` / `or`
_PLAIN = (ast.Name, ast.Constant, ast.Attribute, ast.BinOp, ast.UnaryOp, ast.Compare,
          ast.BoolOp, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.expr_context)
FLAGS = (BREAK, CONTINUE, RETURN)


def assigned_names(stmts: list[ast.stmt], calls: bool = True) -> list[str]:
    """Names a statement list may rebind (incl. `v.x = ...`, which rebinds v), in order;
    with `calls`, also every plain name passed to a call (it may be an output argument)."""
    out: dict[str, None] = {}
    for s in stmts:
        for node in ast.walk(s):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
                targets = [node.target]
            elif isinstance(node, ast.Call) and calls:
                # a builtin's output arguments (`wp.svd3(A, U, s, V)`, `wp.randf(rng)`) rebind
                # plain names, also inside an expression
                targets = [a for a in node.args if isinstance(a, ast.Name)]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        out.setdefault(n.id, None)
    return list(out)


def _plain(node: ast.expr) -> bool:
    """An expression that only computes on values (no calls, no subscripts)."""
    return all(isinstance(n, _PLAIN) for n in ast.walk(node))


def contains_jump(stmts: list[ast.stmt], kinds: tuple[type, ...]) -> bool:
    """Whether a Break/Continue (of this loop level) or Return occurs in the statements."""
    def visit(node: ast.AST, nested_loop: bool) -> bool:
        if isinstance(node, ast.Return) and ast.Return in kinds:
            return True
        if isinstance(node, (ast.Break, ast.Continue)) and type(node) in kinds:
            return not nested_loop
        inner = nested_loop or isinstance(node, (ast.For, ast.While))
        return any(visit(c, inner) for c in ast.iter_child_nodes(node))
    return any(visit(s, False) for s in stmts)


class ControlLowerer(ExprLowerer):
    """If/loop regions over the variable environment; the statement lowerer builds on it."""

    assign_locs: dict[str, SourceLoc]  # where each local was last assigned (for error messages)

    def stmts(self, body: list[ast.stmt]) -> None:
        raise NotImplementedError

    def flag(self, value: bool, loc: SourceLoc) -> Var:
        return self.b.const(value, bool_, loc)

    def jumped(self, loc: SourceLoc) -> Var | None:
        """True once any active break/continue/return flag is set (None if none are active)."""
        active = [self.env[f] for f in FLAGS if f in self.env]
        if not active:
            return None
        acc = active[0]
        for f in active[1:]:
            acc = self.b.op("or", (acc, f), loc)
        return acc

    def if_region(self, cond: Var, then_fn: Callable[[], None], else_fn: Callable[[], None],
                  loc: SourceLoc) -> None:
        """Lower both branches, then merge every variable either one changed."""
        before = self.env
        branches = []
        for fn in (then_fn, else_fn):
            self.b.open_block()
            self.env = dict(before)
            fn()
            branches.append((self.b.close_block(), self.env))
        (then_blk, then_env), (else_blk, else_env) = branches
        names = self._changed(before, then_env, else_env, loc)
        # a tile first made on one branch keeps its buffer after the if (Warp: undefined on
        # the other branch; here the buffer's contents, zero unless written)
        lone = {n: then_env.get(n) or else_env[n] for n in names
                if isinstance(then_env.get(n) or else_env.get(n), TileVal)
                and (n not in then_env or n not in else_env)}
        names = [n for n in names if n not in lone]
        # a tile changed on a branch: both branches leave it in one buffer (values.TileVal)
        merged = {n: tiles.fresh_like(self.ctx_at(loc), then_env.get(n) or else_env[n])
                  for n in names if isinstance(then_env.get(n) or else_env.get(n), TileVal)}
        yields = []
        for blk, env, other in ((then_blk, then_env, else_env), (else_blk, else_env, then_env)):
            self.b.reopen_block(blk)
            for n in names:  # a number bound in a branch leaves it as a typed value
                if isinstance(env.get(n), Literal):
                    env[n] = materialize(self.ctx_at(loc), env[n])
                if n in merged and isinstance(env.get(n), TileVal):
                    env[n] = tiles.settle(self.ctx_at(loc), env[n], merged[n])
            vals = [env[n] if n in env else zeros_of(self.ctx_at(loc), type_of(other[n]))
                    for n in names]
            flat = [v for val in vals for v in flatten(val)]
            yields.append(self.b.close_block(flat))
        results = iter(self.b.emit_if(cond, yields[0], yields[1], loc))
        self.env = dict(before)
        # a name both branches bound to the very value (made before the if: `v = p` on each
        # side) needs no merge, and keeps that value after the if
        self.env.update({n: v for n, v in then_env.items() if else_env.get(n) is v
                         and before.get(n) is not v and isinstance(v, KernelValue)})
        for n in names:
            template = then_env[n] if n in then_env else else_env[n]
            self.env[n] = merged.get(n) or rebuild(template, results)
        self.env.update(lone)

    def _changed(self, before: dict[str, Any], a: dict[str, Any], b: dict[str, Any],
                 loc: SourceLoc) -> list[str]:
        names = []
        for n in dict.fromkeys([*a, *b]):
            va, vb = a.get(n), b.get(n)
            if va is vb or not isinstance(va or vb, KernelValue):
                continue
            if va is not None and vb is not None and type_of(va) != type_of(vb):
                message = (f"variable '{n}' is {type_of(va)!r} on one branch and "
                           f"{type_of(vb)!r} on the other", self.assign_locs.get(n, loc))
                if n in before:
                    raise KernelTypeError(*message)
                # two branch-local variables that share a name: neither outlives the if, and
                # reading the name after it is this error (frontend/expr.py)
                self.__dict__.setdefault("type_conflicts", {})[n] = message
                continue
            names.append(n)
        return names

    def loop_region(self, carried: list[str], extras: list[Var],
                    cond_fn: Callable[[list[Var]], Var],
                    body_fn: Callable[[list[Var]], list[Var]], loc: SourceLoc) -> None:
        """A while loop over `extras` (e.g. a counter) plus the carried variables."""
        # a tile the loop rebinds lives in a buffer of the loop's own (values.TileVal)
        templates = [tiles.copy(self.ctx_at(loc), v) if isinstance(v, TileVal) else v
                     for v in (self.env[n] for n in carried)]
        inits = list(extras) + [v for t in templates for v in flatten(t)]
        params = [self.b.new_var(v.type) for v in inits]
        k = len(extras)
        outer = self.env
        loop_env = dict(outer)
        it = iter(params[k:])
        for n, t in zip(carried, templates, strict=True):
            loop_env[n] = rebuild(t, it)
        self.b.open_block()
        self.env = dict(loop_env)
        cond_blk = self.b.close_block([cond_fn(params[:k])])
        self.b.open_block()
        self.env = dict(loop_env)
        nxt = body_fn(params[:k])
        flat = self._carried_after_body(carried, templates, loc)
        body_blk = self.b.close_block(nxt + flat)
        results = self.b.emit_loop(tuple(inits), tuple(params), cond_blk, body_blk, loc)
        self.env = outer
        it = iter(results[k:])
        for n, t in zip(carried, templates, strict=True):
            self.env[n] = rebuild(t, it)

    def _carried_after_body(self, carried: list[str], templates: list[Value],
                            loc: SourceLoc) -> list[Var]:
        flat: list[Var] = []
        for n, t in zip(carried, templates, strict=True):
            v = self.env.get(n)
            if v is None or type_of(v) != type_of(t):
                got = "undefined" if v is None else repr(type_of(v))
                raise KernelTypeError(f"variable '{n}' is {type_of(t)!r} before the loop but "
                                      f"{got} after its body", self.assign_locs.get(n, loc))
            if isinstance(t, TileVal):
                assert isinstance(v, TileVal)
                tiles.settle(self.ctx_at(loc), v, t)
            flat.extend(flatten(v))
        return flat

    def carried_names(self, body: list[ast.stmt]) -> list[str]:
        # an array passed to a call is never rebound by it (no builtin or func writes back an
        # array variable), so it is carried only when assigned: every access then stays
        # visibly rooted in a kernel argument (autodiff/access.py)
        assigned = set(assigned_names(body, calls=False))
        names = [n for n in assigned_names(body)
                 if n in self.env and isinstance(self.env[n], KernelValue)
                 and not isinstance(self.env[n], Literal)
                 and (not isinstance(self.env[n], ArrayVal) or n in assigned)]
        for f in (BREAK, RETURN, RETVAL):
            if f in self.env and f not in names:
                names.append(f)
        return names

    def continue_cond(self, test: Var, loc: SourceLoc) -> Var:
        """The loop test, false once a break or return flag is set."""
        for f in (BREAK, RETURN):
            if f in self.env:
                test = self.b.op("and", (test, self.b.op("not", (self.env[f],), loc)), loc)
        return test

    def expr_IfExp(self, node: ast.IfExp) -> Value:
        """`a if c else b` runs only the chosen branch (as Warp) when a branch can have an effect
        or read memory (a call, a subscript); plain arithmetic is selected branch-free."""
        cond = self.value(node.test)
        if isinstance(cond, Literal) or (all(_plain(n) for n in (node.body, node.orelse))
                                         and not self._names_an_array(node.body)):
            return super().expr_IfExp(node)
        loc = self.info.loc(node)
        first, second = node.body, node.orelse
        c = self.truth_at(cond, loc)
        if isinstance(first, ast.Constant):  # lower the other branch first: it fixes the type
            first, second = second, first
            c = self.b.op("not", (c,), loc)
        seen: list[Any] = []

        def branch(e: ast.expr) -> None:
            v = self.value(e)
            if isinstance(v, Literal):
                v = materialize(self.ctx_at(loc), v, type_of(seen[0]) if seen else None)
            seen.append(v)
            self.env[IFEXP] = v

        outer = self.env.get(IFEXP)
        self.if_region(c, lambda: branch(first), lambda: branch(second), loc)
        # both branches giving the very same value leave nothing to merge: that value it is
        value = self.env.pop(IFEXP, None)
        if value is None:
            value = seen[0]
        if outer is not None:
            self.env[IFEXP] = outer
        return value  # type: ignore[no-any-return]

    def _names_an_array(self, e: ast.expr) -> bool:
        """Whether `e` is a name bound to an array (`ids = a if c else b` picks an array: the
        branches merge its words, as an if statement does; `wp.where` selects numbers)."""
        return isinstance(e, ast.Name) and isinstance(self.env.get(e.id), ArrayVal)

    def expr_BoolOp(self, node: ast.BoolOp) -> Value:
        """`a and b` / `a or b` stop at the first operand that decides (as in Warp) when a
        later operand calls or indexes (`if arr and arr[i] == 0`)."""
        if all(_plain(v) for v in node.values[1:]):
            return super().expr_BoolOp(node)
        loc = self.info.loc(node)
        is_and = isinstance(node.op, ast.And)
        acc = self.value(node.values[0])
        outer = self.env.get(BOOLOP)
        for operand in node.values[1:]:
            if isinstance(acc, Literal):
                if bool(acc.value) != is_and:
                    break  # decided at compile time
                acc = self.value(operand)
                continue
            c = self.truth_at(acc, loc)

            def rest(e: ast.expr = operand) -> None:
                self.env[BOOLOP] = self.truth_at(self.value(e), loc)

            def decided() -> None:
                self.env[BOOLOP] = self.flag(not is_and, loc)

            if is_and:
                self.if_region(c, rest, decided, loc)
            else:
                self.if_region(c, decided, rest, loc)
            acc = self.env.pop(BOOLOP)
        if outer is not None:
            self.env[BOOLOP] = outer
        return acc if not isinstance(acc, Literal) else Literal(bool(acc.value))

    def truth_at(self, v: Value, loc: SourceLoc) -> Var:
        return truth(self.ctx_at(loc), v)
