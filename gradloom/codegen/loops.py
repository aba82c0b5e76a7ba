"""Kernel loops in LLVM IR, strip-mined so that a long loop polls for Ctrl-C (codegen/signals.py)
between strips, while each strip stays a loop LLVM unrolls and vectorises as before.

Three shapes, chosen per loop:

- counted (`for k in range(a, b, step)`: the condition is `k < b` or `k > b` with b
  loop-invariant and k stepping by a constant): each strip runs to `min(b, k + POLL_TRIPS*step)`,
  one compare, so LLVM still computes the strip's trip count (unrolling, vectorising);
- any other loop with a pure condition: the strip's exit tests the condition and a trip count;
- a condition with side effects (an atomic, a print) must not run twice where a strip ends, so
  the trip count is tested first, in an exit of its own.

A loop that provably ends within POLL_TRIPS trips (`for j in range(3)`, also with a `break`)
is emitted plain, with no strips and no poll: a Ctrl-C waits no longer than between two strips,
and LLVM is spared a second loop around it (mujoco-warp's kernels hold hundreds of these; the
nest cost compile time in every loop pass).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import Block, If, Loop, Op, Var, walk_ops
from ..ir.prims import PRIMS
from .function_text import FunctionText
from .llvm_types import reg_type
from .signals import POLL_TRIPS


@dataclass(frozen=True)
class Counted:
    """A loop's induction variable: its param index, the bound, the step, and "lt" or "gt"."""

    index: int
    bound: Var
    step: int
    pred: str


class LoopEmitter:
    """The loop half of KernelEmitter (which provides names, blocks and the op rules)."""

    f: FunctionText
    names: dict[int, str]
    defs: dict[int, Op]

    def name(self, v: Var) -> str:
        raise NotImplementedError

    def define(self, v: Var) -> str:
        raise NotImplementedError

    def block(self, b: Block) -> None:
        raise NotImplementedError

    def poll(self, go_on: str) -> None:
        """Continue at go_on unless the launch was interrupted (per target: entry_*.py); ends
        in a block of its own, the one branching to go_on."""
        raise NotImplementedError

    def loop_phi_type(self, p: Var) -> str:
        """The LLVM type of a loop parameter's phi (a SIMD loop's varying values: vectors)."""
        return reg_type(p.type)

    def loop_value(self, p: Var, v: Var) -> str:
        """v's name as a value of loop parameter p's phi type."""
        return self.name(v)

    def loop_result(self, r: Var, p: Var) -> None:
        """A loop's result is its parameter's last value."""
        self.names[r.id] = self.name(p)

    def emit_loop(self, s: Loop) -> None:
        """A while loop, strip-mined (see the module's docstring for the three shapes)."""
        if self.short(s):
            self.emit_plain_loop(s)
            return
        counted = self.counted(s)
        impure = any(PRIMS[op.prim].side_effect and op.prim != "check_bounds"
                     for op in walk_ops(s.cond))
        f = self.f
        labels = {k: f.fresh(k) for k in ("strip", "loop", "body", "stripend", "poll", "endloop")}
        pre = f.label
        f.emit(f"br label %{labels['strip']}")
        f.start_block(labels["strip"])
        outer_at = len(f.lines)
        outer = [f.fresh("%strip") for _ in s.params]
        limit = self.strip_limit(s, counted, outer) if counted else ""
        f.emit(f"br label %{labels['loop']}")
        f.start_block(labels["loop"])
        phi_at = len(f.lines)
        for p in s.params:
            self.define(p)
        trip, cond = self.strip_test(s, counted, impure, limit, labels)
        self.strip_body(s, labels, outer, trip, phi_at)
        if not impure or counted:
            f.start_block(labels["stripend"])
            more = cond or self.counted_cond(s, counted)
            f.emit(f"br i1 {more}, label %{labels['poll']}, label %{labels['endloop']}")
        f.start_block(labels["poll"])
        self.poll(labels["strip"])
        f.lines[outer_at:outer_at] = [
            f"  {o} = phi {self.loop_phi_type(p)} [{self.loop_value(p, i)}, %{pre}], "
            f"[{self.name(p)}, %{f.label}]"
            for p, o, i in zip(s.params, outer, s.inits, strict=True)]
        f.start_block(labels["endloop"])
        for r, p in zip(s.results, s.params, strict=True):
            self.loop_result(r, p)

    def strip_body(self, s: Loop, labels: dict[str, str], outer: list[str], trip: str,
                   phi_at: int) -> None:
        """A strip's body and back edge; the loop head's phis (at line phi_at) take each
        parameter from the strip's entry values (`outer`) or the body's yields, and the trip
        count (`trip`, where the strip counts trips) from 0 or its increment."""
        f = self.f
        f.start_block(labels["body"])
        self.block(s.body)
        back = f.label
        phis = [f"  {self.name(p)} = phi {self.loop_phi_type(p)} [{o}, %{labels['strip']}], "
                f"[{self.loop_value(p, y)}, %{back}]"
                for p, o, y in zip(s.params, outer, s.body.yields, strict=True)]
        if trip:
            f.emit(f"{trip}.next = add nuw nsw i64 {trip}, 1")
            phis.append(f"  {trip} = phi i64 [0, %{labels['strip']}], [{trip}.next, %{back}]")
        f.emit(f"br label %{labels['loop']}")
        f.lines[phi_at:phi_at] = phis

    def emit_plain_loop(self, s: Loop) -> None:
        """A loop with no strips and no poll: head (phis, condition), body, back edge."""
        f = self.f
        labels = {k: f.fresh(k) for k in ("loop", "body", "endloop")}
        pre = f.label
        f.emit(f"br label %{labels['loop']}")
        f.start_block(labels["loop"])
        phi_at = len(f.lines)
        for p in s.params:
            self.define(p)
        self.block(s.cond)
        f.emit(f"br i1 {self.name(s.cond.yields[0])}, label %{labels['body']}, "
               f"label %{labels['endloop']}")
        f.start_block(labels["body"])
        self.block(s.body)
        back = f.label
        f.emit(f"br label %{labels['loop']}")
        f.lines[phi_at:phi_at] = [
            f"  {self.name(p)} = phi {self.loop_phi_type(p)} [{self.loop_value(p, i)}, %{pre}], "
            f"[{self.loop_value(p, y)}, %{back}]"
            for p, i, y in zip(s.params, s.inits, s.body.yields, strict=True)]
        f.start_block(labels["endloop"])
        for r, p in zip(s.results, s.params, strict=True):
            self.loop_result(r, p)

    def short(self, s: Loop) -> bool:
        """Whether the loop ends within POLL_TRIPS trips whatever it computes: its condition
        is, alone or and-ed with other tests, `k < C` (`k > C`) for a counter k from a constant
        start stepping by a constant towards the constant C."""
        ifs = {r.id: (st, k) for st in s.cond.stmts if isinstance(st, If)
               for k, r in enumerate(st.results)}
        return any(self.bounded_by(s, cmp) for cmp in self.conjuncts(s.cond.yields[0], ifs))

    def conjuncts(self, v: Var, ifs: dict[int, tuple[If, int]]) -> list[Op]:
        """The ops and-ed together into the boolean v: `and` ops, and the ifs a short-circuit
        `c and x` lowers to (`x` if c else False); v's own op when it is neither."""
        if v.id in ifs:
            st, k = ifs[v.id]
            if self.constant(st.orelse.yields[k]) is False:
                return self.conjuncts(st.cond, ifs)
            return []
        d = self.defs.get(v.id)
        if d is None:
            return []
        if d.prim == "and" and v.type.kind == "b":
            return [c for a in d.args for c in self.conjuncts(a, ifs)]
        return [d]

    def bounded_by(self, s: Loop, cmp: Op) -> bool:
        if cmp.prim not in ("lt", "gt") or cmp.args[0] not in s.params:
            return False
        k = cmp.args[0]
        if not k.type.is_int:
            return False
        index = s.params.index(k)
        start, end = self.constant(s.inits[index]), self.constant(cmp.args[1])
        step = self.step_of(s.body.yields[index], k)
        if start is None or end is None or step is None or (step > 0) != (cmp.prim == "lt"):
            return False
        bits = k.type.bits if k.type.kind == "u" else k.type.bits - 1
        low = 0 if k.type.kind == "u" else -(1 << bits)
        if not low <= end + step < 1 << bits:  # the last step must not wrap around
            return False
        return (end - start) // step <= POLL_TRIPS

    def constant(self, v: Var) -> int | bool | None:
        """v's value when v is an integer or boolean constant."""
        d = self.defs.get(v.id)
        if d is None or d.prim != "const" or not (v.type.is_int or v.type.kind == "b"):
            return None
        return bool(d.attr) if v.type.kind == "b" else int(d.attr)

    def strip_test(self, s: Loop, counted: Counted | None, impure: bool, limit: str,
                   labels: dict[str, str]) -> tuple[str, str]:
        """The strip's exit test, ending the loop's head; (the trip counter's name, the
        condition's value where the strip's end may reuse it), "" where there is none."""
        f = self.f
        if counted:
            p = s.params[counted.index]
            go = f.fresh("%instrip")
            f.emit(f"{go} = icmp {self.predicate(counted, p)} {reg_type(p.type)} "
                   f"{self.name(p)}, {limit}")
            f.emit(f"br i1 {go}, label %{labels['body']}, label %{labels['stripend']}")
            return "", ""
        trip, short = f.fresh("%trip"), f.fresh("%short")
        f.emit(f"{short} = icmp ult i64 {trip}, {POLL_TRIPS}")
        if impure:
            cond_l = f.fresh("cond")
            f.emit(f"br i1 {short}, label %{cond_l}, label %{labels['poll']}")
            f.start_block(cond_l)
        self.block(s.cond)
        cond = self.name(s.cond.yields[0])
        if impure:
            f.emit(f"br i1 {cond}, label %{labels['body']}, label %{labels['endloop']}")
            return trip, ""
        go = f.fresh("%go")
        f.emit(f"{go} = and i1 {cond}, {short}")
        f.emit(f"br i1 {go}, label %{labels['body']}, label %{labels['stripend']}")
        return trip, cond

    def counted_cond(self, s: Loop, counted: Counted | None) -> str:
        """A counted loop's condition, `k < bound` (or `>`), emitted where the strip ends."""
        assert counted is not None
        p = s.params[counted.index]
        out = self.f.fresh("%more")
        self.f.emit(f"{out} = icmp {self.predicate(counted, p)} {reg_type(p.type)} "
                    f"{self.name(p)}, {self.name(counted.bound)}")
        return out

    @staticmethod
    def predicate(c: Counted, p: Var) -> str:
        return ("u" if p.type.kind == "u" else "s") + c.pred

    def strip_limit(self, s: Loop, c: Counted, outer: list[str]) -> str:
        """Where the strip starting at the induction variable's value k ends:
        min(bound, k + POLL_TRIPS * step) for an increasing k (max(...) for a decreasing one),
        computed without overflow."""
        f = self.f
        p = s.params[c.index]
        ty, k, bound = reg_type(p.type), outer[c.index], self.name(c.bound)
        room, inside, far, both, next_k, limit = (f.fresh("%strip") for _ in range(6))
        span = POLL_TRIPS * abs(c.step)
        a, b = (bound, k) if c.pred == "lt" else (k, bound)
        f.emit(f"{room} = sub {ty} {a}, {b}")
        f.emit(f"{inside} = icmp {self.predicate(c, p)} {ty} {k}, {bound}")
        f.emit(f"{far} = icmp ugt {ty} {room}, {span}")
        f.emit(f"{both} = and i1 {inside}, {far}")
        f.emit(f"{next_k} = {'add' if c.pred == 'lt' else 'sub'} {ty} {k}, {span}")
        f.emit(f"{limit} = select i1 {both}, {ty} {next_k}, {ty} {bound}")
        return limit

    def counted(self, s: Loop) -> Counted | None:
        """The loop's induction variable, when its condition is just `k < b` (or `k > b`) with
        b defined outside the loop and k stepping by a constant in that direction."""
        ops = list(s.cond.stmts)
        if len(ops) != 1 or not isinstance(ops[0], Op) or ops[0].prim not in ("lt", "gt"):
            return None
        cmp = ops[0]
        if cmp.result is not s.cond.yields[0] or not cmp.args[0].type.is_int:
            return None
        k, bound = cmp.args
        inside = {p.id for p in s.params} | {op.result.id for op in walk_ops(s.body)
                                              if op.result is not None}
        if k not in s.params or bound.id in inside:
            return None
        index = s.params.index(k)
        step = self.step_of(s.body.yields[index], k)
        if step is None or (step > 0) != (cmp.prim == "lt"):
            return None
        if POLL_TRIPS * abs(step) >= 1 << (k.type.bits - 1):
            return None
        return Counted(index, bound, step, cmp.prim)

    def step_of(self, y: Var, k: Var) -> int | None:
        """c when y is `k + c` for an integer constant c != 0."""
        d = self.defs.get(y.id)
        if d is None or d.prim != "add" or d.args[0] is not k:
            return None
        c = self.defs.get(d.args[1].id)
        if c is None or c.prim != "const" or isinstance(c.attr, bool):
            return None
        step = int(c.attr)
        return step or None
