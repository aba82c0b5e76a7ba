"""Kernel-language features, each a small kernel checked against numpy / plain Python.

Runs on the backend chosen by GL_TEST_BACKEND (see wpcompat.py). Every expectation here was
validated against warp-lang 1.19 on the CPU; comments mark where Warp's behaviour is surprising.
"""

# Kernel bodies use `int(0)` / `float(1.0)` on purpose: Warp rejects mutating, inside a dynamic
# loop, a variable initialised from a bare literal. Keep ruff from "simplifying" them away.
# ruff: noqa: UP018, RUF046

import numpy as np
import pytest
from wpcompat import DEVICE, f32, launch, warr, wp, zeros

RTOL = 1e-5
ATOL = 1e-6


# =============================================================================================
# arithmetic and typing


@wp.kernel
def float_arith_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    a = x[i]
    y[i] = a * 2.5 + 1.0 - a / 3.0 + 0.5 * a * a - (-a)


@wp.kernel
def float_literal_precision_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    # 1.0e-8 is a float32 literal here, so (1 + 1e-8) rounds back to 1 in float32.
    y[i] = (x[i] + 1.0e-8) - x[i]


@wp.kernel
def int_div_mod_kernel(
    a: wp.array(dtype=int),
    b: wp.array(dtype=int),
    floordiv: wp.array(dtype=int),
    truediv: wp.array(dtype=int),
    mod: wp.array(dtype=int),
):
    i = wp.tid()
    floordiv[i] = a[i] // b[i]
    truediv[i] = a[i] / b[i]
    mod[i] = a[i] % b[i]


@wp.kernel
def float_div_mod_pow_kernel(
    a: wp.array(dtype=float),
    b: wp.array(dtype=float),
    div: wp.array(dtype=float),
    floordiv: wp.array(dtype=float),
    mod: wp.array(dtype=float),
):
    i = wp.tid()
    div[i] = a[i] / b[i]
    floordiv[i] = a[i] // b[i]
    mod[i] = a[i] % b[i]


@wp.kernel
def float_pow_kernel(
    a: wp.array(dtype=float),
    b: wp.array(dtype=float),
    p: wp.array(dtype=float),
    sq: wp.array(dtype=float),
):
    i = wp.tid()
    p[i] = a[i] ** b[i]
    sq[i] = a[i] ** 2.0


@wp.kernel
def int_arith_kernel(a: wp.array(dtype=int), b: wp.array(dtype=int), out: wp.array2d(dtype=int)):
    i = wp.tid()
    out[0, i] = a[i] + b[i]
    out[1, i] = a[i] - b[i]
    out[2, i] = a[i] * b[i]
    out[3, i] = -a[i]
    out[4, i] = a[i] * 3 - 7
    out[5, i] = a[i] & b[i]
    out[6, i] = a[i] | b[i]
    out[7, i] = a[i] ^ b[i]
    out[8, i] = a[i] << 2
    out[9, i] = a[i] >> 1


SIGNED_A = np.array([-7, 7, -7, 7, 0, -1, 13, -13, 6, -6, 100, -100], dtype=np.int32)
SIGNED_B = np.array([2, -2, -2, 2, 3, 5, 4, 4, 3, -3, 7, 7], dtype=np.int32)


def _int_div_mod(a, b):
    fd, td, md = zeros(len(a), int), zeros(len(a), int), zeros(len(a), int)
    launch(int_div_mod_kernel, len(a), warr(a, int), warr(b, int), fd, td, md)
    return fd.numpy(), td.numpy(), md.numpy()


def test_float_arithmetic_with_literals():
    x = f32(np.random.default_rng(0).standard_normal(50))
    y = zeros(50, float)
    launch(float_arith_kernel, 50, warr(x, float), y)
    ref = x * f32(2.5) + f32(1.0) - x / f32(3.0) + f32(0.5) * x * x + x
    np.testing.assert_allclose(y.numpy(), ref, rtol=RTOL, atol=ATOL)


def test_float_literals_compute_in_float32():
    x = f32([1.0, 0.0, 1000.0])
    y = zeros(3, float)
    launch(float_literal_precision_kernel, 3, warr(x, float), y)
    ref = (x + np.float32(1.0e-8)) - x  # numpy float32 arithmetic
    np.testing.assert_array_equal(y.numpy(), ref)
    assert y.numpy()[0] == 0.0 and y.numpy()[1] == np.float32(1.0e-8)


def test_int_floordiv_rounds_toward_negative_infinity():
    # Surprising: in warp-lang 1.19 `//` on signed ints is *Python* floor division
    # (builtin.h: floordiv_signed), e.g. -7 // 2 == -4, while `%` stays C-like (see below).
    fd, _, _ = _int_div_mod(SIGNED_A, SIGNED_B)
    np.testing.assert_array_equal(fd, np.floor_divide(SIGNED_A, SIGNED_B))
    assert fd[0] == -4


def test_int_true_div_truncates_toward_zero():
    # `/` on two ints gives an int, C truncation: -7 / 2 == -3.
    _, td, _ = _int_div_mod(SIGNED_A, SIGNED_B)
    np.testing.assert_array_equal(td, np.trunc(SIGNED_A / SIGNED_B).astype(np.int32))
    assert td[0] == -3


def test_int_mod_is_c_remainder():
    # `%` on ints is C's remainder (sign of the dividend): -7 % 2 == -1, 7 % -2 == 1.
    _, _, md = _int_div_mod(SIGNED_A, SIGNED_B)
    np.testing.assert_array_equal(md, np.fmod(SIGNED_A, SIGNED_B))
    assert md[0] == -1 and md[1] == 1


def test_float_div_floordiv_mod():
    a = f32([-7.0, 7.0, -7.5, 7.5, 1.25, -0.5])
    b = f32([2.0, -2.0, 2.0, 2.0, 0.5, 3.0])
    div, fd, md = zeros(6, float), zeros(6, float), zeros(6, float)
    launch(float_div_mod_pow_kernel, 6, warr(a, float), warr(b, float), div, fd, md)
    np.testing.assert_allclose(div.numpy(), a / b, rtol=RTOL)
    np.testing.assert_array_equal(fd.numpy(), np.floor(a / b))
    np.testing.assert_allclose(
        md.numpy(), np.fmod(a, b), rtol=RTOL, atol=ATOL
    )  # fmod, not Python %


def test_float_pow_operator():
    rng = np.random.default_rng(1)
    a = f32(rng.uniform(0.1, 3.0, 20))
    b = f32(rng.uniform(-2.0, 2.0, 20))
    p, sq = zeros(20, float), zeros(20, float)
    launch(float_pow_kernel, 20, warr(a, float), warr(b, float), p, sq)
    np.testing.assert_allclose(p.numpy(), a.astype(np.float64) ** b, rtol=1e-5)
    np.testing.assert_allclose(sq.numpy(), a * a, rtol=1e-5)


def test_int_arith_and_bitwise():
    rng = np.random.default_rng(2)
    a = rng.integers(-1000, 1000, 30).astype(np.int32)
    b = rng.integers(-1000, 1000, 30).astype(np.int32)
    out = zeros((10, 30), int)
    launch(int_arith_kernel, 30, warr(a, int), warr(b, int), out)
    ref = np.stack([a + b, a - b, a * b, -a, a * 3 - 7, a & b, a | b, a ^ b, a << 2, a >> 1])
    np.testing.assert_array_equal(out.numpy(), ref)


# =============================================================================================
# comparisons, boolean logic, branches


@wp.kernel
def compare_kernel(
    a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array2d(dtype=wp.bool)
):
    i = wp.tid()
    out[0, i] = a[i] < b[i]
    out[1, i] = a[i] <= b[i]
    out[2, i] = a[i] > b[i]
    out[3, i] = a[i] >= b[i]
    out[4, i] = a[i] == b[i]
    out[5, i] = a[i] != b[i]


@wp.kernel
def int_compare_kernel(
    a: wp.array(dtype=int), b: wp.array(dtype=int), out: wp.array2d(dtype=wp.bool)
):
    i = wp.tid()
    out[0, i] = a[i] < b[i]
    out[1, i] = a[i] <= b[i]
    out[2, i] = a[i] > b[i]
    out[3, i] = a[i] >= b[i]
    out[4, i] = a[i] == b[i]
    out[5, i] = a[i] != b[i]


@wp.kernel
def bool_logic_kernel(
    a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array2d(dtype=wp.bool)
):
    i = wp.tid()
    p = a[i] > 0.0
    q = b[i] > 0.0
    out[0, i] = p and q
    out[1, i] = p or q
    out[2, i] = not p
    out[3, i] = (p and not q) or (q and not p)
    out[4, i] = a[i] > 0.0 and b[i] > 0.0 and a[i] > b[i]


@wp.kernel
def if_elif_else_kernel(
    x: wp.array(dtype=float), y: wp.array(dtype=float), code: wp.array(dtype=int)
):
    i = wp.tid()
    v = x[i]
    r = 0.0
    c = 0
    if v < -1.0:
        r = -v
        c = 1
    elif v < 0.0:
        r = v * v
        c = 2
    elif v < 1.0:
        r = 2.0 * v
        c = 3
    else:
        r = v + 10.0
        c = 4
    y[i] = r
    code[i] = c


@wp.kernel
def nested_if_kernel(a: wp.array(dtype=int), b: wp.array(dtype=int), out: wp.array(dtype=int)):
    i = wp.tid()
    r = 0
    if a[i] > 0:
        if b[i] > 0:
            r = 1
        else:
            r = 2
        r = r * 10
    else:
        if b[i] > 0:
            r = 3
    out[i] = r


@wp.kernel
def ternary_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float), v: wp.array(dtype=wp.vec2)):
    i = wp.tid()
    y[i] = x[i] * 2.0 if x[i] > 0.0 else -x[i] - 1.0
    v[i] = wp.vec2(1.0, x[i]) if x[i] > 0.5 else wp.vec2(x[i], -1.0)


def test_float_comparisons():
    a = f32([1.0, 2.0, 3.0, -1.0, 0.0, 5.5])
    b = f32([2.0, 2.0, 1.0, -1.0, -0.0, 5.25])
    out = zeros((6, 6), wp.bool)
    launch(compare_kernel, 6, warr(a, float), warr(b, float), out)
    ref = np.stack([a < b, a <= b, a > b, a >= b, a == b, a != b])
    np.testing.assert_array_equal(out.numpy(), ref)


def test_int_comparisons():
    a = np.array([1, 2, 3, -1, 0, -5], dtype=np.int32)
    b = np.array([2, 2, 1, -1, 0, 5], dtype=np.int32)
    out = zeros((6, 6), wp.bool)
    launch(int_compare_kernel, 6, warr(a, int), warr(b, int), out)
    np.testing.assert_array_equal(
        out.numpy(), np.stack([a < b, a <= b, a > b, a >= b, a == b, a != b])
    )


def test_and_or_not():
    a = f32([1.0, 1.0, -1.0, -1.0, 3.0, 2.0])
    b = f32([1.0, -1.0, 1.0, -1.0, 2.0, 3.0])
    out = zeros((5, 6), wp.bool)
    launch(bool_logic_kernel, 6, warr(a, float), warr(b, float), out)
    p, q = a > 0, b > 0
    ref = np.stack([p & q, p | q, ~p, p ^ q, p & q & (a > b)])
    np.testing.assert_array_equal(out.numpy(), ref)


def test_if_elif_else():
    x = f32(np.linspace(-3.0, 3.0, 25))
    y, code = zeros(25, float), zeros(25, int)
    launch(if_elif_else_kernel, 25, warr(x, float), y, code)
    conds = [x < -1.0, x < 0.0, x < 1.0]
    np.testing.assert_allclose(y.numpy(), np.select(conds, [-x, x * x, 2 * x], x + 10.0), rtol=RTOL)
    np.testing.assert_array_equal(code.numpy(), np.select(conds, [1, 2, 3], 4))


def test_nested_if():
    a = np.array([1, 1, -1, -1], dtype=np.int32)
    b = np.array([1, -1, 1, -1], dtype=np.int32)
    out = zeros(4, int)
    launch(nested_if_kernel, 4, warr(a, int), warr(b, int), out)
    np.testing.assert_array_equal(out.numpy(), [10, 20, 3, 0])


def test_ternary_expression():
    x = f32([-2.0, -0.5, 0.25, 0.75, 3.0])
    y, v = zeros(5, float), zeros(5, wp.vec2)
    launch(ternary_kernel, 5, warr(x, float), y, v)
    np.testing.assert_allclose(y.numpy(), np.where(x > 0, 2 * x, -x - 1), rtol=RTOL)
    refv = np.where((x > 0.5)[:, None], np.stack([np.ones(5), x], 1), np.stack([x, -np.ones(5)], 1))
    np.testing.assert_allclose(v.numpy(), refv, rtol=RTOL)


# =============================================================================================
# loops


@wp.kernel
def range3_runtime_kernel(start: int, stop: int, step: int, out: wp.array(dtype=int)):
    # Warp: a variable mutated in a dynamic loop must not be initialised from a bare literal
    # ("Error mutating a constant ... inside a dynamic loop"), hence int(0).
    s = int(0)
    c = int(0)
    last = int(-999)
    for k in range(start, stop, step):
        s += k * k
        c += 1
        last = k
    out[0] = s
    out[1] = c
    out[2] = last


@wp.kernel
def range12_runtime_kernel(a: int, b: int, out: wp.array(dtype=int)):
    s1 = int(0)
    for k in range(b):
        s1 += k + 1
    s2 = int(0)
    for k in range(a, b):
        s2 += 2 * k + 1
    out[0] = s1
    out[1] = s2


@wp.kernel
def range_const_kernel(out: wp.array(dtype=int)):
    s = int(0)
    for k in range(5):
        s += k
    out[0] = s
    s = int(0)
    for k in range(2, 8):
        s += k * k
    out[1] = s
    s = int(0)
    for k in range(10, 0, -2):
        s = s * 3 + k  # order-dependent
    out[2] = s
    s = int(0)
    for k in range(0, 100, 3):  # long constant loop (beyond any unroll limit)
        s += k
    out[3] = s
    s = int(0)
    for _k in range(-3):  # empty
        s += 1
    out[4] = s


@wp.kernel
def nested_loops_kernel(n: int, out: wp.array2d(dtype=int)):
    i = wp.tid()
    s = int(0)
    for a in range(n):
        for b in range(a, n):
            s += (a + 1) * (b + 2) + i
    out[i, 0] = s
    t = int(0)
    for a in range(3):
        for b in range(a):
            t = t * 2 + a - b
    out[i, 1] = t


@wp.kernel
def collatz_kernel(x: wp.array(dtype=int), steps: wp.array(dtype=int)):
    i = wp.tid()
    v = x[i]
    c = int(0)
    while v != 1:
        if v % 2 == 0:
            v = v / 2
        else:
            v = 3 * v + 1
        c += 1
    steps[i] = c


@wp.kernel
def break_kernel(
    x: wp.array(dtype=float),
    n: int,
    thresh: float,
    idx: wp.array(dtype=int),
    total: wp.array(dtype=float),
):
    s = float(0.0)
    found = int(-1)
    for k in range(n):
        s += x[k]
        if s > thresh:
            found = k
            break
    idx[0] = found
    total[0] = s


@wp.kernel
def continue_kernel(n: int, out: wp.array(dtype=int)):
    s = int(0)
    c = int(0)
    for k in range(n):
        if k % 3 == 0:
            continue
        s += k
        c += 1
    out[0] = s
    out[1] = c


@wp.kernel
def while_break_continue_kernel(n: int, out: wp.array(dtype=int)):
    k = int(0)
    s = int(0)
    while True:
        k += 1
        if k > n:
            break
        if k % 2 == 1:
            continue
        s += k
    out[0] = s
    out[1] = k


RANGES = [
    (0, 10, 1),
    (10, 0, -1),
    (3, 17, 4),
    (5, 5, 1),
    (10, 0, -3),
    (0, 10, -1),
    (-5, 5, 2),
    (7, -8, -5),
]


@pytest.mark.parametrize("start,stop,step", RANGES)
def test_range_three_runtime_args(start, stop, step):
    out = zeros(3, int)
    launch(range3_runtime_kernel, 1, start, stop, step, out)
    ks = list(range(start, stop, step))
    np.testing.assert_array_equal(
        out.numpy(), [sum(k * k for k in ks), len(ks), ks[-1] if ks else -999]
    )


@pytest.mark.parametrize("a,b", [(0, 6), (3, 9), (4, 2), (0, 0)])
def test_range_one_and_two_runtime_args(a, b):
    out = zeros(2, int)
    launch(range12_runtime_kernel, 1, a, b, out)
    np.testing.assert_array_equal(
        out.numpy(), [sum(k + 1 for k in range(b)), sum(2 * k + 1 for k in range(a, b))]
    )


def test_range_constant_bounds():
    out = zeros(5, int)
    launch(range_const_kernel, 1, out)
    s = 0
    for k in range(10, 0, -2):
        s = s * 3 + k
    np.testing.assert_array_equal(
        out.numpy(), [10, sum(k * k for k in range(2, 8)), s, sum(range(0, 100, 3)), 0]
    )


def test_nested_loops():
    n = 6
    out = zeros((4, 2), int)
    launch(nested_loops_kernel, 4, n, out)
    t = 0
    for a in range(3):
        for b in range(a):
            t = t * 2 + a - b
    for i in range(4):
        s = sum((a + 1) * (b + 2) + i for a in range(n) for b in range(a, n))
        np.testing.assert_array_equal(out.numpy()[i], [s, t])


def test_while_loop_collatz():
    x = np.array([1, 2, 3, 6, 7, 27, 97], dtype=np.int32)
    steps = zeros(len(x), int)
    launch(collatz_kernel, len(x), warr(x, int), steps)

    def collatz(v):
        c = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            c += 1
        return c

    np.testing.assert_array_equal(steps.numpy(), [collatz(int(v)) for v in x])


@pytest.mark.parametrize("thresh", [-10.0, 1.0, 2.5, 100.0])
def test_break_in_for(thresh):
    x = f32([0.5, 0.25, 1.0, 0.75, 2.0, 0.5])
    idx, total = zeros(1, int), zeros(1, float)
    launch(break_kernel, 1, warr(x, float), len(x), thresh, idx, total)
    cs = np.cumsum(x)
    hit = np.nonzero(cs > thresh)[0]
    k = int(hit[0]) if len(hit) else -1
    assert idx.numpy()[0] == k
    np.testing.assert_allclose(total.numpy()[0], cs[k] if k >= 0 else cs[-1], rtol=RTOL)


def test_continue_in_for():
    out = zeros(2, int)
    launch(continue_kernel, 1, 20, out)
    ks = [k for k in range(20) if k % 3 != 0]
    np.testing.assert_array_equal(out.numpy(), [sum(ks), len(ks)])


def test_while_true_with_break_and_continue():
    out = zeros(2, int)
    launch(while_break_continue_kernel, 1, 11, out)
    np.testing.assert_array_equal(out.numpy(), [sum(k for k in range(1, 12) if k % 2 == 0), 12])


# =============================================================================================
# augmented assignment


@wp.kernel
def aug_locals_kernel(
    x: wp.array(dtype=float),
    n: wp.array(dtype=int),
    y: wp.array2d(dtype=float),
    m: wp.array2d(dtype=int),
):
    i = wp.tid()
    a = x[i]
    a += 1.5
    y[0, i] = a
    a -= 0.25
    y[1, i] = a
    a *= 3.0
    y[2, i] = a
    a /= 2.0
    y[3, i] = a
    k = n[i]
    k += 5
    m[0, i] = k
    k -= 2
    m[1, i] = k
    k *= 3
    m[2, i] = k


@wp.kernel
def aug_array_elem_kernel(
    a: wp.array(dtype=float),
    b: wp.array(dtype=float),
    c: wp.array(dtype=float),
    d: wp.array(dtype=float),
    x: wp.array(dtype=float),
):
    i = wp.tid()
    a[i] += x[i]
    b[i] -= x[i]
    c[i] *= x[i]
    d[i] /= x[i]


def test_augmented_assignment_locals():
    x = f32([0.5, -2.0, 3.0])
    n = np.array([1, -7, 4], dtype=np.int32)
    y, m = zeros((4, 3), float), zeros((3, 3), int)
    launch(aug_locals_kernel, 3, warr(x, float), warr(n, int), y, m)
    a1 = x + f32(1.5)
    a2 = a1 - f32(0.25)
    a3 = a2 * f32(3.0)
    a4 = a3 / f32(2.0)
    np.testing.assert_allclose(y.numpy(), np.stack([a1, a2, a3, a4]), rtol=RTOL)
    np.testing.assert_array_equal(m.numpy(), np.stack([n + 5, n + 3, (n + 3) * 3]))


def test_augmented_assignment_array_elements():
    rng = np.random.default_rng(3)
    base = f32(rng.uniform(1.0, 2.0, 8))
    x = f32(rng.uniform(0.5, 1.5, 8))
    a, b, c, d = (warr(base, float) for _ in range(4))
    launch(aug_array_elem_kernel, 8, a, b, c, d, warr(x, float))
    np.testing.assert_allclose(a.numpy(), base + x, rtol=RTOL)
    np.testing.assert_allclose(b.numpy(), base - x, rtol=RTOL)
    np.testing.assert_allclose(c.numpy(), base * x, rtol=RTOL)
    np.testing.assert_allclose(d.numpy(), base / x, rtol=RTOL)


# =============================================================================================
# vector / matrix components


@wp.kernel
def vec_read_kernel(
    v: wp.array(dtype=wp.vec3), k: wp.array(dtype=int), out: wp.array2d(dtype=float)
):
    i = wp.tid()
    a = v[i]
    out[i, 0] = a.x
    out[i, 1] = a.y
    out[i, 2] = a.z
    out[i, 3] = a[0] + 10.0 * a[2]
    out[i, 4] = a[k[i]]  # runtime component index
    out[i, 5] = v[i][1]  # component of an array element


@wp.kernel
def vec_write_kernel(
    v: wp.array(dtype=wp.vec3), k: wp.array(dtype=int), out: wp.array(dtype=wp.vec3)
):
    i = wp.tid()
    a = v[i]
    a.x = a.x * 2.0
    a[1] = -a[1]
    a[k[i]] = a[k[i]] + 100.0
    out[i] = a


@wp.kernel
def vec4_swizzle_free_kernel(v: wp.array(dtype=wp.vec4), out: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    a = v[i]
    b = wp.vec4(a.w, a.z, a.y, a.x)
    b.w = b.w + 1.0
    out[i] = b


@wp.kernel
def mat_read_kernel(
    m: wp.array(dtype=wp.mat33),
    r: int,
    c: int,
    elem: wp.array(dtype=float),
    row: wp.array(dtype=wp.vec3),
    fixed: wp.array(dtype=float),
):
    i = wp.tid()
    a = m[i]
    elem[i] = a[r, c]
    row[i] = a[r]
    fixed[i] = a[0, 2] - a[2, 0] + a[1][1]


@wp.kernel
def mat_write_kernel(m: wp.array(dtype=wp.mat33), r: int, c: int, out: wp.array(dtype=wp.mat33)):
    i = wp.tid()
    a = m[i]
    a[0, 1] = 5.0
    a[r, c] = a[r, c] * 2.0 + 1.0
    a[2] = wp.vec3(-1.0, -2.0, -3.0)
    out[i] = a


@wp.kernel
def array_elem_component_write_kernel(
    y: wp.array(dtype=wp.vec3), x: wp.array(dtype=float), m: wp.array(dtype=wp.mat22)
):
    tid = wp.tid()
    y[tid].x = x[tid]
    y[tid][1] = 2.0 * x[tid]
    m[tid][1, 0] = x[tid] + 1.0


def test_vec_component_reads():
    rng = np.random.default_rng(4)
    v = f32(rng.standard_normal((10, 3)))
    k = rng.integers(0, 3, 10).astype(np.int32)
    out = zeros((10, 6), float)
    launch(vec_read_kernel, 10, warr(v, wp.vec3), warr(k, int), out)
    ref = np.stack(
        [v[:, 0], v[:, 1], v[:, 2], v[:, 0] + 10 * v[:, 2], v[np.arange(10), k], v[:, 1]], 1
    )
    np.testing.assert_allclose(out.numpy(), ref, rtol=RTOL, atol=ATOL)


def test_vec_component_writes():
    rng = np.random.default_rng(5)
    v = f32(rng.standard_normal((10, 3)))
    k = rng.integers(0, 3, 10).astype(np.int32)
    out = zeros(10, wp.vec3)
    launch(vec_write_kernel, 10, warr(v, wp.vec3), warr(k, int), out)
    ref = v.copy()
    ref[:, 0] *= 2
    ref[:, 1] *= -1
    ref[np.arange(10), k] += 100
    np.testing.assert_allclose(out.numpy(), ref, rtol=RTOL, atol=ATOL)


def test_vec4_w_component():
    v = f32(np.arange(12).reshape(3, 4))
    out = zeros(3, wp.vec4)
    launch(vec4_swizzle_free_kernel, 3, warr(v, wp.vec4), out)
    ref = v[:, ::-1].copy()
    ref[:, 3] += 1
    np.testing.assert_array_equal(out.numpy(), ref)


@pytest.mark.parametrize("r,c", [(0, 0), (1, 2), (2, 1)])
def test_mat_element_and_row_reads(r, c):
    m = f32(np.random.default_rng(6).standard_normal((5, 3, 3)))
    elem, row, fixed = zeros(5, float), zeros(5, wp.vec3), zeros(5, float)
    launch(mat_read_kernel, 5, warr(m, wp.mat33), r, c, elem, row, fixed)
    np.testing.assert_allclose(elem.numpy(), m[:, r, c], rtol=RTOL)
    np.testing.assert_allclose(row.numpy(), m[:, r, :], rtol=RTOL)
    np.testing.assert_allclose(
        fixed.numpy(), m[:, 0, 2] - m[:, 2, 0] + m[:, 1, 1], rtol=RTOL, atol=ATOL
    )


@pytest.mark.parametrize("r,c", [(0, 0), (1, 2)])
def test_mat_element_and_row_writes(r, c):
    m = f32(np.random.default_rng(7).standard_normal((4, 3, 3)))
    out = zeros(4, wp.mat33)
    launch(mat_write_kernel, 4, warr(m, wp.mat33), r, c, out)
    ref = m.copy()
    ref[:, 0, 1] = 5.0
    ref[:, r, c] = ref[:, r, c] * 2 + 1
    ref[:, 2, :] = [-1, -2, -3]
    np.testing.assert_allclose(out.numpy(), ref, rtol=RTOL)


def test_write_component_of_array_element():
    y0 = f32(np.random.default_rng(8).standard_normal((6, 3)))
    m0 = f32(np.random.default_rng(9).standard_normal((6, 2, 2)))
    x = f32(np.arange(6))
    y, m = warr(y0, wp.vec3), warr(m0, wp.mat22)
    launch(array_elem_component_write_kernel, 6, y, warr(x, float), m)
    ref = y0.copy()
    ref[:, 0] = x
    ref[:, 1] = 2 * x
    np.testing.assert_array_equal(y.numpy(), ref)  # z untouched
    refm = m0.copy()
    refm[:, 1, 0] = x + 1
    np.testing.assert_array_equal(m.numpy(), refm)


# =============================================================================================
# multi-dimensional arrays and launches


@wp.kernel
def index_forms_kernel(
    a: wp.array2d(dtype=float), out1: wp.array2d(dtype=float), out2: wp.array2d(dtype=float)
):
    i, j = wp.tid()
    out1[i, j] = a[i, j] * 2.0
    out2[i][j] = a[i][j] + 1.0


@wp.kernel
def array3d_kernel(a: wp.array3d(dtype=float), out: wp.array3d(dtype=float)):
    i, j, k = wp.tid()
    out[i, j, k] = a[i, j, k] - a[i, 0, 0] + float(k)


@wp.kernel
def launch1d_kernel(out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = i * 7 + 1


@wp.kernel
def launch2d_kernel(out: wp.array2d(dtype=int)):
    i, j = wp.tid()
    out[i, j] = i * 100 + j


@wp.kernel
def launch3d_kernel(out: wp.array3d(dtype=int)):
    i, j, k = wp.tid()
    out[i, j, k] = i * 10000 + j * 100 + k


@wp.kernel
def launch4d_kernel(out: wp.array4d(dtype=int)):
    i, j, k, l = wp.tid()
    out[i, j, k, l] = i * 1000000 + j * 10000 + k * 100 + l


@wp.kernel
def array_shape_kernel(a: wp.array3d(dtype=float), out: wp.array(dtype=int)):
    out[0] = a.shape[0]
    out[1] = a.shape[1]
    out[2] = a.shape[2]


def test_2d_index_forms_comma_and_chained():
    a = f32(np.random.default_rng(10).standard_normal((5, 7)))
    o1, o2 = zeros((5, 7), float), zeros((5, 7), float)
    launch(index_forms_kernel, (5, 7), warr(a, float), o1, o2)
    np.testing.assert_allclose(o1.numpy(), 2 * a, rtol=RTOL)
    np.testing.assert_allclose(o2.numpy(), a + 1, rtol=RTOL)


def test_3d_array_indexing():
    a = f32(np.random.default_rng(11).standard_normal((3, 4, 5)))
    out = zeros((3, 4, 5), float)
    launch(array3d_kernel, (3, 4, 5), warr(a, float), out)
    ref = a - a[:, :1, :1] + np.arange(5, dtype=np.float32)
    np.testing.assert_allclose(out.numpy(), ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(
    "kernel,shape,weights",
    [
        (launch1d_kernel, (13,), None),
        (launch2d_kernel, (3, 5), (100, 1)),
        (launch3d_kernel, (2, 3, 4), (10000, 100, 1)),
        (launch4d_kernel, (2, 3, 4, 5), (1000000, 10000, 100, 1)),
    ],
    ids=["1d", "2d", "3d", "4d"],
)
def test_launch_dims_and_tid_unpacking(kernel, shape, weights):
    out = zeros(shape, int)
    launch(kernel, shape, out)
    idx = np.indices(shape)
    ref = idx[0] * 7 + 1 if weights is None else sum(w * ix for w, ix in zip(weights, idx))
    np.testing.assert_array_equal(out.numpy(), ref)


def test_array_shape_in_kernel():
    out = zeros(3, int)
    launch(array_shape_kernel, 1, zeros((2, 5, 3), float), out)
    np.testing.assert_array_equal(out.numpy(), [2, 5, 3])


# =============================================================================================
# structs


@wp.struct
class Particle:
    mass: float
    pos: wp.vec3
    rot: wp.mat22
    id: int


@wp.struct
class Inner:
    a: float
    v: wp.vec3


@wp.struct
class Outer:
    inner: Inner
    n: int


@wp.kernel
def struct_read_kernel(p: Particle, x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    q = p.rot * wp.vec2(x[i], 1.0)
    out[i] = p.mass * x[i] + p.pos[1] + p.pos.z + q[0] + float(p.id)


@wp.kernel
def nested_struct_kernel(s: Outer, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = s.inner.a * float(i) + s.inner.v[i % 3] + float(s.n)


@wp.kernel
def struct_array_kernel(ps: wp.array(dtype=Particle), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = ps[i].mass * ps[i].pos.x + float(ps[i].id)


def test_struct_field_reads():
    p = Particle()
    p.mass = 2.0
    p.pos = wp.vec3(1.0, -3.0, 0.5)
    p.rot = wp.mat22(1.0, 2.0, 3.0, 4.0)
    p.id = 42
    x = f32(np.linspace(-1, 1, 9))
    out = zeros(9, float)
    launch(struct_read_kernel, 9, p, warr(x, float), out)
    np.testing.assert_allclose(out.numpy(), 2 * x - 3 + 0.5 + (x + 2) + 42, rtol=RTOL, atol=ATOL)


def test_nested_struct():
    s = Outer()
    s.inner.a = 0.5
    s.inner.v = wp.vec3(10.0, 20.0, 30.0)
    s.n = 100
    out = zeros(7, float)
    launch(nested_struct_kernel, 7, s, out)
    i = np.arange(7)
    np.testing.assert_allclose(
        out.numpy(), 0.5 * i + np.array([10.0, 20.0, 30.0])[i % 3] + 100, rtol=RTOL
    )


def test_array_of_structs():
    ps = []
    for k in range(4):
        p = Particle()
        p.mass = float(k + 1)
        p.pos = wp.vec3(float(k) * 0.5, 0.0, 0.0)
        p.id = 10 * k
        ps.append(p)
    out = zeros(4, float)
    launch(struct_array_kernel, 4, wp.array(ps, dtype=Particle, device=DEVICE), out)
    k = np.arange(4)
    np.testing.assert_allclose(out.numpy(), (k + 1) * k * 0.5 + 10 * k, rtol=RTOL)


# =============================================================================================
# globals, wp.static, funcs


SCALE = wp.constant(2.5)
OFFSET_VEC = wp.constant(wp.vec3(1.0, 2.0, 3.0))
PY_INT = 3
PY_FLOAT = 0.75


@wp.kernel
def wp_constant_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * SCALE + OFFSET_VEC[1]


@wp.kernel
def python_global_kernel(
    x: wp.array(dtype=float), y: wp.array(dtype=float), n: wp.array(dtype=int)
):
    i = wp.tid()
    y[i] = x[i] * PY_FLOAT + float(PY_INT)
    n[i] = i * PY_INT


@wp.kernel
def static_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=int)):
    i = wp.tid()
    y[i] = x[i] * wp.static(PY_FLOAT * 4.0)
    s = int(0)
    for k in range(wp.static(PY_INT * 2)):
        s += k
    z[i] = s + wp.static(2**PY_INT)


@wp.func
def sq(x: float):
    return x * x


@wp.func
def poly(x: float):
    return 3.0 * sq(x) - x + 1.0


@wp.func
def vec_poly(v: wp.vec3):
    return wp.vec3(poly(v[0]), poly(v[1]), sq(v[2]))


@wp.kernel
def func_chain_kernel(
    v: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3), s: wp.array(dtype=float)
):
    i = wp.tid()
    out[i] = vec_poly(v[i])
    s[i] = poly(sq(v[i][0]))


def test_wp_constant_globals():
    x = f32(np.arange(5))
    y = zeros(5, float)
    launch(wp_constant_kernel, 5, warr(x, float), y)
    np.testing.assert_allclose(y.numpy(), x * 2.5 + 2.0, rtol=RTOL)


def test_plain_python_globals():
    x = f32(np.arange(5))
    y, n = zeros(5, float), zeros(5, int)
    launch(python_global_kernel, 5, warr(x, float), y, n)
    np.testing.assert_allclose(y.numpy(), x * 0.75 + 3.0, rtol=RTOL)
    np.testing.assert_array_equal(n.numpy(), np.arange(5) * 3)


def test_wp_static_expressions():
    x = f32(np.arange(4))
    y, z = zeros(4, float), zeros(4, int)
    launch(static_kernel, 4, warr(x, float), y, z)
    np.testing.assert_allclose(y.numpy(), x * 3.0, rtol=RTOL)
    np.testing.assert_array_equal(z.numpy(), [sum(range(6)) + 8] * 4)


@wp.kernel
def same_value_both_branches_kernel(flags: wp.array(dtype=int), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    p = wp.vec3(1.0, 2.0, 3.0)
    q = wp.vec3(-1.0, 0.0, 1.0)
    if flags[i] == 0:
        first = p  # the same value on both branches, made before the if
        second = q
    else:
        first = p
        second = p
    out[i] = first + second


def test_a_name_both_branches_bind_to_one_value_is_defined_after_the_if():
    # newton's heightfield triangles: `v0_local = p00` on both sides of an if
    out = zeros(2, wp.vec3)
    launch(same_value_both_branches_kernel, 2, warr(np.array([0, 1]), int), out)
    np.testing.assert_allclose(out.numpy(), [[0.0, 2.0, 4.0], [2.0, 4.0, 6.0]])


@wp.kernel
def pick_array_kernel(a: wp.array(dtype=int), b: wp.array(dtype=int), flags: wp.array(dtype=int),
                      out: wp.array(dtype=int)):
    i = wp.tid()
    ids = a if flags[i] == 0 else b  # MuJoCo Warp's ray casts pick a BVH id array so
    out[i] = ids[i]


def test_a_conditional_expression_picks_an_array():
    a, b = warr(np.array([1, 2, 3]), int), warr(np.array([10, 20, 30]), int)
    out = zeros(3, int)
    launch(pick_array_kernel, 3, a, b, warr(np.array([0, 1, 0]), int), out)
    np.testing.assert_array_equal(out.numpy(), [1, 20, 3])


def _scale_func(n: int):
    @wp.func
    def scale(v: float):
        return v * float(n)

    return scale


@wp.kernel
def static_local_kernel(x: wp.array(dtype=float)):
    i = wp.tid()
    factor = wp.static(PY_INT)  # a local a later static expression reads, as in Warp
    if x[i] < -1.0e9:
        return
    x[i] = wp.static(_scale_func(factor))(x[i])


def test_wp_static_reads_a_local_assigned_from_a_static():
    x = warr(f32(np.arange(4)), float)
    launch(static_local_kernel, 4, x)
    np.testing.assert_allclose(x.numpy(), np.arange(4) * PY_INT, rtol=RTOL)


def test_funcs_calling_funcs():
    v = f32(np.random.default_rng(12).standard_normal((8, 3)))
    out, s = zeros(8, wp.vec3), zeros(8, float)
    launch(func_chain_kernel, 8, warr(v, wp.vec3), out, s)
    poly_np = lambda t: 3 * t * t - t + 1  # noqa: E731
    ref = np.stack([poly_np(v[:, 0]), poly_np(v[:, 1]), v[:, 2] ** 2], 1)
    np.testing.assert_allclose(out.numpy(), ref, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(s.numpy(), poly_np(v[:, 0] ** 2), rtol=RTOL, atol=ATOL)


# =============================================================================================
# constructors and casts


@wp.kernel
def vec_ctor_kernel(
    x: wp.array(dtype=float),
    out: wp.array2d(dtype=wp.vec3),
    v2: wp.array(dtype=wp.vec2),
    v4: wp.array(dtype=wp.vec4),
):
    i = wp.tid()
    out[i, 0] = wp.vec3(1.0, 2.0, 3.0)
    out[i, 1] = wp.vec3()
    out[i, 2] = wp.vec3(x[i])
    out[i, 3] = wp.vec3(x[i], 2.0 * x[i], -x[i])
    v2[i] = wp.vec2(x[i], 0.5)
    v4[i] = wp.vec4(x[i], 1.0, 2.0, 3.0)


@wp.kernel
def mat_ctor_kernel(
    x: wp.array(dtype=float),
    out: wp.array2d(dtype=wp.mat33),
    m2: wp.array(dtype=wp.mat22),
    m4: wp.array(dtype=wp.mat44),
):
    i = wp.tid()
    a = x[i]
    out[i, 0] = wp.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, a)  # row-major
    out[i, 1] = wp.identity(n=3, dtype=float)
    out[i, 2] = wp.mat33()
    m2[i] = wp.mat22(a, 1.0, 2.0, 3.0)
    m4[i] = wp.identity(n=4, dtype=float) * a


@wp.kernel
def cast_kernel(
    x: wp.array(dtype=float),
    n: wp.array(dtype=int),
    to_int: wp.array(dtype=int),
    to_float: wp.array(dtype=float),
    to_f64: wp.array(dtype=wp.float64),
    to_i32: wp.array(dtype=wp.int32),
):
    i = wp.tid()
    to_int[i] = int(x[i])
    to_float[i] = float(n[i]) / 2.0
    to_f64[i] = wp.float64(x[i]) * wp.float64(3.0)
    to_i32[i] = wp.int32(x[i] * 10.0)


def test_vec_constructors():
    x = f32([0.5, -2.0, 3.0])
    out, v2, v4 = zeros((3, 4), wp.vec3), zeros(3, wp.vec2), zeros(3, wp.vec4)
    launch(vec_ctor_kernel, 3, warr(x, float), out, v2, v4)
    o = out.numpy()
    np.testing.assert_array_equal(o[:, 0], np.tile([1, 2, 3], (3, 1)))
    np.testing.assert_array_equal(o[:, 1], np.zeros((3, 3)))
    np.testing.assert_array_equal(o[:, 2], np.repeat(x[:, None], 3, 1))
    np.testing.assert_array_equal(o[:, 3], np.stack([x, 2 * x, -x], 1))
    np.testing.assert_array_equal(v2.numpy(), np.stack([x, np.full(3, 0.5)], 1))
    np.testing.assert_array_equal(
        v4.numpy(), np.stack([x, np.ones(3), 2 * np.ones(3), 3 * np.ones(3)], 1)
    )


def test_mat_constructors_and_identity():
    x = f32([0.5, -2.0])
    out, m2, m4 = zeros((2, 3), wp.mat33), zeros(2, wp.mat22), zeros(2, wp.mat44)
    launch(mat_ctor_kernel, 2, warr(x, float), out, m2, m4)
    o = out.numpy()
    for i in range(2):
        np.testing.assert_array_equal(o[i, 0], [[1, 2, 3], [4, 5, 6], [7, 8, x[i]]])
        np.testing.assert_array_equal(o[i, 1], np.eye(3))
        np.testing.assert_array_equal(o[i, 2], np.zeros((3, 3)))
        np.testing.assert_array_equal(m2.numpy()[i], [[x[i], 1], [2, 3]])
        np.testing.assert_array_equal(m4.numpy()[i], np.eye(4) * x[i])


def test_casts():
    x = f32([2.7, -2.7, 0.4, -0.4, 7.0])
    n = np.array([3, -3, 0, 7, -8], dtype=np.int32)
    ti, tf, t64, t32 = zeros(5, int), zeros(5, float), zeros(5, wp.float64), zeros(5, wp.int32)
    launch(cast_kernel, 5, warr(x, float), warr(n, int), ti, tf, t64, t32)
    np.testing.assert_array_equal(ti.numpy(), np.trunc(x).astype(np.int32))  # toward zero
    np.testing.assert_array_equal(tf.numpy(), n.astype(np.float32) / 2)
    np.testing.assert_allclose(t64.numpy(), x.astype(np.float64) * 3.0, rtol=1e-12)
    np.testing.assert_array_equal(t32.numpy(), np.trunc(x * np.float32(10.0)).astype(np.int32))


# =============================================================================================
# value arguments at launch


@wp.kernel
def value_args_kernel(
    s: float,
    k: int,
    d: wp.float64,
    v: wp.vec3,
    m: wp.mat33,
    p: Particle,
    out: wp.array(dtype=float),
    out64: wp.array(dtype=wp.float64),
):
    i = wp.tid()
    mv = m * v
    out[i] = s * float(i) + float(k) + mv[i % 3] + p.mass + v[2]
    out64[i] = d * wp.float64(i)


def test_value_arguments_scalar_vec_mat_struct():
    rng = np.random.default_rng(13)
    m = f32(rng.standard_normal((3, 3)))
    v = f32([1.0, -2.0, 0.5])
    p = Particle()
    p.mass = 7.0
    out, out64 = zeros(6, float), zeros(6, wp.float64)
    launch(
        value_args_kernel, 6, 1.5, -4, 1.0 / 3.0, wp.vec3(*v), wp.mat33(*m.flatten()), p, out, out64
    )
    i = np.arange(6)
    ref = 1.5 * i - 4 + (m @ v)[i % 3] + 7.0 + 0.5
    np.testing.assert_allclose(out.numpy(), ref, rtol=RTOL, atol=1e-5)
    np.testing.assert_allclose(out64.numpy(), (1.0 / 3.0) * i, rtol=1e-14)  # really float64


# =============================================================================================
# dtypes


@wp.kernel
def int64_kernel(a: wp.array(dtype=wp.int64), b: wp.array(dtype=wp.int64)):
    i = wp.tid()
    b[i] = a[i] * wp.int64(3) + wp.int64(i)  # Warp: int literals do not adopt int64, cast them


@wp.kernel
def uint32_kernel(
    a: wp.array(dtype=wp.uint32), b: wp.array(dtype=wp.uint32), c: wp.array(dtype=wp.uint32)
):
    i = wp.tid()
    b[i] = a[i] - wp.uint32(1)  # wraps at 0
    c[i] = a[i] * wp.uint32(2654435761)  # wraps modulo 2**32


@wp.kernel
def float64_kernel(
    a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64), c: wp.array(dtype=wp.float64)
):
    i = wp.tid()
    # Warp: float literals do not adopt float64 (mixing float64 with 1.0 is a type error).
    b[i] = (a[i] + wp.float64(1.0e-12)) - a[i]
    c[i] = a[i] * a[i] / wp.float64(3.0)


@wp.kernel
def float16_kernel(a: wp.array(dtype=wp.float16), b: wp.array(dtype=wp.float16)):
    i = wp.tid()
    t = float(a[i])  # load half, compute in float32
    b[i] = wp.float16(t * 1.5 + 0.1)


@wp.kernel
def bool_kernel(
    a: wp.array(dtype=wp.bool),
    x: wp.array(dtype=float),
    b: wp.array(dtype=wp.bool),
    c: wp.array(dtype=float),
):
    i = wp.tid()
    b[i] = not a[i]
    if a[i]:
        c[i] = x[i]
    else:
        c[i] = -x[i]


def test_int64_array():
    a = np.array([2**40, -(2**35) + 7, 5, 2**61], dtype=np.int64)
    b = zeros(4, wp.int64)
    launch(int64_kernel, 4, warr(a, wp.int64), b)
    np.testing.assert_array_equal(b.numpy(), a * 3 + np.arange(4))


def test_uint32_array_wraparound():
    a = np.array([0, 1, 5, 2**32 - 1, 123456789], dtype=np.uint32)
    b, c = zeros(5, wp.uint32), zeros(5, wp.uint32)
    launch(uint32_kernel, 5, warr(a, wp.uint32), b, c)
    np.testing.assert_array_equal(b.numpy(), a - np.uint32(1))
    np.testing.assert_array_equal(
        c.numpy(), (a.astype(np.uint64) * 2654435761 % 2**32).astype(np.uint32)
    )


def test_float64_array_keeps_double_precision():
    a = np.array([1.0, 3.0, -2.5e3], dtype=np.float64)
    b, c = zeros(3, wp.float64), zeros(3, wp.float64)
    launch(float64_kernel, 3, warr(a, wp.float64), b, c)
    np.testing.assert_allclose(b.numpy(), (a + 1.0e-12) - a, rtol=1e-9)
    assert b.numpy()[0] != 0.0  # would be 0 in float32
    np.testing.assert_allclose(c.numpy(), a * a / 3.0, rtol=1e-15)


def test_float16_storage():
    a = np.array([0.5, -1.25, 3.0, 100.0, 0.001], dtype=np.float16)
    b = zeros(5, wp.float16)
    launch(float16_kernel, 5, warr(a, wp.float16), b)
    ref = (a.astype(np.float32) * np.float32(1.5) + np.float32(0.1)).astype(np.float16)
    assert b.numpy().dtype == np.float16
    np.testing.assert_array_equal(b.numpy(), ref)


def test_bool_array():
    a = np.array([True, False, False, True])
    x = f32([1.0, 2.0, 3.0, 4.0])
    b, c = zeros(4, wp.bool), zeros(4, float)
    launch(bool_kernel, 4, warr(a, wp.bool), warr(x, float), b, c)
    np.testing.assert_array_equal(b.numpy(), ~a)
    np.testing.assert_array_equal(c.numpy(), np.where(a, x, -x))


@wp.kernel
def python_round_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float), n: wp.array(dtype=int)):
    i = wp.tid()
    y[i] = round(x[i])
    n[i] = int(round(x[i]))


def test_python_round_is_wp_round():
    # Python's round() in a kernel halves away from zero (wp.round), not to even as in Python
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6], np.float32)
    y, n = zeros(7, float), zeros(7, int)
    launch(python_round_kernel, 7, warr(x, float), y, n)
    expected = np.sign(x) * np.floor(np.abs(x) + 0.5)
    np.testing.assert_array_equal(y.numpy(), expected)
    np.testing.assert_array_equal(n.numpy(), expected.astype(np.int32))


IDENTITY_SIZE = wp.constant(4)


@wp.kernel
def identity_from_constant_kernel(out: wp.array(dtype=wp.mat44)):
    out[0] = wp.identity(IDENTITY_SIZE, dtype=float) * 2.0 + wp.identity(4, dtype=float)


def test_identity_size_from_a_constant():
    # MuJoCo Warp passes the size positionally (a literal or a wp.constant)
    out = zeros(1, wp.mat44)
    launch(identity_from_constant_kernel, 1, out)
    np.testing.assert_array_equal(out.numpy()[0], 3.0 * np.eye(4))
