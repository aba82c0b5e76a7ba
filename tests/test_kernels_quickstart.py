"""Warp quickstart-style programs, each checked against an independent numpy reference.

Runs on the backend chosen by GL_TEST_BACKEND (see wpcompat.py).
"""

# Kernel bodies use `int(0)` / `float(1.0)` on purpose: Warp rejects mutating, inside a dynamic
# loop, a variable initialised from a bare literal. Keep ruff from "simplifying" them away.
# ruff: noqa: UP018, RUF046

import numpy as np
from wpcompat import DEVICE, wp

RTOL = 1e-5
ATOL = 1e-5


def f32(a):
    return np.asarray(a, dtype=np.float32)


# ---------------------------------------------------------------------------------------------
# (a) particles: vec3 positions / velocities under gravity


@wp.kernel
def dot_kernel(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), c: wp.array(dtype=float)):
    tid = wp.tid()
    x = a[tid]
    y = b[tid]
    r = wp.dot(x, y)
    c[tid] = r


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), gravity: wp.vec3, dt: float):
    tid = wp.tid()
    v_new = v[tid] + gravity * dt
    x[tid] = x[tid] + v_new * dt
    v[tid] = v_new


@wp.kernel
def integrate_bounce(
    x: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    gravity: wp.vec3,
    dt: float,
    restitution: float,
):
    tid = wp.tid()
    vel = v[tid] + gravity * dt
    pos = x[tid] + vel * dt
    if pos[1] < 0.0:
        pos[1] = 0.0
        vel[1] = -vel[1] * restitution
    x[tid] = pos
    v[tid] = vel


def test_quickstart_dot_of_vec3_arrays():
    rng = np.random.default_rng(0)
    a, b = f32(rng.standard_normal((64, 3))), f32(rng.standard_normal((64, 3)))
    c = wp.zeros(64, dtype=float, device=DEVICE)
    wp.launch(
        dot_kernel,
        dim=64,
        inputs=[
            wp.array(a, dtype=wp.vec3, device=DEVICE),
            wp.array(b, dtype=wp.vec3, device=DEVICE),
            c,
        ],
        device=DEVICE,
    )
    np.testing.assert_allclose(c.numpy(), (a * b).sum(axis=1), rtol=RTOL, atol=ATOL)


def test_particles_free_fall_several_steps():
    rng = np.random.default_rng(1)
    n, steps, dt = 100, 20, np.float32(0.01)
    x0, v0 = f32(rng.standard_normal((n, 3))), f32(rng.standard_normal((n, 3)))
    g = f32([0.0, -9.8, 0.0])
    x = wp.array(x0, dtype=wp.vec3, device=DEVICE)
    v = wp.array(v0, dtype=wp.vec3, device=DEVICE)
    for _ in range(steps):
        wp.launch(
            integrate, dim=n, inputs=[x, v, wp.vec3(0.0, -9.8, 0.0), float(dt)], device=DEVICE
        )
    xr, vr = x0.copy(), v0.copy()
    for _ in range(steps):
        vr = vr + g * dt
        xr = xr + vr * dt
    np.testing.assert_allclose(v.numpy(), vr, rtol=RTOL, atol=1e-4)
    np.testing.assert_allclose(x.numpy(), xr, rtol=RTOL, atol=1e-4)


def test_particles_bounce_on_ground():
    rng = np.random.default_rng(2)
    n, steps, dt, e = 50, 40, np.float32(0.02), np.float32(0.5)
    x0 = f32(rng.uniform(0.0, 1.0, (n, 3)))
    v0 = f32(rng.standard_normal((n, 3)))
    x = wp.array(x0, dtype=wp.vec3, device=DEVICE)
    v = wp.array(v0, dtype=wp.vec3, device=DEVICE)
    g = wp.vec3(0.0, -9.8, 0.0)
    for _ in range(steps):
        wp.launch(integrate_bounce, dim=n, inputs=[x, v, g, float(dt), float(e)], device=DEVICE)
    xr, vr = x0.copy(), v0.copy()
    bounced = np.zeros(n, dtype=bool)
    for _ in range(steps):
        vr = vr + f32([0.0, -9.8, 0.0]) * dt
        xr = xr + vr * dt
        hit = xr[:, 1] < 0.0
        xr[hit, 1] = 0.0
        vr[hit, 1] = -vr[hit, 1] * e
        bounced |= hit
    assert bounced.all()  # the branch is exercised
    assert (x.numpy()[:, 1] >= 0.0).all()
    np.testing.assert_allclose(x.numpy(), xr, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(v.numpy(), vr, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------------
# (b) 2-D grid stencils


@wp.kernel
def jacobi_step(
    u: wp.array2d(dtype=float), f: wp.array2d(dtype=float), h2: float, out: wp.array2d(dtype=float)
):
    i, j = wp.tid()
    n = u.shape[0]
    m = u.shape[1]
    if i == 0 or j == 0 or i == n - 1 or j == m - 1:
        out[i, j] = u[i, j]  # Dirichlet boundary: keep the value
    else:
        out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - h2 * f[i, j])


@wp.kernel
def laplacian_zero_outside(u: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    c = u[i, j]
    s = -4.0 * c
    if i > 0:
        s += u[i - 1, j]
    if i < u.shape[0] - 1:
        s += u[i + 1, j]
    if j > 0:
        s += u[i, j - 1]
    if j < u.shape[1] - 1:
        s += u[i, j + 1]
    out[i, j] = s


def test_jacobi_iterations_dirichlet():
    rng = np.random.default_rng(3)
    n, m, iters, h2 = 12, 9, 15, np.float32(0.01)  # n != m catches swapped axes
    u0 = f32(rng.standard_normal((n, m)))
    f = f32(rng.standard_normal((n, m)))
    a = wp.array(u0, dtype=float, device=DEVICE)
    b = wp.zeros((n, m), dtype=float, device=DEVICE)
    fw = wp.array(f, dtype=float, device=DEVICE)
    for _ in range(iters):
        wp.launch(jacobi_step, dim=(n, m), inputs=[a, fw, float(h2), b], device=DEVICE)
        a, b = b, a
    ref = u0.copy()
    for _ in range(iters):
        new = ref.copy()
        new[1:-1, 1:-1] = f32(0.25) * (
            ref[:-2, 1:-1] + ref[2:, 1:-1] + ref[1:-1, :-2] + ref[1:-1, 2:] - h2 * f[1:-1, 1:-1]
        )
        ref = new
    np.testing.assert_allclose(a.numpy(), ref, rtol=1e-4, atol=1e-5)


def test_laplacian_5_point_with_boundary_ifs():
    rng = np.random.default_rng(4)
    n, m = 7, 11
    u = f32(rng.standard_normal((n, m)))
    out = wp.zeros((n, m), dtype=float, device=DEVICE)
    wp.launch(
        laplacian_zero_outside,
        dim=(n, m),
        inputs=[wp.array(u, dtype=float, device=DEVICE), out],
        device=DEVICE,
    )
    p = np.pad(u, 1)
    ref = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * u
    np.testing.assert_allclose(out.numpy(), ref, rtol=RTOL, atol=ATOL)


# ---------------------------------------------------------------------------------------------
# (c) structs passed to launch


@wp.struct
class SimParams:
    dt: float
    gravity: wp.vec3
    substeps: int


@wp.struct
class Buffer:
    data: wp.array(dtype=float)
    scale: float


@wp.kernel
def struct_params_kernel(p: SimParams, x: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    tid = wp.tid()
    out[tid] = x[tid] + p.gravity * (p.dt * float(p.substeps))


@wp.kernel
def struct_array_field_kernel(b: Buffer, out: wp.array(dtype=float)):
    tid = wp.tid()
    out[tid] = b.data[tid] * b.scale + float(b.data.shape[0])


def test_struct_scalar_vec_int_fields():
    rng = np.random.default_rng(5)
    x = f32(rng.standard_normal((16, 3)))
    p = SimParams()
    p.dt = 0.125
    p.gravity = wp.vec3(1.0, -2.0, 3.0)
    p.substeps = 3
    out = wp.zeros(16, dtype=wp.vec3, device=DEVICE)
    wp.launch(
        struct_params_kernel,
        dim=16,
        inputs=[p, wp.array(x, dtype=wp.vec3, device=DEVICE), out],
        device=DEVICE,
    )
    ref = x + f32([1.0, -2.0, 3.0]) * f32(0.125 * 3)
    np.testing.assert_allclose(out.numpy(), ref, rtol=RTOL, atol=ATOL)


def test_struct_with_array_field():
    rng = np.random.default_rng(6)
    d = f32(rng.standard_normal(10))
    b = Buffer()
    b.data = wp.array(d, dtype=float, device=DEVICE)
    b.scale = -1.5
    out = wp.zeros(10, dtype=float, device=DEVICE)
    wp.launch(struct_array_field_kernel, dim=10, inputs=[b, out], device=DEVICE)
    np.testing.assert_allclose(out.numpy(), d * f32(-1.5) + 10.0, rtol=RTOL, atol=ATOL)


# ---------------------------------------------------------------------------------------------
# (d) funcs with early returns and tuple returns


@wp.func
def piecewise(x: float):
    if x < -1.0:
        return -1.0
    elif x < 0.0:
        return x * x * x
    if x < 1.0:
        return x * x
    return 2.0 * x - 1.0


@wp.func
def first_above(a: wp.array(dtype=float), t: float):
    for k in range(a.shape[0]):
        if a[k] > t:
            return k  # return from inside a loop
    return -1


@wp.func
def polar(v: wp.vec2):
    r = wp.length(v)
    return r, wp.atan2(v[1], v[0])


@wp.func
def sum_diff(a: int, b: int):
    return a + b, a - b


@wp.kernel
def piecewise_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    tid = wp.tid()
    y[tid] = piecewise(x[tid])


@wp.kernel
def first_above_kernel(
    a: wp.array(dtype=float), t: wp.array(dtype=float), out: wp.array(dtype=int)
):
    tid = wp.tid()
    out[tid] = first_above(a, t[tid])


@wp.kernel
def tuple_return_kernel(
    v: wp.array(dtype=wp.vec2),
    a: wp.array(dtype=int),
    r: wp.array(dtype=float),
    th: wp.array(dtype=float),
    s: wp.array(dtype=int),
    d: wp.array(dtype=int),
):
    tid = wp.tid()
    rr, tt = polar(v[tid])
    r[tid] = rr
    th[tid] = tt
    p, q = sum_diff(a[tid], 7)
    s[tid] = p
    d[tid] = q


def test_func_piecewise_early_returns():
    x = f32(np.linspace(-3.0, 3.0, 61))
    y = wp.zeros(61, dtype=float, device=DEVICE)
    wp.launch(
        piecewise_kernel, dim=61, inputs=[wp.array(x, dtype=float, device=DEVICE), y], device=DEVICE
    )
    ref = np.where(x < -1.0, -1.0, np.where(x < 0.0, x**3, np.where(x < 1.0, x * x, 2.0 * x - 1.0)))
    np.testing.assert_allclose(y.numpy(), ref, rtol=RTOL, atol=ATOL)


def test_func_return_inside_loop():
    a = f32([0.1, 0.5, 0.2, 0.9, 0.3])
    t = f32([0.0, 0.15, 0.6, 0.95, 0.4])
    out = wp.zeros(5, dtype=int, device=DEVICE)
    wp.launch(
        first_above_kernel,
        dim=5,
        inputs=[
            wp.array(a, dtype=float, device=DEVICE),
            wp.array(t, dtype=float, device=DEVICE),
            out,
        ],
        device=DEVICE,
    )
    ref = [next((k for k in range(5) if a[k] > tt), -1) for tt in t]
    np.testing.assert_array_equal(out.numpy(), ref)


def test_func_tuple_return_unpacked():
    rng = np.random.default_rng(7)
    v = f32(rng.standard_normal((20, 2)))
    a = rng.integers(-50, 50, 20).astype(np.int32)
    r, th = wp.zeros(20, dtype=float, device=DEVICE), wp.zeros(20, dtype=float, device=DEVICE)
    s, d = wp.zeros(20, dtype=int, device=DEVICE), wp.zeros(20, dtype=int, device=DEVICE)
    wp.launch(
        tuple_return_kernel,
        dim=20,
        inputs=[
            wp.array(v, dtype=wp.vec2, device=DEVICE),
            wp.array(a, dtype=int, device=DEVICE),
            r,
            th,
            s,
            d,
        ],
        device=DEVICE,
    )
    np.testing.assert_allclose(r.numpy(), np.hypot(v[:, 0], v[:, 1]), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(th.numpy(), np.arctan2(v[:, 1], v[:, 0]), rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(s.numpy(), a + 7)
    np.testing.assert_array_equal(d.numpy(), a - 7)


# ---------------------------------------------------------------------------------------------
# (e) runtime loops


@wp.kernel
def nbody_accel(
    pos: wp.array(dtype=wp.vec3),
    mass: wp.array(dtype=float),
    n: int,
    eps2: float,
    acc: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    a = wp.vec3()
    for j in range(n):
        d = pos[j] - pos[i]
        r2 = wp.dot(d, d) + eps2
        inv = 1.0 / (r2 * wp.sqrt(r2))
        a += mass[j] * inv * d
    acc[i] = a


@wp.kernel
def exp_series_while(
    x: wp.array(dtype=float), tol: float, y: wp.array(dtype=float), terms: wp.array(dtype=int)
):
    tid = wp.tid()
    # Warp: a variable mutated in a dynamic loop must not be initialised from a bare literal
    # ("Error mutating a constant ... inside a dynamic loop"), hence float(...) / int(...).
    term = float(1.0)
    s = float(1.0)
    k = int(0)
    while wp.abs(term) > tol:
        k += 1
        term = term * x[tid] / float(k)
        s += term
    y[tid] = s
    terms[tid] = k


def test_nbody_runtime_loop():
    rng = np.random.default_rng(8)
    n, eps2 = 32, np.float32(0.01)
    pos = f32(rng.standard_normal((n, 3)))
    mass = f32(rng.uniform(0.5, 2.0, n))
    acc = wp.zeros(n, dtype=wp.vec3, device=DEVICE)
    wp.launch(
        nbody_accel,
        dim=n,
        inputs=[
            wp.array(pos, dtype=wp.vec3, device=DEVICE),
            wp.array(mass, dtype=float, device=DEVICE),
            n,
            float(eps2),
            acc,
        ],
        device=DEVICE,
    )
    d = pos[None, :, :] - pos[:, None, :]  # d[i, j] = pos[j] - pos[i]
    r2 = (d.astype(np.float64) ** 2).sum(-1) + eps2
    ref = (mass[None, :, None] * d / (r2 * np.sqrt(r2))[..., None]).sum(axis=1)
    np.testing.assert_allclose(acc.numpy(), ref, rtol=1e-4, atol=1e-3)


def test_nbody_loop_bound_is_runtime_value():
    # Only the first n bodies contribute: the bound really is read at run time.
    rng = np.random.default_rng(9)
    n_total, n = 16, 5
    pos = f32(rng.standard_normal((n_total, 3)))
    mass = f32(rng.uniform(0.5, 2.0, n_total))
    acc = wp.zeros(n_total, dtype=wp.vec3, device=DEVICE)
    wp.launch(
        nbody_accel,
        dim=n_total,
        inputs=[
            wp.array(pos, dtype=wp.vec3, device=DEVICE),
            wp.array(mass, dtype=float, device=DEVICE),
            n,
            0.01,
            acc,
        ],
        device=DEVICE,
    )
    d = pos[None, :n, :] - pos[:, None, :]
    r2 = (d.astype(np.float64) ** 2).sum(-1) + np.float32(0.01)
    ref = (mass[None, :n, None] * d / (r2 * np.sqrt(r2))[..., None]).sum(axis=1)
    np.testing.assert_allclose(acc.numpy(), ref, rtol=1e-4, atol=1e-3)


def test_while_loop_series():
    x = f32([-2.0, -0.5, 0.0, 0.3, 1.0, 2.5])
    y = wp.zeros(6, dtype=float, device=DEVICE)
    terms = wp.zeros(6, dtype=int, device=DEVICE)
    wp.launch(
        exp_series_while,
        dim=6,
        inputs=[wp.array(x, dtype=float, device=DEVICE), 1e-7, y, terms],
        device=DEVICE,
    )
    np.testing.assert_allclose(y.numpy(), np.exp(x), rtol=1e-5, atol=1e-6)
    ref_terms = []
    for xv in x.astype(np.float32):
        term, k = np.float32(1.0), 0
        while abs(term) > np.float32(1e-7):
            k += 1
            term = np.float32(term * xv / np.float32(k))
        ref_terms.append(k)
    np.testing.assert_array_equal(terms.numpy(), ref_terms)


@wp.func
def offset_after_returns(p: float) -> float:
    # fuzz 1:601: a number bound between two early returns lives in a branch of its own
    if p < 0.0:
        return p
    k = 0 + 2
    if p > 1.0:
        return p * 2.0
    return p + float(k)


@wp.kernel
def offset_after_returns_kernel(x: wp.array(dtype=float)):
    tid = wp.tid()
    x[tid] = offset_after_returns(x[tid])


def test_func_number_bound_between_early_returns():
    x = wp.array(f32([-1.0, 0.5, 2.0]), dtype=float, device=DEVICE)
    wp.launch(offset_after_returns_kernel, dim=3, inputs=[x], device=DEVICE)
    np.testing.assert_allclose(x.numpy(), [-1.0, 2.5, 4.0], rtol=RTOL, atol=ATOL)
