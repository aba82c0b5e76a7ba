"""gradloom's own float32 `log` and `exp`: the algorithm, its constants, and a numpy evaluation
that is the reference the CPU code generator (codegen/float32_math.py) follows operation for
operation, so kernels, their SIMD lanes and Python-scope calls agree bit for bit.

Why not the C library's `logf`/`expf`: a SIMD thread loop can only call them one lane at a time,
and every call spills the vector registers (docs/performance.md). These are straight-line code
(no branches, no tables), vectorise like any arithmetic, and are evaluated in float64, so the
float32 result is the correctly rounded value except within ~1e-15 of a rounding boundary:
never less accurate than glibc's (≤ 0.82 ulp), but not always the same bits
(docs/differences.md).

log(x) = e·ln2 + log(m), x = m·2^e with m in [√½, √2]; log(m) = 2s·(1 + s²/3 + s⁴/5 + …),
s = (m − 1)/(m + 1), |s| ≤ 0.172, nine terms (truncation < 1e-15 relative).
exp(x) = 2^k·exp(r), k = rint(x/ln2), r = x − k·ln2, |r| ≤ 0.347, Taylor to r¹¹ (< 1e-14).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

LN2 = math.log(2.0)
INV_LN2 = 1.0 / math.log(2.0)
#: log: the coefficients of s²ᵏ in log(m)/(2s), k = 8..1 (Horner order; the constant term is 1)
LOG_COEFFS = tuple(float(Fraction(1, 2 * k + 1)) for k in range(8, 0, -1))
#: exp: 1/n!, n = 11..1 (Horner order; the constant term is 1)
EXP_COEFFS = tuple(float(Fraction(1, math.factorial(n))) for n in range(11, 0, -1))
#: exp's argument is clamped to ±EXP_CLAMP (float32 results are 0 or inf well before)
EXP_CLAMP = 200.0
SQRT2_BITS = 0x3FB504F3  # the float32 just below √2
ONE_BITS = 0x3F800000
TWO_23 = 8388608.0  # scales a subnormal to a normal float exactly


def log_f32(x: np.ndarray) -> np.ndarray:
    """float32 log of a float32 array, as kernels compute it."""
    x = np.asarray(x, np.float32)
    with np.errstate(all="ignore"):
        bits0 = x.view(np.uint32)
        sub = bits0 < 0x00800000  # +0 and positive subnormals
        x1 = np.where(sub, x * np.float32(TWO_23), x)
        bits = x1.view(np.uint32)
        e = (bits >> 23).astype(np.int32) - np.where(sub, 150, 127).astype(np.int32)
        mb = (bits & 0x007FFFFF) | ONE_BITS
        big = mb > SQRT2_BITS
        mb = np.where(big, mb - 0x00800000, mb).astype(np.uint32)
        e = e + big.astype(np.int32)
        m = mb.view(np.float32).astype(np.float64)
        s = (m - 1.0) / (m + 1.0)
        s2 = s * s
        q = np.full_like(s, LOG_COEFFS[0])
        for c in LOG_COEFFS[1:]:
            q = q * s2 + c
        q = q * s2 + 1.0
        r = e.astype(np.float64) * LN2 + (s + s) * q
        out = r.astype(np.float32)
        out = np.where(x == np.float32(np.inf), np.float32(np.inf), out)
        out = np.where(x == 0, np.float32(-np.inf), out)
        out = np.where(x < 0, np.float32(np.nan), out)
        out = np.where(np.isnan(x), x, out)
    return out.astype(np.float32)


def exp_f32(x: np.ndarray) -> np.ndarray:
    """float32 exp of a float32 array, as kernels compute it."""
    x = np.asarray(x, np.float32)
    with np.errstate(all="ignore"):
        xd = x.astype(np.float64)
        xd = np.where(xd > EXP_CLAMP, EXP_CLAMP, xd)
        xd = np.where(xd < -EXP_CLAMP, -EXP_CLAMP, xd)
        xd = np.where(np.isnan(xd), 0.0, xd)
        k = np.rint(xd * INV_LN2)
        r = xd - k * LN2
        p = np.full_like(r, EXP_COEFFS[0])
        for c in EXP_COEFFS[1:]:
            p = p * r + c
        p = p * r + 1.0
        scale = ((k.astype(np.int64) + 1023) << 52).view(np.float64)
        out = (p * scale).astype(np.float32)
        out = np.where(np.isnan(x), x, out)
    return out.astype(np.float32)
