"""Values of the SIMD thread loop: one scalar for what every lane shares, a vector for what
differs between lanes, and affine index values (lane l's value is lane 0's plus l·stride) kept
as one scalar until something needs the vector (codegen/lanes.py runs the loop)."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import Op, Var
from ..types import ScalarType
from .function_text import FunctionText
from .llvm_types import reg_type

#: |c| bound for tracking `wp.tid() + c` exactly: with launches of at most 2**30 threads
#: (checked where the SIMD loop is entered) such a value never wraps around int32, so widening
#: it to int64 lane by lane equals widening lane 0's value and counting on
TID_OFFSET_MAX = 1 << 20


@dataclass(frozen=True)
class Affine:
    """An integer value whose lane l equals `lane0 + l * stride` (wrapping, as the IR's
    integers do): `lane0` is a scalar name."""

    lane0: str
    stride: int
    #: the value is exactly `tid + tid_offset` (lane strides ±1), so it cannot wrap
    tid_offset: int | None = None
    #: the value is `(tid + c) * |stride| + const_off` plus thread-invariant terms: lane 0's
    #: element of |stride| bytes starts at `lane0 - const_off` (an array offset)
    scaled: bool = False
    const_off: int = 0


def is_literal(name: str) -> bool:
    """An LLVM constant rather than an SSA name."""
    return not name.startswith("%")


def int_literal(name: str) -> int | None:
    try:
        return int(name)
    except ValueError:
        return None


class LaneValues:
    """Names of values in the SIMD loop; the host emitter provides the text buffer and the
    scalar names (`names`, filled by the scalar rules for thread-invariant values)."""

    f: FunctionText
    names: dict[int, str]
    declares: set[str]
    prefix: str
    width: int
    varying: frozenset[int]

    def setup_values(self) -> None:
        self.vnames: dict[int, str] = {}
        self.affine: dict[int, Affine] = {}
        #: vectors made from scalars (broadcasts, affine values), per region scope: a vector
        #: made in a region is not visible after it
        self.memo: list[dict[str, str]] = [{}]

    def vty(self, t: ScalarType | str) -> str:
        base = t if isinstance(t, str) else reg_type(t)
        return f"<{self.width} x {base}>"

    def is_varying(self, v: Var) -> bool:
        return v.id in self.varying

    def vdefine(self, v: Var) -> str:
        n = f"%{self.prefix}w{v.id}"
        self.vnames[v.id] = n
        return n

    def vres(self, s: Op) -> str:
        assert s.result is not None
        return self.vdefine(s.result)

    def vec(self, v: Var) -> str:
        """v as a vector (broadcast or materialised on first use in the current scope)."""
        got = self.vnames.get(v.id)
        if got is not None:
            return got
        aff = self.affine.get(v.id)
        if aff is not None:
            return self.affine_vector(aff, reg_type(v.type))
        return self.splat(self.names[v.id], reg_type(v.type))

    def va(self, s: Op, i: int) -> str:
        return self.vec(s.args[i])

    def remembered(self, key: str) -> str | None:
        for scope in reversed(self.memo):
            if key in scope:
                return scope[key]
        return None

    def splat(self, x: str, ty: str) -> str:
        """A vector with x in every lane."""
        if is_literal(x):
            return f"splat ({ty} {x})"
        key = f"splat {ty} {x}"
        got = self.remembered(key)
        if got is None:
            f = self.f
            one, got = f.fresh("%lone"), f.fresh("%lsplat")
            f.emit(f"{one} = insertelement {self.vty(ty)} poison, {ty} {x}, i64 0")
            f.emit(f"{got} = shufflevector {self.vty(ty)} {one}, {self.vty(ty)} poison, "
                   f"<{self.width} x i32> zeroinitializer")
            self.memo[-1][key] = got
        return got

    def steps(self, ty: str, stride: int) -> str:
        """The constant vector <0, stride, 2·stride, ...>."""
        return "<" + ", ".join(f"{ty} {k * stride}" for k in range(self.width)) + ">"

    def affine_vector(self, aff: Affine, ty: str) -> str:
        key = f"affine {ty} {aff.lane0} {aff.stride}"
        got = self.remembered(key)
        if got is None:
            got = self.f.fresh("%laff")
            self.f.emit(f"{got} = add {self.vty(ty)} {self.splat(aff.lane0, ty)}, "
                        f"{self.steps(ty, aff.stride)}")
            self.memo[-1][key] = got
        return got


    def any_lane(self, mask: str) -> str:
        """An i1: some lane of the mask is on."""
        out = self.f.fresh("%lany")
        fn = f"llvm.vector.reduce.or.v{self.width}i1"
        self.declares.add(f"declare i1 @{fn}({self.vty('i1')})")
        self.f.emit(f"{out} = call i1 @{fn}({self.vty('i1')} {mask})")
        return out

    def mask_and(self, a: str | None, b: str) -> str:
        """Lanes on in both masks. A select, not an `and`: lanes that are off may hold poison
        in b (what an exited lane computes), which `and` would pass on."""
        if a is None:
            return b
        out = self.f.fresh("%lmask")
        m = self.vty("i1")
        self.f.emit(f"{out} = select {m} {a}, {m} {b}, {m} zeroinitializer")
        return out

    def mask_not(self, a: str) -> str:
        out = self.f.fresh("%lnot")
        self.f.emit(f"{out} = xor {self.vty('i1')} {a}, splat (i1 true)")
        return out

    def extract(self, vec: str, ty: str, lane: int | str) -> str:
        out = self.f.fresh("%lext")
        self.f.emit(f"{out} = extractelement {self.vty(ty)} {vec}, i64 {lane}")
        return out

    def insert(self, vec: str, ty: str, x: str, lane: int) -> str:
        out = self.f.fresh("%lins")
        self.f.emit(f"{out} = insertelement {self.vty(ty)} {vec}, {ty} {x}, i64 {lane}")
        return out

    def shuffle(self, vec: str, n: int, ty: str, picks: list[int]) -> str:
        """Lanes picked out of a vector of n elements (or spread into a longer one: -1 picks
        nothing)."""
        out = self.f.fresh("%lshuf")
        idx = "<" + ", ".join("i32 poison" if p < 0 else f"i32 {p}" for p in picks) + ">"
        self.f.emit(f"{out} = shufflevector <{n} x {ty}> {vec}, <{n} x {ty}> poison, "
                    f"<{len(picks)} x i32> {idx}")
        return out
