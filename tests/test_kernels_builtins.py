"""First kernel-language builtins, each checked against numpy.

Runs on the backend chosen by GL_TEST_BACKEND (see wpcompat.py). Validated against
warp-lang 1.19 on the CPU.
"""

import numpy as np
import pytest
from wpcompat import f32, launch, warr, wp, zeros

RTOL32, ATOL32 = 2e-6, 1e-6
RTOL64, ATOL64 = 1e-12, 1e-14


# =============================================================================================
# scalar math, float32 and float64


@wp.kernel
def sqrt32(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.sqrt(x[i])


@wp.kernel
def sin32(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.sin(x[i])


@wp.kernel
def cos32(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.cos(x[i])


@wp.kernel
def tan32(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.tan(x[i])


@wp.kernel
def exp32(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.exp(x[i])


@wp.kernel
def log32(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.log(x[i])


@wp.kernel
def abs32(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.abs(x[i])


@wp.kernel
def floor32(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.floor(x[i])


@wp.kernel
def ceil32(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.ceil(x[i])


@wp.kernel
def sqrt64(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.sqrt(x[i])


@wp.kernel
def sin64(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.sin(x[i])


@wp.kernel
def cos64(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.cos(x[i])


@wp.kernel
def tan64(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.tan(x[i])


@wp.kernel
def exp64(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.exp(x[i])


@wp.kernel
def log64(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.log(x[i])


@wp.kernel
def abs64(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.abs(x[i])


@wp.kernel
def floor64(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.floor(x[i])


@wp.kernel
def ceil64(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.ceil(x[i])


UNARY = {
    # name: (float32 kernel, float64 kernel, numpy reference, input domain)
    "sqrt": (sqrt32, sqrt64, np.sqrt, (0.0, 50.0)),
    "sin": (sin32, sin64, np.sin, (-10.0, 10.0)),
    "cos": (cos32, cos64, np.cos, (-10.0, 10.0)),
    "tan": (tan32, tan64, np.tan, (-1.4, 1.4)),
    "exp": (exp32, exp64, np.exp, (-10.0, 10.0)),
    "log": (log32, log64, np.log, (1e-3, 1e3)),
    "abs": (abs32, abs64, np.abs, (-5.0, 5.0)),
    "floor": (floor32, floor64, np.floor, (-5.0, 5.0)),
    "ceil": (ceil32, ceil64, np.ceil, (-5.0, 5.0)),
}


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_math(name, dtype):
    k32, k64, ref, (lo, hi) = UNARY[name]
    np_t, wp_t, kernel = (
        (np.float32, float, k32) if dtype == "float32" else (np.float64, wp.float64, k64)
    )
    x = np.random.default_rng(0).uniform(lo, hi, 64).astype(np_t)
    if name in ("floor", "ceil"):
        x[:6] = [-2.0, -1.5, -0.5, 0.0, 0.5, 3.0]
    y = zeros(64, wp_t)
    launch(kernel, 64, warr(x, wp_t), y)
    # reference in float64 from the (exactly representable) inputs
    expected = ref(x.astype(np.float64))
    if dtype == "float32":
        np.testing.assert_allclose(
            y.numpy(), expected, rtol=RTOL32 if name != "tan" else 1e-5, atol=ATOL32
        )
    else:
        assert y.numpy().dtype == np.float64
        np.testing.assert_allclose(y.numpy(), expected, rtol=RTOL64, atol=ATOL64)


@wp.kernel
def binary32(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    out[0, i] = wp.pow(wp.abs(a[i]) + 0.1, b[i])
    out[1, i] = wp.min(a[i], b[i])
    out[2, i] = wp.max(a[i], b[i])
    out[3, i] = wp.clamp(a[i], -0.5, b[i] * b[i])


@wp.kernel
def binary64(
    a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)
):
    i = wp.tid()
    out[0, i] = wp.pow(wp.abs(a[i]) + wp.float64(0.1), b[i])
    out[1, i] = wp.min(a[i], b[i])
    out[2, i] = wp.max(a[i], b[i])
    out[3, i] = wp.clamp(a[i], wp.float64(-0.5), b[i] * b[i])


@wp.kernel
def int_minmax_kernel(a: wp.array(dtype=int), b: wp.array(dtype=int), out: wp.array2d(dtype=int)):
    i = wp.tid()
    out[0, i] = wp.min(a[i], b[i])
    out[1, i] = wp.max(a[i], b[i])
    out[2, i] = wp.abs(a[i])
    out[3, i] = wp.clamp(a[i], -3, 4)


@pytest.mark.parametrize("op", ["pow", "min", "max", "clamp"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_binary_math(op, dtype):
    rng = np.random.default_rng(1)
    np_t, wp_t, kernel = (
        (np.float32, float, binary32) if dtype == "float32" else (np.float64, wp.float64, binary64)
    )
    a = rng.uniform(-3.0, 3.0, 40).astype(np_t)
    b = rng.uniform(-2.0, 2.0, 40).astype(np_t)
    out = zeros((4, 40), wp_t)
    launch(kernel, 40, warr(a, wp_t), warr(b, wp_t), out)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    refs = {
        "pow": (np.abs(a64) + np_t(0.1)) ** b64,
        "min": np.minimum(a64, b64),
        "max": np.maximum(a64, b64),
        "clamp": np.minimum(np.maximum(a64, -0.5), (b * b).astype(np.float64)),
    }
    row = ["pow", "min", "max", "clamp"].index(op)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out.numpy()[row], refs[op], **tol)


def test_int_min_max_abs_clamp():
    rng = np.random.default_rng(2)
    a = rng.integers(-10, 10, 30).astype(np.int32)
    b = rng.integers(-10, 10, 30).astype(np.int32)
    out = zeros((4, 30), int)
    launch(int_minmax_kernel, 30, warr(a, int), warr(b, int), out)
    np.testing.assert_array_equal(
        out.numpy(), np.stack([np.minimum(a, b), np.maximum(a, b), np.abs(a), np.clip(a, -3, 4)])
    )


# =============================================================================================
# vectors


@wp.kernel
def vec3_ops_kernel(
    a: wp.array(dtype=wp.vec3),
    b: wp.array(dtype=wp.vec3),
    dot: wp.array(dtype=float),
    cross: wp.array(dtype=wp.vec3),
    length: wp.array(dtype=float),
    length_sq: wp.array(dtype=float),
    normalize: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    dot[i] = wp.dot(a[i], b[i])
    cross[i] = wp.cross(a[i], b[i])
    length[i] = wp.length(a[i])
    length_sq[i] = wp.length_sq(a[i])
    normalize[i] = wp.normalize(a[i])


@wp.kernel
def vec_other_sizes_kernel(
    a2: wp.array(dtype=wp.vec2),
    a4: wp.array(dtype=wp.vec4),
    out: wp.array2d(dtype=float),
    n4: wp.array(dtype=wp.vec4),
):
    i = wp.tid()
    out[0, i] = wp.dot(a2[i], a2[i])
    out[1, i] = wp.length(a2[i])
    out[2, i] = wp.dot(a4[i], a4[i])
    out[3, i] = wp.length(a4[i])
    n4[i] = wp.normalize(a4[i])


@wp.kernel
def vec_arith_kernel(
    a: wp.array(dtype=wp.vec3),
    b: wp.array(dtype=wp.vec3),
    s: wp.array(dtype=float),
    out: wp.array2d(dtype=wp.vec3),
):
    i = wp.tid()
    out[i, 0] = s[i] * a[i]
    out[i, 1] = a[i] * s[i]
    out[i, 2] = a[i] / s[i]
    out[i, 3] = -a[i]
    out[i, 4] = a[i] + b[i]
    out[i, 5] = a[i] - b[i]
    out[i, 6] = 2.0 * a[i] - b[i] * 0.5
    out[i, 7] = wp.cw_mul(a[i], b[i])


@wp.kernel
def vec_eq_kernel(
    a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), eq: wp.array(dtype=wp.bool)
):
    # Note: Warp 1.19 accepts `==` on vectors but `!=` fails to compile (C++ error), so only == here.
    i = wp.tid()
    eq[i] = a[i] == b[i]


VEC3_OPS = ["dot", "cross", "length", "length_sq", "normalize"]


@pytest.mark.parametrize("op", VEC3_OPS)
def test_vec3_builtins(op):
    rng = np.random.default_rng(3)
    a, b = f32(rng.standard_normal((32, 3))), f32(rng.standard_normal((32, 3)))
    outs = [
        zeros(32, float),
        zeros(32, wp.vec3),
        zeros(32, float),
        zeros(32, float),
        zeros(32, wp.vec3),
    ]
    launch(vec3_ops_kernel, 32, warr(a, wp.vec3), warr(b, wp.vec3), *outs)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ln = np.linalg.norm(a64, axis=1)
    refs = {
        "dot": (a64 * b64).sum(1),
        "cross": np.cross(a64, b64),
        "length": ln,
        "length_sq": (a64 * a64).sum(1),
        "normalize": a64 / ln[:, None],
    }
    np.testing.assert_allclose(outs[VEC3_OPS.index(op)].numpy(), refs[op], rtol=1e-5, atol=1e-6)


def test_vec2_vec4_dot_length_normalize():
    rng = np.random.default_rng(4)
    a2, a4 = f32(rng.standard_normal((16, 2))), f32(rng.standard_normal((16, 4)))
    out, n4 = zeros((4, 16), float), zeros(16, wp.vec4)
    launch(vec_other_sizes_kernel, 16, warr(a2, wp.vec2), warr(a4, wp.vec4), out, n4)
    l2, l4 = np.linalg.norm(a2, axis=1), np.linalg.norm(a4, axis=1)
    np.testing.assert_allclose(
        out.numpy(), np.stack([l2 * l2, l2, l4 * l4, l4]), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(n4.numpy(), a4 / l4[:, None], rtol=1e-5, atol=1e-6)


VEC_ARITH = [
    "scalar*vec",
    "vec*scalar",
    "vec/scalar",
    "-vec",
    "vec+vec",
    "vec-vec",
    "mixed",
    "cw_mul",
]


def test_vec_arithmetic_operators():
    rng = np.random.default_rng(5)
    a, b = f32(rng.standard_normal((12, 3))), f32(rng.standard_normal((12, 3)))
    s = f32(rng.uniform(0.5, 2.0, 12))
    out = zeros((12, 8), wp.vec3)
    launch(vec_arith_kernel, 12, warr(a, wp.vec3), warr(b, wp.vec3), warr(s, float), out)
    sc = s[:, None]
    refs = [sc * a, a * sc, a / sc, -a, a + b, a - b, 2 * a - b * 0.5, a * b]
    for k, op in enumerate(VEC_ARITH):
        np.testing.assert_allclose(out.numpy()[:, k], refs[k], rtol=1e-6, atol=1e-6, err_msg=op)


def test_vec_equality():
    a = f32([[1, 2, 3], [1, 2, 3], [0, 0, 0], [-1, 5, 2]])
    b = f32([[1, 2, 3], [1, 2, 4], [0, 0, 0], [-1, 5, -2]])
    eq = zeros(4, wp.bool)
    launch(vec_eq_kernel, 4, warr(a, wp.vec3), warr(b, wp.vec3), eq)
    np.testing.assert_array_equal(eq.numpy(), (a == b).all(1))


# =============================================================================================
# matrices


@wp.kernel
def mat22_ops_kernel(
    m: wp.array(dtype=wp.mat22),
    t: wp.array(dtype=wp.mat22),
    det: wp.array(dtype=float),
    tr: wp.array(dtype=float),
    inv: wp.array(dtype=wp.mat22),
):
    i = wp.tid()
    t[i] = wp.transpose(m[i])
    det[i] = wp.determinant(m[i])
    tr[i] = wp.trace(m[i])
    inv[i] = wp.inverse(m[i])


@wp.kernel
def mat33_ops_kernel(
    m: wp.array(dtype=wp.mat33),
    t: wp.array(dtype=wp.mat33),
    det: wp.array(dtype=float),
    tr: wp.array(dtype=float),
    inv: wp.array(dtype=wp.mat33),
):
    i = wp.tid()
    t[i] = wp.transpose(m[i])
    det[i] = wp.determinant(m[i])
    tr[i] = wp.trace(m[i])
    inv[i] = wp.inverse(m[i])


@wp.kernel
def mat44_ops_kernel(
    m: wp.array(dtype=wp.mat44),
    t: wp.array(dtype=wp.mat44),
    det: wp.array(dtype=float),
    tr: wp.array(dtype=float),
    inv: wp.array(dtype=wp.mat44),
):
    i = wp.tid()
    t[i] = wp.transpose(m[i])
    det[i] = wp.determinant(m[i])
    tr[i] = wp.trace(m[i])
    inv[i] = wp.inverse(m[i])


MAT_KERNELS = {
    2: (mat22_ops_kernel, wp.mat22),
    3: (mat33_ops_kernel, wp.mat33),
    4: (mat44_ops_kernel, wp.mat44),
}


@pytest.mark.parametrize("op", ["transpose", "determinant", "trace", "inverse"])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_mat_builtins(n, op):
    kernel, mt = MAT_KERNELS[n]
    rng = np.random.default_rng(6 + n)
    # well-conditioned matrices: identity plus a small perturbation
    m = f32(np.eye(n) * 2.0 + rng.uniform(-0.5, 0.5, (10, n, n)))
    t, det, tr, inv = zeros(10, mt), zeros(10, float), zeros(10, float), zeros(10, mt)
    launch(kernel, 10, warr(m, mt), t, det, tr, inv)
    m64 = m.astype(np.float64)
    got, ref = {
        "transpose": (t, np.swapaxes(m64, 1, 2)),
        "determinant": (det, np.linalg.det(m64)),
        "trace": (tr, np.trace(m64, axis1=1, axis2=2)),
        "inverse": (inv, np.linalg.inv(m64)),
    }[op]
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-5)


@wp.kernel
def matvec_kernel(
    m: wp.array(dtype=wp.mat33),
    v: wp.array(dtype=wp.vec3),
    n: wp.array(dtype=wp.mat33),
    mv_at: wp.array(dtype=wp.vec3),
    mv_star: wp.array(dtype=wp.vec3),
    mm_at: wp.array(dtype=wp.mat33),
    mm_star: wp.array(dtype=wp.mat33),
):
    i = wp.tid()
    mv_at[i] = m[i] @ v[i]
    mv_star[i] = m[i] * v[i]
    mm_at[i] = m[i] @ n[i]
    mm_star[i] = m[i] * n[i]  # `*` of two matrices is the matrix product in Warp, not elementwise


@wp.kernel
def mat44_vec_kernel(
    m: wp.array(dtype=wp.mat44), v: wp.array(dtype=wp.vec4), out: wp.array(dtype=wp.vec4)
):
    i = wp.tid()
    out[i] = m[i] @ v[i]


@wp.kernel
def mat_arith_kernel(
    m: wp.array(dtype=wp.mat22),
    n: wp.array(dtype=wp.mat22),
    s: float,
    out: wp.array2d(dtype=wp.mat22),
):
    i = wp.tid()
    out[i, 0] = m[i] + n[i]
    out[i, 1] = m[i] - n[i]
    out[i, 2] = s * m[i]
    out[i, 3] = m[i] * s
    out[i, 4] = -m[i]


@pytest.mark.parametrize("form", ["m@v", "m*v", "m@m", "m*m"])
def test_mat_products(form):
    rng = np.random.default_rng(10)
    m, n = f32(rng.standard_normal((8, 3, 3))), f32(rng.standard_normal((8, 3, 3)))
    v = f32(rng.standard_normal((8, 3)))
    outs = [zeros(8, wp.vec3), zeros(8, wp.vec3), zeros(8, wp.mat33), zeros(8, wp.mat33)]
    launch(matvec_kernel, 8, warr(m, wp.mat33), warr(v, wp.vec3), warr(n, wp.mat33), *outs)
    mv = np.einsum("bij,bj->bi", m, v)
    mm = m @ n
    k = ["m@v", "m*v", "m@m", "m*m"].index(form)
    np.testing.assert_allclose(outs[k].numpy(), [mv, mv, mm, mm][k], rtol=1e-5, atol=1e-5)


def test_mat44_times_vec4():
    rng = np.random.default_rng(11)
    m, v = f32(rng.standard_normal((8, 4, 4))), f32(rng.standard_normal((8, 4)))
    out = zeros(8, wp.vec4)
    launch(mat44_vec_kernel, 8, warr(m, wp.mat44), warr(v, wp.vec4), out)
    np.testing.assert_allclose(out.numpy(), np.einsum("bij,bj->bi", m, v), rtol=1e-5, atol=1e-5)


def test_mat_add_sub_scale_negate():
    rng = np.random.default_rng(12)
    m, n = f32(rng.standard_normal((5, 2, 2))), f32(rng.standard_normal((5, 2, 2)))
    out = zeros((5, 5), wp.mat22)
    launch(mat_arith_kernel, 5, warr(m, wp.mat22), warr(n, wp.mat22), 1.5, out)
    ref = np.stack([m + n, m - n, 1.5 * m, m * 1.5, -m], 1)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6, atol=1e-6)


# =============================================================================================
# select / where


@wp.kernel
def where_kernel(
    x: wp.array(dtype=float),
    a: wp.array(dtype=wp.vec3),
    b: wp.array(dtype=wp.vec3),
    s: wp.array(dtype=float),
    v: wp.array(dtype=wp.vec3),
    n: wp.array(dtype=int),
):
    # Note: wp.select() was removed in Warp 1.19 ("Use wp.where(cond, value_if_true,
    # value_if_false) instead"), so only wp.where is tested.
    i = wp.tid()
    s[i] = wp.where(x[i] > 0.0, x[i] * 10.0, -1.0)
    v[i] = wp.where(x[i] > 0.5, a[i], b[i])
    n[i] = wp.where(x[i] < 0.0, 1, 2)


def test_where_scalar_vec_int():
    rng = np.random.default_rng(13)
    x = f32(rng.uniform(-1, 1, 20))
    a, b = f32(rng.standard_normal((20, 3))), f32(rng.standard_normal((20, 3)))
    s, v, n = zeros(20, float), zeros(20, wp.vec3), zeros(20, int)
    launch(where_kernel, 20, warr(x, float), warr(a, wp.vec3), warr(b, wp.vec3), s, v, n)
    np.testing.assert_allclose(s.numpy(), np.where(x > 0, x * 10, -1), rtol=1e-6)
    np.testing.assert_array_equal(v.numpy(), np.where((x > 0.5)[:, None], a, b))
    np.testing.assert_array_equal(n.numpy(), np.where(x < 0, 1, 2))


# =============================================================================================
# atomics: many threads into the same slot(s)


@wp.kernel
def atomic_add_int_kernel(acc: wp.array(dtype=int), old: wp.array(dtype=int)):
    i = wp.tid()
    old[i] = wp.atomic_add(acc, 0, 1)


@wp.kernel
def atomic_add_float_kernel(
    x: wp.array(dtype=float), acc: wp.array(dtype=float), old: wp.array(dtype=float)
):
    i = wp.tid()
    old[i] = wp.atomic_add(acc, 0, x[i])


@wp.kernel
def atomic_sub_kernel(
    x: wp.array(dtype=float), acc: wp.array(dtype=float), old: wp.array(dtype=float)
):
    i = wp.tid()
    old[i] = wp.atomic_sub(acc, 0, x[i])


@wp.kernel
def atomic_min_max_float_kernel(
    x: wp.array(dtype=float),
    lo: wp.array(dtype=float),
    hi: wp.array(dtype=float),
    old_lo: wp.array(dtype=float),
    old_hi: wp.array(dtype=float),
):
    i = wp.tid()
    old_lo[i] = wp.atomic_min(lo, 0, x[i])
    old_hi[i] = wp.atomic_max(hi, 0, x[i])


@wp.kernel
def atomic_min_max_int_kernel(
    x: wp.array(dtype=int), lo: wp.array(dtype=int), hi: wp.array(dtype=int)
):
    i = wp.tid()
    wp.atomic_min(lo, 0, x[i])
    wp.atomic_max(hi, 0, x[i])


@wp.kernel
def histogram_kernel(x: wp.array(dtype=int), nbins: int, hist: wp.array(dtype=int)):
    i = wp.tid()
    wp.atomic_add(hist, x[i] % nbins, 1)


@wp.kernel
def atomic_2d_kernel(x: wp.array(dtype=float), grid: wp.array2d(dtype=float)):
    i = wp.tid()
    wp.atomic_add(grid, i % 3, i % 4, x[i])


@wp.kernel
def atomic_vec3_kernel(x: wp.array(dtype=wp.vec3), acc: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    wp.atomic_add(acc, i % 2, x[i])


@wp.kernel
def aug_assign_atomic_kernel(
    x: wp.array(dtype=float), acc: wp.array(dtype=float), dec: wp.array(dtype=float)
):
    # In Warp `a[idx] += v` / `a[idx] -= v` on an array element is an atomic add / sub.
    i = wp.tid()
    acc[0] += x[i]
    dec[i % 5] -= x[i]


N_ATOMIC = 1000


def _ints_as_float(seed, n=N_ATOMIC):
    # small integer-valued floats: every partial sum is exact in float32, so the result does
    # not depend on the order in which threads hit the slot
    return f32(np.random.default_rng(seed).integers(-20, 21, n))


def _check_add_chain(x, init, old, final):
    """The returned old values of atomic adds form one chain init -> ... -> final in some order."""
    assert final == init + x.sum()
    assert sorted(np.append(old + x, init).tolist()) == sorted(np.append(old, final).tolist())


def test_atomic_add_int_returns_distinct_old_values():
    acc, old = zeros(1, int), zeros(N_ATOMIC, int)
    launch(atomic_add_int_kernel, N_ATOMIC, acc, old)
    assert acc.numpy()[0] == N_ATOMIC
    np.testing.assert_array_equal(np.sort(old.numpy()), np.arange(N_ATOMIC))  # the original value


def test_atomic_add_float_sum_and_old_values():
    x = _ints_as_float(14)
    acc, old = warr(f32([5.0]), float), zeros(N_ATOMIC, float)
    launch(atomic_add_float_kernel, N_ATOMIC, warr(x, float), acc, old)
    _check_add_chain(
        x.astype(np.float64), 5.0, old.numpy().astype(np.float64), float(acc.numpy()[0])
    )


def test_atomic_sub_and_old_values():
    x = _ints_as_float(15)
    acc, old = warr(f32([3.0]), float), zeros(N_ATOMIC, float)
    launch(atomic_sub_kernel, N_ATOMIC, warr(x, float), acc, old)
    _check_add_chain(
        -x.astype(np.float64), 3.0, old.numpy().astype(np.float64), float(acc.numpy()[0])
    )


def test_atomic_min_max_float_and_old_values():
    x = f32(np.random.default_rng(16).standard_normal(N_ATOMIC))
    lo, hi = warr(f32([0.5]), float), warr(f32([-0.5]), float)
    old_lo, old_hi = zeros(N_ATOMIC, float), zeros(N_ATOMIC, float)
    launch(atomic_min_max_float_kernel, N_ATOMIC, warr(x, float), lo, hi, old_lo, old_hi)
    assert lo.numpy()[0] == min(0.5, x.min())
    assert hi.numpy()[0] == max(-0.5, x.max())
    # every returned value is one the slot held: between the final value and the initial one
    assert old_lo.numpy().max() == np.float32(0.5) and old_lo.numpy().min() >= lo.numpy()[0]
    assert old_hi.numpy().min() == np.float32(-0.5) and old_hi.numpy().max() <= hi.numpy()[0]
    assert np.isin(old_lo.numpy(), np.append(x, np.float32(0.5))).all()


def test_atomic_min_max_int():
    x = np.random.default_rng(17).integers(-(10**6), 10**6, N_ATOMIC).astype(np.int32)
    lo, hi = warr(np.array([0], np.int32), int), warr(np.array([0], np.int32), int)
    launch(atomic_min_max_int_kernel, N_ATOMIC, warr(x, int), lo, hi)
    assert lo.numpy()[0] == min(0, x.min()) and hi.numpy()[0] == max(0, x.max())


def test_atomic_histogram_many_slots():
    x = np.random.default_rng(18).integers(0, 10**6, N_ATOMIC).astype(np.int32)
    hist = zeros(7, int)
    launch(histogram_kernel, N_ATOMIC, warr(x, int), 7, hist)
    np.testing.assert_array_equal(hist.numpy(), np.bincount(x % 7, minlength=7))


def test_atomic_add_2d_index():
    x = _ints_as_float(19, 120)
    grid = zeros((3, 4), float)
    launch(atomic_2d_kernel, 120, warr(x, float), grid)
    ref = np.zeros((3, 4), np.float32)
    np.add.at(ref, (np.arange(120) % 3, np.arange(120) % 4), x)
    np.testing.assert_array_equal(grid.numpy(), ref)


def test_atomic_add_vec3():
    x = f32(np.random.default_rng(20).integers(-5, 6, (200, 3)))
    acc = zeros(2, wp.vec3)
    launch(atomic_vec3_kernel, 200, warr(x, wp.vec3), acc)
    np.testing.assert_array_equal(acc.numpy(), np.stack([x[0::2].sum(0), x[1::2].sum(0)]))


def test_augmented_assign_on_shared_element_is_atomic():
    x = _ints_as_float(21)
    acc, dec = zeros(1, float), zeros(5, float)
    launch(aug_assign_atomic_kernel, N_ATOMIC, warr(x, float), acc, dec)
    assert acc.numpy()[0] == x.sum()
    np.testing.assert_array_equal(dec.numpy(), [-x[k::5].sum() for k in range(5)])
