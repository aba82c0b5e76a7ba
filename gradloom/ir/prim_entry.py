"""What a primitive's table entry is: its effects, its derivative-rule signatures and the
`Prim` record that ir/prims.py fills once per primitive."""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..types import ScalarType
from .hostops import HostRule, Unavailable
from .nodes import Op, Var
from .thread_rules import ThreadsRule

TypeRule = Callable[[tuple[ScalarType, ...], ScalarType | None], ScalarType | None]


class Emit(Protocol):
    """What a derivative rule may do: emit ops, make constants, and read primal values."""

    def op(self, prim: str, *args: Var, type: ScalarType | None = None) -> Var: ...
    def effect(self, prim: str, *args: Var, attr: Any = None) -> None: ...
    def const(self, value: float, t: ScalarType) -> Var: ...
    def primal(self, v: Var) -> Var: ...


#: A reverse-mode rule: given the op and the adjoint of its result, the adjoint contribution
#: to each operand (None where no gradient flows). Called only for float results.
VJP = Callable[[Emit, Op, Var], tuple[Var | None, ...]]
#: A forward-mode rule: given the op and each operand's tangent (None: zero), the result's
#: tangent (None: zero). Called only for float results.
JVP = Callable[[Emit, Op, tuple[Var | None, ...]], Var | None]


def jvp_of(vjp: VJP) -> JVP:
    """The forward rule a reverse rule implies. A scalar op's local Jacobian is one row of
    partials p_i; its VJP rule returns g·p_i per operand, linear in g, so the JVP Σ p_i·t_i is
    Σ vjp(t_i)[i]. The tangent goes in as g (not 1 times t_i afterwards), so the conventions
    at special points carry over: where a zero adjoint gives zero despite an infinite p_i
    (log at 0), a zero tangent does too."""
    def rule(e: Emit, op: Op, ts: tuple[Var | None, ...]) -> Var | None:
        out: Var | None = None
        for i, t in enumerate(ts):
            part = None if t is None else vjp(e, op, t)[i]
            if part is not None:
                out = part if out is None else e.op("add", out, part)
        return out
    return rule


class Effect(enum.Flag):
    """What a primitive does besides computing its result from its operands. Passes read these
    (recompute or keep, replay or skip, split a launch or not); they never list primitives."""

    NONE = 0
    #: reads array memory (its value depends on what other ops and threads wrote)
    READ = enum.auto()
    #: writes array memory
    WRITE = enum.auto()
    #: a read-modify-write whose returned value depends on the order threads run in
    ATOMIC = enum.auto()
    #: output the user sees (print)
    IO = enum.auto()
    #: may stop the thread and report an error (debug-mode bounds checks)
    CHECK = enum.auto()
    #: uses the thread's adjoint stack (push/pop: each must run exactly once)
    STACK = enum.auto()
    #: reads or writes gradient memory (adjoint kernels only)
    GRAD = enum.auto()
    #: its value depends on which thread runs it (wp.tid())
    THREAD = enum.auto()
    #: reads a kernel parameter from the launch block (once, before the thread loop)
    PARAM = enum.auto()
    #: only adds into memory: threads may do it in any order (float sums round differently)
    ACCUMULATE = enum.auto()
    #: reads the thread's own local memory (a tile's buffer: no other thread sees it)
    LOCAL = enum.auto()
    #: writes the thread's own local memory
    LOCAL_WRITE = enum.auto()


class MemoryRule(enum.Enum):
    """How reverse mode treats the gradient memory at a memory primitive's address."""

    #: the result's adjoint is added into the gradient there (load)
    GATHER = "gather"
    #: the gradient there is taken (read, then zeroed) into the stored value's adjoint (store)
    OVERWRITE = "overwrite"
    #: the gradient there is added into the value's adjoint (atomic_add)
    ACCUMULATE = "accumulate"
    #: the gradient there goes to the value only where it is what the array ends up holding
    PICK = "pick"
    #: not differentiable on floats: what the array holds depends on the thread order
    ORDER = "order"
    #: integer values only: no gradient
    INTEGER = "integer"


#: effects that must happen exactly as often as the program says: such an op is never dropped
#: as dead code, never recomputed and never duplicated
OBSERVABLE = Effect.WRITE | Effect.IO | Effect.CHECK | Effect.STACK | Effect.GRAD | \
    Effect.LOCAL_WRITE


@dataclass(frozen=True)
class Prim:
    """A primitive: its name, arity, how its result type follows from its operands, and effects."""

    name: str
    arity: int
    type_rule: TypeRule
    #: what the primitive does besides computing its result (required: see Effect)
    effects: Effect
    doc: str = ""
    #: the reverse-mode rule; None for primitives whose results carry no gradient (integer,
    #: bool and pointer results) and for memory primitives, which autodiff/reverse.py handles
    vjp: VJP | None = None
    #: takes `arity` or more operands (print)
    variadic: bool = False
    #: memory primitives (array data): their reverse rule, applied by autodiff/reverse.py
    #: (and the forward rule autodiff/forward.py derives from it)
    memory_rule: MemoryRule | None = None
    #: a forward-mode rule of its own, where the one `vjp` implies (jvp_of) would be wasteful
    #: or wrong (operand and result types differ); see `forward_rule`
    jvp: JVP | None = None
    #: PICK memory primitives: the comparison `c` under which the value replaces the element's
    #: old value, c(value, old) (see `replaces`)
    replaces_when: str | None = None
    #: a result-less op whose `vjp` moves adjoints between tile buffers, reversed whatever its
    #: operands' types (bxchg); lstore is reversed where it stores a float
    moves_adjoints: bool = False

    # cached: every pass asks these of every op, and each operation on an enum.Flag builds a
    # member (a kernel of 16,000 ops spent a sixth of its compile in enum.py)

    @functools.cached_property
    def forward_rule(self) -> JVP | None:
        """The forward-mode rule: the entry's own `jvp`, else the one its `vjp` implies."""
        return self.jvp if self.jvp is not None or self.vjp is None else jvp_of(self.vjp)

    @functools.cached_property
    def pure(self) -> bool:
        """The result depends on the operands alone, and computing it changes nothing."""
        return self.effects == Effect.NONE

    @functools.cached_property
    def side_effect(self) -> bool:
        """Running it changes state that someone can observe (memory, output, the stack)."""
        return bool(self.effects & OBSERVABLE)

    @functools.cached_property
    def memory(self) -> bool:
        """It reads or writes array data: its adjoint reads or writes gradient memory."""
        return bool(self.effects & (Effect.READ | Effect.WRITE)) and Effect.GRAD not in self.effects

    @functools.cached_property
    def writes(self) -> bool:
        return bool(self.effects & Effect.WRITE)

    def has(self, effects: Effect) -> bool:
        """Whether the primitive has any of `effects` (remembered per set asked about, keyed by
        identity: a flag value is one enum member for good, and hashing one runs Python code)."""
        try:
            return self._has[id(effects)]
        except KeyError:
            self._has[id(effects)] = answer = bool(self.effects & effects)
            return answer

    @functools.cached_property
    def _has(self) -> dict[int, bool]:
        return {}

    #: how the host computes it (ir/evaluate.py runs Python-scope calls with these rules), or
    #: why it cannot run there; None only for a primitive not yet given one (a test fails)
    host: HostRule | Unavailable | None = None
    #: how the host computes it for every thread of a launch at once, on integers and bools
    #: (ir/thread_rules.py: launch-time address checks); None for primitives that never compute
    #: an integer from integers (float math, memory, the thread index and parameters, which
    #: the checks read from the launch)
    host_threads: ThreadsRule | None = None
    #: the operand in which the result is one-to-one: a permutation of 0..n-1 that a host
    #: object's descriptor (operand 0) holds, `attr` = (table, count, ready) the byte offsets of
    #: its pointer, of n (int32) and of a flag (int32) that it exists. Threads passing their own
    #: index there reach distinct results when the launch finds the flag set and n at least
    #: the launch's extent (passes/threads.py plans on it, the launch checks it)
    permutes: int | None = None

    def replaces(self, e: Emit, value: Var, old: Var) -> Var:
        """PICK primitives: whether `value` replaced the element's `old` value (a bool), as
        the primitive's float semantics decide: a NaN old value is always replaced, a NaN
        value never replaces a number, and a tie counts as replaced (the value gets the
        gradient, as warp-lang's adjoint gives it)."""
        assert self.replaces_when is not None
        return e.op("or", e.op(self.replaces_when, value, old), e.op("isnan", old))
