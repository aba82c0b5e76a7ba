"""Forward mode on scalar IR: a kernel's tangent kernel computes its values and their tangents.

The tangent kernel takes the kernel's arguments and then, for each parameter holding float
arrays, a tangent argument of the same type: its arrays hold the tangents, laid out like the
data (same strides), so an element's tangent is at the element's byte offset. Where an array's
data pointer is at argument offset `off`, its tangent's is at `tangent_of(off)` (the caller
knows the parameters: pipeline.py). Per thread the tangent kernel runs the forward code
unchanged and next to each float value its tangent (a dual number), from each primitive's
forward rule (`Prim.forward_rule` in ir/prims.py: its own `jvp`, else the one its `vjp`
implies) and, for memory primitives, from their `MemoryRule` (the table `MEMORY_RULES` below):
a load reads the tangent where the value is read, a store writes it where the value goes, an
atomic_add adds it there. Branches yield their values' tangents too, loops carry them. A zero
tangent is not materialised (None) until a branch or loop needs a value.

The tangent kernel uses only the forward's primitives on ordinary array arguments, so reverse
mode differentiates it like any kernel: reverse-over-forward gives Hessian-vector products.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..abi import GRAD_SLOT
from ..errors import UNKNOWN_LOC, CompileError, SourceLoc
from ..ir.nodes import Block, Custom, If, KernelIR, Loop, Op, Var, max_var_id, walk_ops
from ..ir.prims import PRIMS, Effect, MemoryRule, Prim
from ..passes.custom import custom_as_if
from ..types import ScalarType, ptr
from .access import KernelAccess, analyze
from .emit import Emitter, MBlock, MIf, MLoop, freeze


def tangent_kernel(kernel: KernelIR, tangent_of: Callable[[int], int | None]) -> KernelIR:
    """The tangent kernel: the kernel's writes, plus the tangents of what it writes written
    into the tangent arrays, given the tangents of what it reads. `tangent_of(off)`: the
    argument offset of the tangent of the array whose data pointer is at offset `off` (None:
    the array has none, an integer array)."""
    return Forward(kernel, tangent_of).build()


#: the effects whose forward rules this module knows: a primitive with any other (tile memory,
#: the adjoint's stack and gradients) is refused with a clear error, not given a zero tangent
_LOCAL = Effect.LOCAL | Effect.LOCAL_WRITE


def _floats(op: Op) -> bool:
    return any(v.type.is_float for v in (*op.args, *([op.result] if op.result else [])))


KNOWN_EFFECTS = (Effect.READ | Effect.WRITE | Effect.ATOMIC | Effect.ACCUMULATE | Effect.IO
                 | Effect.CHECK | Effect.THREAD | Effect.PARAM)


def refusal(prim: Prim, op: Op | None = None) -> str | None:
    """Why forward mode refuses a primitive (at this op), or None. Thread-local memory that
    holds integers only (a BVH walk's stack) carries no tangent and passes; through floats
    (tiles) it is refused by the ops' jvp rules."""
    if prim.has(Effect.GRAD | Effect.STACK):
        return "adjoint kernels (forward-over-reverse) are not supported; Hessian-vector " \
               "products take reverse-over-forward (gradloom.autograd.hvp)"
    unknown = prim.effects & ~KNOWN_EFFECTS
    if unknown and not unknown & ~_LOCAL and op is not None and not _floats(op):
        return None
    if unknown:
        return f"forward mode has no rule for its effects ({unknown}) yet; use reverse mode"
    return None


class Forward:
    """One kernel's tangent kernel under construction."""

    def __init__(self, kernel: KernelIR, tangent_of: Callable[[int], int | None]) -> None:
        self.kernel = kernel
        self.tangent_of = tangent_of
        #: the tangent arguments' data pointers, by argument offset (read at the kernel's top)
        self.tangent_args: dict[int, Op] = {}
        self.access: KernelAccess = analyze(kernel)
        loc = next((op.loc for op in walk_ops(kernel.body)), UNKNOWN_LOC)
        self.em = Emitter(max_var_id(kernel.body), loc)
        #: each float value's tangent (absent: zero)
        self.tan: dict[Var, Var] = {}
        #: values whose tangent cannot be had, and why (asked for: a compile error)
        self.poison: dict[Var, tuple[str, SourceLoc]] = {}

    def build(self) -> KernelIR:
        self.block(self.kernel.body)
        self.em.cur.stmts[:0] = list(self.tangent_args.values())
        k = self.kernel
        return KernelIR(k.name + "_tangent", freeze(self.em.cur), k.launch_ndim, k.locs,
                        k.unit_strides, array_names=k.array_names)

    # -- the Emit protocol the derivative rules use -------------------------------------------

    def op(self, prim: str, *args: Var, type: ScalarType | None = None) -> Var:
        return self.em.op(prim, *args, type=type)

    def effect(self, prim: str, *args: Var, attr: Any = None) -> None:
        self.em.effect(prim, *args, attr=attr)

    def const(self, value: float, t: ScalarType) -> Var:
        return self.em.const(value, t)

    def primal(self, v: Var) -> Var:
        return v  # the tangent code runs where the values are: each is in scope as itself

    # -- tangents -----------------------------------------------------------------------------

    def tangent(self, v: Var) -> Var | None:
        if v in self.poison:
            raise CompileError(*self.poison[v])
        return self.tan.get(v)

    def tangent_or_zero(self, v: Var) -> Var:
        return self.tangent(v) or self.em.zero(v.type)

    def set_tangent(self, v: Var | None, t: Var | None) -> None:
        if v is not None and t is not None:
            self.tan[v] = t

    # -- statements ---------------------------------------------------------------------------

    def block(self, b: Block) -> None:
        for s in b.stmts:
            if isinstance(s, Op):
                self.statement(s)
            elif isinstance(s, If):
                self.branch(s)
            elif isinstance(s, Loop):
                self.loop(s)
            elif isinstance(s, Custom):
                self.custom(s)
            else:
                raise CompileError(f"forward mode has no rule for a {type(s).__name__} region "
                                   "yet", getattr(s, "loc", None))

    def statement(self, op: Op) -> None:
        prim = PRIMS[op.prim]
        why = refusal(prim, op)
        if why is not None:
            raise CompileError(f"forward mode (jvp) of '{op.prim}': {why}", op.loc)
        self.em.cur.stmts.append(op)
        if prim.memory and self.access.tracked(op):
            assert prim.memory_rule is not None
            MEMORY_RULES[prim.memory_rule](self, op)
            return
        if op.result is None or not op.result.type.is_float:
            return
        ts = tuple(self.tangent(a) if a.type.is_float else None for a in op.args)
        if all(t is None for t in ts):
            return  # constants, parameters, values of constants: tangent zero
        rule = prim.forward_rule
        if rule is None:
            raise CompileError(f"primitive '{op.prim}' has no forward-mode (jvp) rule: its entry "
                               "in ir/prims.py needs a jvp or a vjp", op.loc)
        try:
            self.set_tangent(op.result, rule(self, op, ts))
        except TypeError as e:  # a rule that refuses (or does not fit) these operands
            raise CompileError(f"forward mode (jvp) of '{op.prim}': {e}", op.loc) from None

    def branch(self, s: If) -> None:
        """The if, also yielding the tangent of each float result (zero from a branch where
        the yielded value has none)."""
        em = self.em
        blocks = []
        for blk in (s.then, s.orelse):
            em.open()
            self.block(blk)
            blocks.append(em.close())
        then_m, else_m = blocks
        then_m.yields, else_m.yields = list(s.then.yields), list(s.orelse.yields)
        results = list(s.results)
        for j, r in enumerate(s.results):
            ys = (s.then.yields[j], s.orelse.yields[j])
            if not r.type.is_float or all(self.tangent(y) is None for y in ys):
                continue
            for m, y in zip(blocks, ys, strict=True):
                em.blocks.append(m)
                m.yields.append(self.tangent_or_zero(y))
                em.blocks.pop()
            t = em.new_var(r.type)
            results.append(t)
            self.tan[r] = t
        em.cur.stmts.append(MIf(s.cond, then_m, else_m, results, s.loc))

    def loop(self, s: Loop) -> None:
        """The loop, also carrying the tangent of each float parameter whose tangent is not
        zero on entry or becomes nonzero in a trip (found by running the body's tangent code
        again until the set stops growing)."""
        carried = {j for j, p in enumerate(s.params)
                   if p.type.is_float and self.tangent(s.inits[j]) is not None}
        while True:
            saved = dict(self.tan)
            params = {j: self.em.new_var(s.params[j].type) for j in sorted(carried)}
            for j, t in params.items():
                self.tan[s.params[j]] = t
            cond, body = self.loop_blocks(s)
            grown = {j for j, y in enumerate(s.body.yields)
                     if s.params[j].type.is_float and self.tangent(y) is not None} - carried
            if not grown:
                break
            self.tan = saved
            carried |= grown
        em = self.em
        em.blocks.append(body)
        body.yields.extend(self.tangent_or_zero(s.body.yields[j]) for j in params)
        em.blocks.pop()
        inits = [*s.inits, *(self.tangent_or_zero(s.inits[j]) for j in params)]
        results = [*s.results, *(em.new_var(s.params[j].type) for j in params)]
        em.cur.stmts.append(MLoop(inits, [*s.params, *params.values()], cond, body, results,
                                  s.loc))
        for j, r in zip(params, results[len(s.results):], strict=True):
            self.tan[s.results[j]] = r

    def loop_blocks(self, s: Loop) -> tuple[MBlock, MBlock]:
        em = self.em
        blocks = []
        for blk in (s.cond, s.body):
            em.open()
            self.block(blk)
            m = em.close()
            m.yields = list(blk.yields)
            blocks.append(m)
        return blocks[0], blocks[1]

    def custom(self, s: Custom) -> None:
        """A @wp.func_grad region: its body runs as written where no input has a tangent;
        otherwise its derivative is the user's reverse rule, which forward mode cannot use."""
        if any(v.type.is_float and self.tangent(v) is not None for v in s.inputs):
            raise CompileError("forward mode (JVP) through a @wp.func_grad function is not "
                               "supported: its gradient is a reverse-mode rule of its own, and "
                               "differentiating its body instead could disagree with it",
                               s.loc)
        true, branch = custom_as_if(s, self.em.new_var)
        self.em.cur.stmts.append(true)
        self.branch(branch)

    # -- memory -------------------------------------------------------------------------------

    def tangent_place(self, op: Op) -> tuple[Var, Var]:
        """The tangent array's pointer and byte offset for the access op makes."""
        base, extra = self.tangent_base(op.args[0], op.loc)
        off = op.args[1]
        return base, off if extra is None else self.em.op("add", extra, off)

    def tangent_base(self, p: Var, loc: SourceLoc) -> tuple[Var, Var | None]:
        """The tangent array's pointer for data pointer p, and a byte offset into it (None:
        none)."""
        d = self.access.defs.get(p.id)
        if d is not None and d.prim == "arg":
            return self.tangent_arg(int(d.attr), loc), None
        if d is not None and d.prim == "ptr_add":
            base, extra = self.tangent_base(d.args[0], loc)
            step = d.args[1]
            return base, step if extra is None else self.em.op("add", extra, step)
        raise CompileError("cannot differentiate an access to an array that is chosen at run "
                           "time or stored inside another array", loc)

    def tangent_arg(self, off: int, loc: SourceLoc) -> Var:
        if off not in self.tangent_args:
            at = self.tangent_of(off)
            if at is None:
                raise CompileError("forward mode: this array has no tangent argument", loc)
            self.tangent_args[off] = self.em.make("arg", (), ptr, at)
            # the tangent's gradient pointer, which the adjoint of this kernel reads (HVPs)
            self.tangent_args[-off - 1] = self.em.make("arg", (), ptr, at + GRAD_SLOT)
        result = self.tangent_args[off].result
        assert result is not None
        return result


def _gather(fw: Forward, op: Op) -> None:
    """A load: the tangent is read where the value is (the tangent array as this thread's
    earlier stores left it, as the value is the array as they left it)."""
    if op.result is not None and op.result.type.is_float:
        fw.set_tangent(op.result, fw.em.op("load", *fw.tangent_place(op),
                                            type=op.result.type, attr=op.attr))


def _overwrite(fw: Forward, op: Op) -> None:
    """A store: the tangent there becomes the value's."""
    value = op.args[2]
    if value.type.is_float:
        fw.em.effect("store", *fw.tangent_place(op), fw.tangent_or_zero(value), attr=op.attr)


def _accumulate(fw: Forward, op: Op) -> None:
    """atomic_add: the tangent is added there too. The old value it returns depends on the
    order threads run in: asking for its tangent is an error."""
    value = op.args[2]
    if not value.type.is_float:
        return
    t = fw.tangent(value)
    if t is not None:
        fw.em.op("atomic_add", *fw.tangent_place(op), t, attr=op.attr)
    if op.result is not None:
        fw.poison[op.result] = (f"cannot differentiate through the value wp.{op.prim}() returns "
                                "on a float array: it depends on the order threads run in; "
                                "compute the prefix in a separate kernel", op.loc)


def _pick(fw: Forward, op: Op) -> None:
    """atomic_min/max: a thread whose value replaced the one there (the element now holds its
    value, and the old value the op returns was another) stores its tangent there too. The
    tangent kernel keeps this per element in thread order (a store at an element other threads
    store to makes the launch serial: passes/threads.py), so the element ends with the tangent
    of the first thread whose value is the final one, or keeps its own where none replaced it
    (reverse mode hands the gradient to the same thread). At the thread's own element
    (access.py: not `minmax`) the old value's tangent is the one stored there."""
    value, old = op.args[2], op.result
    if not value.type.is_float:
        return
    assert old is not None
    em = fw.em
    place = fw.tangent_place(op)
    if not fw.access.arrays[fw.access.root(op.args[0], op.loc)].minmax:
        # the thread's own element (access.py): the old value's tangent is the one there,
        # and the winner's is stored
        t_old = em.op("load", *place, type=value.type, attr=op.attr)
        won = PRIMS[op.prim].replaces(fw, value, old)
        em.effect("store", *place, em.op("select", won, fw.tangent_or_zero(value), t_old),
                  attr=op.attr)
        fw.set_tangent(old, t_old)
        return
    now = em.op("load", op.args[0], op.args[1], type=value.type, attr=op.attr)
    replaced = em.op("and", em.op("eq", now, value), em.op("ne", old, value))
    then = em.open()
    em.effect("store", *place, fw.tangent_or_zero(value), attr=op.attr)
    em.close()
    em.cur.stmts.append(MIf(replaced, then, MBlock(), [], op.loc))
    fw.poison[old] = (f"cannot differentiate through the value wp.{op.prim}() returns on a "
                      "float array: it depends on the order threads run in", op.loc)


def _refuse(why: str) -> Callable[[Forward, Op], None]:
    def rule(fw: Forward, op: Op) -> None:
        value = op.args[2]
        if value.type.is_float:
            raise CompileError(f"wp.{op.prim}() on a float array: {why}", op.loc)
    return rule


def _integer(fw: Forward, op: Op) -> None:
    """Integer values carry no tangent."""


#: the forward rule of each memory primitive's MemoryRule (tests/test_forward_rules.py checks
#: that every rule has one)
MEMORY_RULES: dict[MemoryRule, Callable[[Forward, Op], None]] = {
    MemoryRule.GATHER: _gather,
    MemoryRule.OVERWRITE: _overwrite,
    MemoryRule.ACCUMULATE: _accumulate,
    MemoryRule.PICK: _pick,
    MemoryRule.ORDER: _refuse("not differentiable: what the array ends up holding depends on "
                              "the order threads run in; launch this kernel outside jvp()"),
    MemoryRule.INTEGER: _integer,
}
