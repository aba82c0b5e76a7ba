"""gradloom's own float32 `exp`, `log`, `sin` and `cos`: the algorithms, their constants and
table (codegen/float32_math.py builds the code; kernels, their SIMD lanes and Python-scope
calls run the same operations, so they agree bit for bit).

Why not the C library's `expf`/`logf`/`sinf`/`cosf`: a SIMD thread loop can only call them one
lane at a time, and every call spills the vector registers (docs/performance.md). These vectorise like any
arithmetic: evaluated in float64 with fused multiply-adds, a 64-entry table and short polynomials
(Estrin's scheme: few dependent steps), to within 0.5 ulp of float32 on every input tested;
special inputs (zero, subnormal, negative, inf, NaN, |x| past a reduction's range) are handled
on a branch taken only when some lane has one (the scalar `exp` has no branch, so LLVM can still
vectorise a loop of it). `log` has no table: two lookups per value made neo-Hookean's forward
slower in lanes on AMD's gather instructions (3.6 → 4.4 ms); it divides once instead.

exp(x) = 2^e · T[j] · p(r): k = round(x·64/ln2) = 64e + j (adding 1.5·2^52 rounds it, and its
bits are k), r = x − k·ln2/64 (|r| ≤ ln2/128),
T[j] = 2^(j/64), p the degree-4 Taylor polynomial (truncation < 4e-14).
log(x): e and m from the bits (LOG_OFF below), s = (m − 1)/(m + 1) (|s| ≤ 0.172), the atanh
series of log(m) to s¹⁵ (truncation < 2^-39 relative), then e·ln2 added in one fused step.
sin/cos(x), |x| < SINCOS_LIMIT: k = rint(x·2/π), r = x − k·(P1 + P2 + P3) (π/2 in three parts,
the first two of 33 bits, so k·P1 and k·P2 are exact), |r| ≤ π/4; sin r to r¹¹ and cos r to
r¹², picked and signed by k mod 4. Larger |x|, inf and NaN: the C library's (whose reduction is
exact for every float), one lane at a time.
"""

from __future__ import annotations

import math

LN2 = math.log(2.0)
EXP_N_OVER_LN2 = 64.0 / math.log(2.0)
EXP_LN2_OVER_N = math.log(2.0) / 64.0
#: exp's argument is clamped to ±EXP_CLAMP (float32 results are 0 or inf well before)
EXP_CLAMP = 200.0
#: exp: p(r) = (1 + r) + r²·((1/2 + r/6) + r²/24)
EXP_C2, EXP_C3, EXP_C4 = 1.0 / 2.0, 1.0 / 6.0, 1.0 / 24.0
#: log(x) = e·ln2 + 2s + 2s·s²·P(s²), s = (m − 1)/(m + 1), x = m·2^e with m in [1/√2, √2):
#: P(z) = (L0 + L1·z) + z²·((L2 + L3·z) + z²·((L4 + L5·z) + z²·L6)), L_j = 1/(2j + 3)
LOG_C = tuple(1.0 / (2 * j + 3) for j in range(7))
#: the float32 bits of 1/√2 (rounded down): subtracting them puts m in [1/√2, √2)
LOG_OFF = 0x3F3504F3
TWO_23 = 8388608.0  # scales a subnormal to a normal float exactly
#: sin/cos: below this |x| (|k| < 2^19) the three-part reduction is exact enough
SINCOS_LIMIT = 524288.0
TWO_OVER_PI = 2.0 / math.pi
#: π/2 = PIO2_1 + PIO2_2 + PIO2_3 (+ 1e-37): 33 bits, the next 33 bits, then the rest rounded
#: to a double (computed with mpmath at 200 bits)
PIO2_1 = float.fromhex("0x1.921fb54400000p+0")
PIO2_2 = float.fromhex("0x1.0b4611a600000p-34")
PIO2_3 = float.fromhex("0x1.3198a2e037073p-69")
#: sin r = r + r·z·S(z), z = r², cos r = 1 + z·C(z), each P(z) = (P0 + P1·z) + z²·((P2 + P3·z)
#: + z²·(P4 + P5·z)) (S5 = 0: S4 + 0·z is S4 exactly); a lane picks the coefficients it needs
SIN_C = (-1.0 / 6.0, 1.0 / 120.0, -1.0 / 5040.0, 1.0 / 362880.0, -1.0 / 39916800.0)
COS_C = (-1.0 / 2.0, 1.0 / 24.0, -1.0 / 720.0, 1.0 / 40320.0, -1.0 / 3628800.0,
         1.0 / 479001600.0)

# 2^(j/64), correctly rounded (mpmath, 200 bits)
EXP_TABLE = (
    "0x1.0000000000000p+0",
    "0x1.02c9a3e778061p+0",
    "0x1.059b0d3158574p+0",
    "0x1.0874518759bc8p+0",
    "0x1.0b5586cf9890fp+0",
    "0x1.0e3ec32d3d1a2p+0",
    "0x1.11301d0125b51p+0",
    "0x1.1429aaea92de0p+0",
    "0x1.172b83c7d517bp+0",
    "0x1.1a35beb6fcb75p+0",
    "0x1.1d4873168b9aap+0",
    "0x1.2063b88628cd6p+0",
    "0x1.2387a6e756238p+0",
    "0x1.26b4565e27cddp+0",
    "0x1.29e9df51fdee1p+0",
    "0x1.2d285a6e4030bp+0",
    "0x1.306fe0a31b715p+0",
    "0x1.33c08b26416ffp+0",
    "0x1.371a7373aa9cbp+0",
    "0x1.3a7db34e59ff7p+0",
    "0x1.3dea64c123422p+0",
    "0x1.4160a21f72e2ap+0",
    "0x1.44e086061892dp+0",
    "0x1.486a2b5c13cd0p+0",
    "0x1.4bfdad5362a27p+0",
    "0x1.4f9b2769d2ca7p+0",
    "0x1.5342b569d4f82p+0",
    "0x1.56f4736b527dap+0",
    "0x1.5ab07dd485429p+0",
    "0x1.5e76f15ad2148p+0",
    "0x1.6247eb03a5585p+0",
    "0x1.6623882552225p+0",
    "0x1.6a09e667f3bcdp+0",
    "0x1.6dfb23c651a2fp+0",
    "0x1.71f75e8ec5f74p+0",
    "0x1.75feb564267c9p+0",
    "0x1.7a11473eb0187p+0",
    "0x1.7e2f336cf4e62p+0",
    "0x1.82589994cce13p+0",
    "0x1.868d99b4492edp+0",
    "0x1.8ace5422aa0dbp+0",
    "0x1.8f1ae99157736p+0",
    "0x1.93737b0cdc5e5p+0",
    "0x1.97d829fde4e50p+0",
    "0x1.9c49182a3f090p+0",
    "0x1.a0c667b5de565p+0",
    "0x1.a5503b23e255dp+0",
    "0x1.a9e6b5579fdbfp+0",
    "0x1.ae89f995ad3adp+0",
    "0x1.b33a2b84f15fbp+0",
    "0x1.b7f76f2fb5e47p+0",
    "0x1.bcc1e904bc1d2p+0",
    "0x1.c199bdd85529cp+0",
    "0x1.c67f12e57d14bp+0",
    "0x1.cb720dcef9069p+0",
    "0x1.d072d4a07897cp+0",
    "0x1.d5818dcfba487p+0",
    "0x1.da9e603db3285p+0",
    "0x1.dfc97337b9b5fp+0",
    "0x1.e502ee78b3ff6p+0",
    "0x1.ea4afa2a490dap+0",
    "0x1.efa1bee615a27p+0",
    "0x1.f50765b6e4540p+0",
    "0x1.fa7c1819e90d8p+0",
)
