"""Where the reverse sweep finds primal values and adjoints: one scope per region being reversed.

Each region of the primal IR (the kernel body, an if-branch, a loop body) is reversed inside a
scope. A scope answers two questions for the derivative rules:

* `primal(v)`: the variable holding v's forward value *here*. At the top level that is v itself;
  inside a reversed branch it is the extra result the forward `if` yields for it; inside a
  reversed loop body it is recomputed at the start of the iteration (integer induction variables,
  pure ops, loads of arrays the kernel does not write) or popped from the per-thread stack that
  the forward loop pushed it on.
* `get_adj(v)` / `set_adj(v, a)`: the running adjoint of v. Adjoints of variables from outside a
  reversed loop become values the reverse loop carries from iteration to iteration.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..ir.nodes import Loop, Op, Var
from ..ir.prims import PRIMS, Effect
from ..types import ScalarType, int64
from .access import KernelAccess
from .emit import Emitter, MBlock


class Reverse(Protocol):
    """What scopes use of the adjoint under construction (reverse.py's `Reverse`)."""

    em: Emitter
    access: KernelAccess

    def recomputable_load(self, op: Op) -> bool: ...

#: the only effect an op recomputed in the reverse loop may have (and only for loads of arrays
#: that nothing writes during the launch); anything else is pushed in the forward loop
_RECOMPUTABLE = Effect.READ
_NOT_RECOMPUTABLE = ~_RECOMPUTABLE


class Scope:
    """The top level of the kernel: every forward value is in scope as itself."""

    def __init__(self, ad: Reverse, parent: Scope | None) -> None:
        self.ad = ad
        self.parent = parent
        self.adj: dict[Var, Var] = {}

    # -- the Emit protocol the derivative rules use ------------------------------------------

    def op(self, prim: str, *args: Var, type: ScalarType | None = None) -> Var:
        return self.ad.em.op(prim, *args, type=type)

    def effect(self, prim: str, *args: Var, attr: Any = None) -> None:
        self.ad.em.effect(prim, *args, attr=attr)

    def const(self, value: float, t: ScalarType) -> Var:
        return self.ad.em.const(value, t)

    def primal(self, v: Var) -> Var:
        return v

    # -- adjoints -----------------------------------------------------------------------------

    def get_adj(self, v: Var) -> Var | None:
        return self.adj.get(v)

    def peek_adj(self, v: Var) -> Var | None:
        """v's adjoint if anything has given it one, without making it a carried value."""
        if v in self.adj or self.parent is None or self.defines(v):
            return self.adj.get(v)
        return self.parent.peek_adj(v)

    def defines(self, v: Var) -> bool:
        """v belongs to this scope's region (its adjoint starts here)."""
        return self.parent is None

    def set_adj(self, v: Var, a: Var) -> None:
        self.adj[v] = a

    def accumulate(self, v: Var, contribution: Var) -> None:
        if not v.type.is_float:
            return
        d = self.ad.access.defs.get(v.id)
        if d is not None and d.prim == "const":
            return
        cur = self.get_adj(v)
        self.set_adj(v, contribution if cur is None else self.ad.em.op("add", cur, contribution))


class BranchScope(Scope):
    """One reversed branch of an `if`; `extra` maps the branch's values to the if's results."""

    def __init__(self, ad: Reverse, parent: Scope, extra: dict[Var, Var]) -> None:
        super().__init__(ad, parent)
        self.extra = extra
        self.touched: dict[Var, None] = {}  # outer variables whose adjoint this branch changed

    def primal(self, v: Var) -> Var:
        assert self.parent is not None
        return self.parent.primal(self.extra.get(v, v))

    def defines(self, v: Var) -> bool:
        return v in self.extra

    def get_adj(self, v: Var) -> Var | None:
        if v in self.adj or v in self.extra:
            return self.adj.get(v)
        assert self.parent is not None
        return self.parent.get_adj(v)

    def set_adj(self, v: Var, a: Var) -> None:
        self.adj[v] = a
        if v not in self.extra:
            self.touched[v] = None


class LoopScope(Scope):
    """One reversed iteration of a loop body, run for the forward iterations in reverse order."""

    def __init__(self, ad: Reverse, parent: Scope, loop: Loop, local: set[Var],
                 outer_block: MBlock, iteration: Var) -> None:
        super().__init__(ad, parent)
        self.loop = loop
        self.local = local
        self.outer_block = outer_block  # where the reverse loop goes: its inits are made there
        self.iteration = iteration  # int64: the forward iteration being reversed (0-based)
        self.mapped: dict[Var, Var] = {}
        self.pushed: list[Var] = []  # forward values the forward loop pushes, in push order
        self.pops: dict[Var, Var] = {}
        self.prelude: list[Op] = []  # recomputations, at the start of each reverse iteration
        self.carried: list[tuple[Var, Var, Var]] = []  # (outer var, its adjoint param, init)

    def primal(self, v: Var) -> Var:
        if v in self.mapped:
            return self.mapped[v]
        assert self.parent is not None
        if v not in self.local:
            return self.parent.primal(v)
        r = self._induction(v) or self._recompute(v)
        if r is None:
            r = self.pops[v] = self.ad.em.new_var(v.type)
            self.pushed.append(v)
        self.mapped[v] = r
        return r

    def _emit(self, prim: str, args: tuple[Var, ...], type: ScalarType | None = None,
              attr: object = None) -> Var:
        made = self.ad.em.make(prim, args, type, attr)
        self.prelude.append(made)
        assert made.result is not None
        return made.result

    def _recompute(self, v: Var) -> Var | None:
        d = self.ad.access.defs.get(v.id)
        if d is None or d.result is not v or PRIMS[d.prim].has(_NOT_RECOMPUTABLE):
            return None
        if Effect.READ in PRIMS[d.prim].effects and not self.ad.recomputable_load(d):
            return None
        args = tuple(self.primal(a) for a in d.args)
        return self._emit(d.prim, args, v.type, d.attr)

    def _induction(self, v: Var) -> Var | None:
        """An integer loop variable stepped by a loop-invariant amount: init + i * step."""
        if v not in self.loop.params or not v.type.is_int:
            return None
        j = self.loop.params.index(v)
        d = self.ad.access.defs.get(self.loop.body.yields[j].id)
        if d is None or d.prim not in ("add", "sub") or v not in d.args:
            return None
        step = d.args[1] if d.args[0] is v else d.args[0]
        if step is v or (d.prim == "sub" and d.args[0] is not v):
            return None
        sd = self.ad.access.defs.get(step.id)
        if step in self.local and (sd is None or sd.prim != "const"):
            return None
        assert self.parent is not None
        i = self.iteration
        if v.type != int64:
            i = self._emit("cast", (i,), v.type)
        offset = self._emit("mul", (i, self.primal(step)))
        return self._emit(d.prim, (self.parent.primal(self.loop.inits[j]), offset))

    def defines(self, v: Var) -> bool:
        return v in self.local

    def get_adj(self, v: Var) -> Var | None:
        if v in self.adj or v in self.local:
            return self.adj.get(v)
        assert self.parent is not None
        init = self.parent.get_adj(v)
        if init is None:
            zero = self.ad.em.make("const", (), v.type, 0.0)
            self.outer_block.stmts.append(zero)
            assert zero.result is not None
            init = zero.result
        param = self.ad.em.new_var(v.type)
        self.carried.append((v, param, init))
        self.adj[v] = param
        return param
