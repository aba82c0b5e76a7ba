"""bfloat16 in LLVM IR: a bfloat16 value lives in a `float` register (always a value bfloat16
can hold) and in memory as its 16 bits; arithmetic runs in float and each result is rounded to
the nearest bfloat16 (ties to even), as Warp computes bfloat16 math. Integer code only, so every
target (and the in-process JIT, which has no compiler-rt helpers) can run it."""

from __future__ import annotations

from ..ir.nodes import Op
from ..types import ScalarType, bfloat16
from .function_text import FunctionText

#: float -> the nearest bfloat16 (as a float, or as its bits); a NaN keeps its sign and stays
#: a quiet NaN
_ROUND_BODY = """  %b = bitcast float %x to i32
  %nan = fcmp uno float %x, %x
  %hi = lshr i32 %b, 16
  %lsb = and i32 %hi, 1
  %bias = add i32 %lsb, 32767
  %r = add i32 %b, %bias
  %q = or i32 %b, 4194304
  %s = select i1 %nan, i32 %q, i32 %r
"""
HELPERS = (
    "define internal float @gl.bf16.round(float %x) alwaysinline nounwind readnone {\n"
    + _ROUND_BODY + "  %m = and i32 %s, -65536\n  %out = bitcast i32 %m to float\n"
    "  ret float %out\n}",
    "define internal i16 @gl.bf16.bits(float %x) alwaysinline nounwind readnone {\n"
    + _ROUND_BODY + "  %h = lshr i32 %s, 16\n  %t = trunc i32 %h to i16\n  ret i16 %t\n}",
    "define internal float @gl.bf16.value(i16 %h) alwaysinline nounwind readnone {\n"
    "  %w = zext i16 %h to i32\n  %s = shl i32 %w, 16\n  %f = bitcast i32 %s to float\n"
    "  ret float %f\n}",
)

#: primitives whose bfloat16 result is computed in float and must be rounded (the others --
#: neg, abs, min, max, copysign, select, loads, constants -- give bfloat16 values already)
ROUNDED = frozenset({"add", "sub", "mul", "div", "mod", "pow", "atan2", "cast", "sqrt", "cbrt",
                     "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp",
                     "exp2", "log", "log2", "log10", "erf", "erfc", "floor", "ceil", "rint",
                     "trunc", "round"})


def is_bf16(t: ScalarType) -> bool:
    return t == bfloat16


class Bf16Emitter:
    """The bfloat16 half of OpEmitter: conversions, rounding, read-modify-write loops."""

    f: FunctionText
    names: dict[int, str]
    declares: set[str]

    def _helper(self, fn: str, arg_type: str, ret: str, x: str, out: str) -> str:
        self.declares.update(HELPERS)
        self.f.emit(f"{out} = call {ret} @gl.bf16.{fn}({arg_type} {x})")
        return out

    def bf16_value(self, raw: str, dest: str = "") -> str:
        """The float value of bfloat16 bits (an i16), in dest or a fresh name."""
        return self._helper("value", "i16", "float", raw, dest or self.f.fresh("%bfv"))

    def bf16_bits(self, x: str) -> str:
        """The bits (an i16) of the bfloat16 nearest float x."""
        return self._helper("bits", "float", "i16", x, self.f.fresh("%bfb"))

    def bf16_round_result(self, s: Op) -> None:
        """Round the float an op just computed into its bfloat16 result."""
        assert s.result is not None
        self.names[s.result.id] = self._helper("round", "float", "float",
                                               self.names[s.result.id], self.f.fresh("%bfr"))

    def bf16_rmw(self, p: str, combine: str, value: str, atomic: bool) -> str:
        """Replace the bfloat16 at p by combine(old, value) (an LLVM float instruction or
        intrinsic name), rounded; atomically with a compare-exchange loop when `atomic`.
        Returns the old value (a float)."""
        f = self.f
        first = f.fresh("%bfold")
        order = " monotonic" if atomic else ""
        f.emit(f"{first} = load {'atomic ' if atomic else ''}i16, ptr {p}{order}, align 2")
        if not atomic:
            old = self.bf16_value(first)
            f.emit(f"store i16 {self._combine(combine, old, value)}, ptr {p}, align 2")
            return old
        pre, loop, done = f.label, f.fresh("bfcas"), f.fresh("bfcasdone")
        f.emit(f"br label %{loop}")
        f.start_block(loop)
        cur, seen = f.fresh("%bfcur"), f.fresh("%bfseen")
        at = len(f.lines)
        old = self.bf16_value(cur)
        new = self._combine(combine, old, value)
        pair, ok = f.fresh("%bfpair"), f.fresh("%bfok")
        f.emit(f"{pair} = cmpxchg ptr {p}, i16 {cur}, i16 {new} monotonic monotonic, align 2")
        f.emit(f"{seen} = extractvalue {{ i16, i1 }} {pair}, 0")
        f.emit(f"{ok} = extractvalue {{ i16, i1 }} {pair}, 1")
        f.emit(f"br i1 {ok}, label %{done}, label %{loop}")
        f.lines.insert(at, f"  {cur} = phi i16 [{first}, %{pre}], [{seen}, %{loop}]")
        f.start_block(done)
        return old

    def _combine(self, combine: str, old: str, value: str) -> str:
        """The bits of the bfloat16 nearest combine(old, value)."""
        f = self.f
        wide = f.fresh("%bfw")
        if combine.startswith("llvm."):
            self.declares.add(f"declare float @{combine}(float, float)")
            f.emit(f"{wide} = call float @{combine}(float {old}, float {value})")
        elif combine == "xchg":
            return self.bf16_bits(value)
        else:
            f.emit(f"{wide} = {combine} float {old}, {value}")
        return self.bf16_bits(wide)
