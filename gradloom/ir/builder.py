"""Builds IR: fresh SSA variables, typed op emission, and nested blocks for regions."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from ..errors import KernelTypeError, SourceLoc
from ..types import ScalarType
from .nodes import Block, Custom, If, Loop, Op, Stmt, Var
from .prims import PRIMS, Effect, result_type

#: whether the IR being lowered is for autodiff (an adjoint or tangent kernel): operations with
#: a fast form autodiff has no rule for (tile_matmul's `lgemm`) emit their scalar form instead
DIFFERENTIATED: ContextVar[bool] = ContextVar("gradloom_differentiated", default=False)
#: the block width `wp.block_dim()` gives in the kernel being lowered: 1, or a CPU launch's
#: block_dim under `config.enable_cpu_blocks` (kernel.Kernel.block_variant)
BLOCK_DIM: ContextVar[int] = ContextVar("gradloom_block_dim", default=1)
#: whether the kernel being lowered has a backward pass (not built with enable_backward=False,
#: on it or its module): what Warp refuses to differentiate refuses to compile there
BACKWARD: ContextVar[bool] = ContextVar("gradloom_backward", default=True)


class Builder:
    """Appends statements to the innermost open block; regions open and close nested blocks."""

    def __init__(self) -> None:
        self._next_id = 0
        self._blocks: list[list[Stmt]] = [[]]
        self.locs: list[SourceLoc] = []
        self._defs: dict[int, Op] = {}

    def new_var(self, t: ScalarType) -> Var:
        self._next_id += 1
        return Var(self._next_id, t)

    def op(
        self,
        prim: str,
        args: tuple[Var, ...] | list[Var],
        loc: SourceLoc,
        attr: Any = None,
        type: ScalarType | None = None,
    ) -> Var:
        """Emit an op with a result and return the result variable."""
        result = self._emit(prim, tuple(args), loc, attr, type)
        assert result is not None, prim
        return result

    def effect(self, prim: str, args: tuple[Var, ...] | list[Var], loc: SourceLoc,
               attr: Any = None) -> None:
        """Emit an op run only for its side effect (store, check)."""
        self._emit(prim, tuple(args), loc, attr, None)

    def _emit(self, prim: str, args: tuple[Var, ...], loc: SourceLoc, attr: Any,
              type: ScalarType | None) -> Var | None:
        try:
            rt = result_type(prim, tuple(a.type for a in args), type)
        except TypeError as exc:
            raise KernelTypeError(f"{prim}: {exc}", loc) from None
        if Effect.ATOMIC in PRIMS[prim].effects:
            rt = args[2].type
        result = None if rt is None else self.new_var(rt)
        op = Op(prim, args, result, loc, attr)
        self._blocks[-1].append(op)
        if result is not None:
            self._defs[result.id] = op
        return result

    def defining_op(self, v: Var) -> Op | None:
        """The op this builder emitted that defines v (None for parameters, region results
        and variables of other builders)."""
        op = self._defs.get(v.id)
        return op if op is not None and op.result is v else None

    def hoist(self, prim: str, loc: SourceLoc, attr: Any = None,
              type: ScalarType | None = None) -> Var:
        """Emit an operand-less op at the top of the outermost block, so its result is in
        scope everywhere (a tile's buffer: one per op site, not one per loop trip)."""
        rt = result_type(prim, (), type)
        assert rt is not None, prim
        result = self.new_var(rt)
        self._blocks[0].insert(0, Op(prim, (), result, loc, attr))
        return result

    def constant_value(self, v: Var) -> Any:
        """The value of v when a `const` op in an open block defines it, else None (builtins
        that need compile-time numbers accept `wp.constant` values)."""
        for block in self._blocks:
            for s in block:
                if isinstance(s, Op) and s.result is v:
                    return s.attr if s.prim == "const" else None
        return None

    def append(self, s: Stmt) -> None:
        """Append a statement built elsewhere (its variables come from this builder)."""
        self._blocks[-1].append(s)

    def const(self, value: Any, t: ScalarType, loc: SourceLoc) -> Var:
        return self.op("const", (), loc, attr=value, type=t)

    def open_block(self) -> None:
        self._blocks.append([])

    def reopen_block(self, block: Block) -> None:
        """Continue appending to a closed block (to add values a region merge needs)."""
        self._blocks.append(list(block.stmts))

    def close_block(self, yields: tuple[Var, ...] | list[Var] = ()) -> Block:
        stmts = self._blocks.pop()
        return Block(tuple(stmts), tuple(yields))

    def emit_if(self, cond: Var, then: Block, orelse: Block, loc: SourceLoc) -> tuple[Var, ...]:
        results = tuple(self.new_var(v.type) for v in then.yields)
        self._blocks[-1].append(If(cond, then, orelse, results, loc))
        return results

    def emit_loop(self, inits: tuple[Var, ...], params: tuple[Var, ...], cond: Block,
                  body: Block, loc: SourceLoc) -> tuple[Var, ...]:
        results = tuple(self.new_var(v.type) for v in inits)
        self._blocks[-1].append(Loop(inits, params, cond, body, results, loc))
        return results

    def emit_custom(self, inputs: tuple[Var, ...], body: Block, seeds: tuple[Var, ...],
                    adjoint: Block, loc: SourceLoc) -> tuple[Var, ...]:
        results = tuple(self.new_var(v.type) for v in body.yields)
        self._blocks[-1].append(Custom(inputs, body, results, seeds, adjoint, loc))
        return results

    def loc_index(self, loc: SourceLoc) -> int:
        """Register a source location that runtime errors can refer to by index."""
        self.locs.append(loc)
        return len(self.locs) - 1

    def finish(self) -> Block:
        assert len(self._blocks) == 1, "unbalanced blocks"
        return Block(tuple(self._blocks[0]), ())
