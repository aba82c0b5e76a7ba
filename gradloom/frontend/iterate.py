"""Loops driven by state a call advances: `while wp.hash_grid_query_next(q, i):`, `for i in query:`.

The IR's loop test yields one bool and cannot rebind variables, so such loops are rotated: the
test (or iterator step) runs once before the loop and again at the end of every trip — not
after a `break` or `return`, which leave the loop without testing again, as in Python — and
the loop runs while its last result holds. The variables the test rebinds are carried.

Iterable values are structs whose class has `gl_iterate(ctx, value, item)` returning
(found, the advanced value, the item), e.g. `wp.HashGridQuery` (builtins/hash_grid.py).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ..builtins.values import Ctx, StructVal, Value
from ..errors import SourceLoc, UnsupportedSyntaxError
from ..ir.nodes import Var
from .control import BREAK, RETURN
from .loops import LoopLowerer

Step = Callable[[Ctx, Value, Var | None], tuple[Var, Value, Var]]


class IterLowerer(LoopLowerer):
    """Rotated while loops and `for` loops over iterable values (mixed into the Lowerer)."""

    def test_writes(self, test: ast.expr) -> list[str]:
        """The variables evaluating a loop test would rebind (output arguments of builtins),
        found by lowering it once into a block that is then dropped."""
        saved = self.env
        self.env = dict(saved)
        self.b.open_block()
        try:
            self.value(test)
            changed = [n for n, v in self.env.items() if saved.get(n) is not v]
        finally:
            self.b.close_block()
            self.env = saved
        return changed

    def rotated_while(self, node: ast.While, writes: list[str]) -> None:
        loc = self.info.loc(node)
        flag = f"$while{id(node)}"

        def advance() -> None:
            self.env[flag] = self.truth_at(self.value(node.test), loc)

        advance()
        self.in_loop(node, loc, lambda ps: self.env[flag], lambda ps: [], [],
                     post_body=self.unless_left(advance, loc),
                     also_carried=(*writes, flag))
        self.env.pop(flag, None)

    def iterator_step(self, node: ast.For) -> tuple[Value, Step] | None:
        """The value and step of `for x in value:` when value is iterable (None for range)."""
        it = node.iter
        if not isinstance(it, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)) or (
                isinstance(it, ast.Call) and self.expr(it.func) in (range, reversed)):
            return None
        value = self.expr(it)
        step = getattr(value.type.cls, "gl_iterate", None) if isinstance(value, StructVal) \
            else None
        if step is None:
            raise UnsupportedSyntaxError("for loops must iterate over range(...) or a query "
                                         "(e.g. wp.hash_grid_query(...))", self.info.loc(node))
        return value, step

    def for_over_iterator(self, node: ast.For, value: Value, step: Step) -> None:
        loc = self.info.loc(node)
        if not isinstance(node.target, ast.Name):
            raise UnsupportedSyntaxError("a loop target other than a single name is not "
                                         "supported", loc)
        target = node.target.id
        state, item, flag = (f"${k}{id(node)}" for k in ("iter", "item", "while"))

        def advance() -> None:
            # the builder of this lowering: loops.py also lowers the loop into a scratch one
            found, nxt, current = step(self.ctx_at(loc), self.env[state], self.env.get(item))
            self.env[state], self.env[item], self.env[flag] = nxt, current, found

        def enter(ps: list[Var]) -> list[Var]:
            self.env[target] = self.env[item]
            self.assign_locs[target] = loc
            return []

        self.env[state] = value
        advance()
        self.in_loop(node, loc, lambda ps: self.env[flag], enter, [],
                     post_body=self.unless_left(advance, loc),
                     also_carried=(state, item, flag))
        for name in (state, item, flag):
            self.env.pop(name, None)

    def unless_left(self, fn: Callable[[], None], loc: SourceLoc) -> Callable[[], None]:
        """fn, skipped on the trip where a `break` or `return` leaves the loop."""
        def guarded() -> None:
            flags = [self.env[f] for f in (BREAK, RETURN) if f in self.env]
            if not flags:
                fn()
                return
            left = flags[0]
            for f in flags[1:]:
                left = self.b.op("or", (left, f), loc)
            self.if_region(self.b.op("not", (left,), loc), fn, lambda: None, loc)
        return guarded
