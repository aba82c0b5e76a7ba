"""A launch's flat thread index split into its per-dimension indices, without integer division.

`wp.tid()` of an n-dimensional launch is (t / stride_k) % dim_k for each dimension k, with the
strides the products of the later dimensions. Hardware integer division costs 10–40 cycles on
a CPU (and has no SIMD instruction, so a vector of 16 lanes pays it 16 times); it made a 2-D
copy kernel 40× slower than the same kernel launched in 1-D. The quotient is computed in double
instead: q = ⌊(x + ½) · fl(1/d)⌋. That is exact while x < 2⁵⁰: x + ½ and x/d's fraction
(r + ½)/d lie at least ½/d from an integer, and the two roundings move the product by at most
(x/d)·2⁻⁵¹ < ½/d. A launch has far fewer threads (Warp's limit is 2³¹ per dimension).
"""

from __future__ import annotations

from collections.abc import Callable

#: emits one instruction `{out} = {text}` and returns out (a fresh name)
Emit = Callable[[str], str]


def split_index(emit: Emit, tid: str, dims: list[str], k: int, ity: str, fty: str,
                half: str, one: str) -> str:
    """The index along dimension k of the flat thread index `tid` (type ity: i64 or a vector
    of i64; fty the matching double type; half and one: ½ and 1.0 of fty; dims: the launch
    dimensions as ity values)."""
    stride: str | None = None
    for d in dims[k + 1:]:
        stride = d if stride is None else emit(f"mul {ity} {stride}, {d}")
    q = tid if stride is None else _divide(emit, tid, stride, ity, fty, half, one)
    if k == 0:
        return q  # the outermost index of a thread inside the launch needs no wrap
    q2 = _divide(emit, q, dims[k], ity, fty, half, one)
    return emit(f"sub {ity} {q}, {emit(f'mul {ity} {q2}, {dims[k]}')}")


def _divide(emit: Emit, x: str, d: str, ity: str, fty: str, half: str, one: str) -> str:
    """⌊x / d⌋ for 0 ≤ x < 2⁵⁰, 1 ≤ d (see the module docstring)."""
    xf = emit(f"uitofp {ity} {x} to {fty}")
    inv = emit(f"fdiv {fty} {one}, {emit(f'uitofp {ity} {d} to {fty}')}")
    p = emit(f"fmul {fty} {emit(f'fadd {fty} {xf}, {half}')}, {inv}")
    return emit(f"fptoui {fty} {p} to {ity}")
