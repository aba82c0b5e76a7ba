"""Quaternion, transform and spatial builtins beyond the table rows: scipy comparisons (Euler
sequences, slerp), analytic identities (inverses, composition, swing-twist, power invariance),
operators and their gradients, gradients at removable singularities, and error messages.
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
from builtin_cases.quat import qmul, rotmat
from gradfd import arr, check_kernel
from wpcompat import BACKEND, DEVICE, wp

N = 32
SEQUENCES = [s for s in itertools.product(range(3), repeat=3) if s[0] != s[1] and s[1] != s[2]]
gradloom_only = pytest.mark.skipif(BACKEND != "gradloom", reason="gradloom's messages")


def unit(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    v = rng.normal(size=shape)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def run(kernel, *inputs, outs):
    """Launch over N threads on float64 inputs; outs: (dtype, trailing shape) per output."""
    arrays = [wp.array(np.asarray(x, dtype=np.float64), dtype=t, device=DEVICE) for x, t in inputs]
    results = [wp.zeros(shape, dtype=t, device=DEVICE) for t, shape in outs]
    wp.launch(kernel, dim=len(inputs[0][0]), inputs=arrays + results, device=DEVICE)
    return [r.numpy().astype(np.float64) for r in results]


def same_rotation(a: np.ndarray, b: np.ndarray, atol: float = 1e-12) -> None:
    """Unit quaternions a and b are the same rotation: a == ±b."""
    np.testing.assert_allclose(np.abs(np.sum(a * b, axis=-1)), 1.0, rtol=0, atol=atol)


# -- Euler angles against scipy -------------------------------------------------------------------

def _euler_kernel(i: int, j: int, k: int):
    @wp.kernel
    def euler(q: wp.array(dtype=wp.quatd), e: wp.array(dtype=wp.vec3d), back: wp.array(dtype=wp.quatd)):
        t = wp.tid()
        e[t] = wp.quat_to_euler(q[t], i, j, k)
        back[t] = wp.quat_from_euler(e[t], i, j, k)

    return euler


EULER_KERNELS = {s: _euler_kernel(*s) for s in SEQUENCES}


@pytest.mark.parametrize("seq", SEQUENCES, ids=lambda s: "xyz"[s[0]] + "xyz"[s[1]] + "xyz"[s[2]])
def test_quat_to_euler_matches_scipy(seq):
    rot = pytest.importorskip("scipy.spatial.transform").Rotation
    i, j, k = seq
    q = unit(np.random.default_rng(sum(seq)), (N, 4))
    e, back = run(EULER_KERNELS[seq], (q, wp.quatd), outs=[(wp.vec3d, N), (wp.quatd, N)])
    name = "xyz"[i] + "xyz"[j] + "xyz"[k]
    third = k if i != k else 3 - i - j  # proper sequences store the third angle there
    ours = e[:, [i, j, third]]
    want = rot.from_quat(q).as_euler(name)
    # Warp leaves the first and third angles in [-2pi, 2pi]; scipy wraps them to [-pi, pi]
    wrapped = (ours - want + np.pi) % (2 * np.pi) - np.pi
    np.testing.assert_allclose(wrapped, 0.0, rtol=0, atol=1e-10)
    assert np.all(np.abs(ours[:, [0, 2]]) <= 2 * np.pi + 1e-12)
    if i != k:  # Tait-Bryan: quat_from_euler inverts quat_to_euler
        same_rotation(back, q)


# -- slerp ----------------------------------------------------------------------------------------

@wp.kernel
def slerp_k(a: wp.array(dtype=wp.quatd), b: wp.array(dtype=wp.quatd), t: wp.array(dtype=wp.float64),
            out: wp.array(dtype=wp.quatd)):
    i = wp.tid()
    out[i] = wp.quat_slerp(a[i], b[i], t[i])


def test_quat_slerp_matches_scipy():
    transform = pytest.importorskip("scipy.spatial.transform")
    rng = np.random.default_rng(1)
    a, b, t = unit(rng, (N, 4)), unit(rng, (N, 4)) * 1.7, rng.uniform(0, 1, N)  # b unnormalized
    b[:4] = a[:4] * np.array([[1.0], [-1.0], [2.0], [-0.5]])  # equal rotations, either sign
    b[4:8] = a[4:8] + 4e-4 * unit(rng, (4, 4))  # angles below the series threshold (1e-3)
    (out,) = run(slerp_k, (a, wp.quatd), (b, wp.quatd), (t, wp.float64), outs=[(wp.quatd, N)])
    for n in range(N):
        key = transform.Rotation.from_quat(np.stack([a[n], b[n]]))
        want = transform.Slerp([0.0, 1.0], key)([t[n]]).as_matrix()[0]
        np.testing.assert_allclose(rotmat(out[n]), want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(out[:4], a[:4], rtol=0, atol=1e-12)  # same rotation: a itself


def test_quat_slerp_gradient_near_and_at_equal_rotations():
    """Below the series threshold (and at a == b) the gradient still matches finite differences."""
    rng = np.random.default_rng(2)
    a = unit(rng, (6, 4))
    b = a + np.array([0, 0, 0, 0, 1e-5, -3e-4])[:, None] * unit(rng, (6, 4))
    t = rng.uniform(0.1, 0.9, 6)
    check_kernel(slerp_k, 6, [arr(a, wp.quatd), arr(b, wp.quatd), arr(t), arr(np.zeros((6, 4)), wp.quatd)],
                 wrt=[0, 1, 2], outputs=[3])


# -- identities -----------------------------------------------------------------------------------

@wp.kernel
def quat_identities(a: wp.array(dtype=wp.quatd), b: wp.array(dtype=wp.quatd), v: wp.array(dtype=wp.vec3d),
                    prod: wp.array(dtype=wp.quatd), ident: wp.array(dtype=wp.quatd),
                    composed: wp.array(dtype=wp.vec3d), nested: wp.array(dtype=wp.vec3d),
                    matrix_vs_rotate: wp.array(dtype=wp.vec3d), roundtrip: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    q, r = a[i], b[i]
    prod[i] = q * r
    ident[i] = q * wp.quat_inverse(q)
    composed[i] = wp.quat_rotate(q * r, v[i])
    nested[i] = wp.quat_rotate(q, wp.quat_rotate(r, v[i]))
    matrix_vs_rotate[i] = wp.quat_to_matrix(q) @ v[i] - wp.quat_rotate(q, v[i])
    roundtrip[i] = wp.quat_rotate_inv(q, wp.quat_rotate(q, v[i]))


def test_quaternion_identities():
    rng = np.random.default_rng(3)
    a, b, v = unit(rng, (N, 4)), unit(rng, (N, 4)), rng.normal(size=(N, 3))
    prod, ident, composed, nested, diff, back = run(
        quat_identities, (a, wp.quatd), (b, wp.quatd), (v, wp.vec3d),
        outs=[(wp.quatd, N), (wp.quatd, N)] + [(wp.vec3d, N)] * 4)
    np.testing.assert_allclose(prod, qmul(a, b), rtol=0, atol=1e-14)
    np.testing.assert_allclose(ident, np.tile([0.0, 0.0, 0.0, 1.0], (N, 1)), rtol=0, atol=1e-14)
    np.testing.assert_allclose(composed, nested, rtol=0, atol=1e-13)
    np.testing.assert_allclose(diff, 0.0, rtol=0, atol=1e-14)
    np.testing.assert_allclose(back, v, rtol=0, atol=1e-13)


@wp.kernel
def transform_identities(a: wp.array(dtype=wp.transformd), b: wp.array(dtype=wp.transformd),
                         x: wp.array(dtype=wp.vec3d), inv_back: wp.array(dtype=wp.vec3d),
                         star: wp.array(dtype=wp.vec3d), nested: wp.array(dtype=wp.vec3d),
                         via_matrix: wp.array(dtype=wp.vec3d), parts: wp.array(dtype=wp.transformd),
                         from_to: wp.array(dtype=wp.transformd)):
    i = wp.tid()
    ta, tb = a[i], b[i]
    inv_back[i] = wp.transform_point(wp.transform_inverse(ta), wp.transform_point(ta, x[i]))
    star[i] = wp.transform_point(ta * tb, x[i]) - wp.transform_point(wp.transform_multiply(ta, tb), x[i])
    nested[i] = wp.transform_point(ta, wp.transform_point(tb, x[i])) - wp.transform_point(ta * tb, x[i])
    via_matrix[i] = wp.transform_point(wp.transform_to_matrix(ta), x[i]) - wp.transform_point(ta, x[i])
    parts[i] = wp.transformation(ta.p, ta.q)
    from_to[i] = wp.transform_from_matrix(wp.transform_to_matrix(ta))


def test_transform_identities():
    rng = np.random.default_rng(4)
    a = np.concatenate([rng.normal(size=(N, 3)), unit(rng, (N, 4))], 1)
    b = np.concatenate([rng.normal(size=(N, 3)), unit(rng, (N, 4))], 1)
    x = rng.normal(size=(N, 3))
    back, star, nested, via, parts, from_to = run(
        transform_identities, (a, wp.transformd), (b, wp.transformd), (x, wp.vec3d),
        outs=[(wp.vec3d, N)] * 4 + [(wp.transformd, N)] * 2)
    np.testing.assert_allclose(back, x, rtol=0, atol=1e-13)
    for d in (star, nested, via):
        np.testing.assert_allclose(d, 0.0, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(parts, a)
    np.testing.assert_allclose(from_to[:, :3], a[:, :3], rtol=0, atol=1e-14)
    same_rotation(from_to[:, 3:], a[:, 3:])


@wp.kernel
def decompose_k(p: wp.array(dtype=wp.vec3d), q: wp.array(dtype=wp.quatd), s: wp.array(dtype=wp.vec3d),
                p2: wp.array(dtype=wp.vec3d), q2: wp.array(dtype=wp.quatd), s2: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    pp, qq, ss = wp.transform_decompose(wp.transform_compose(p[i], q[i], s[i]))
    p2[i] = pp
    q2[i] = qq
    s2[i] = ss


def test_transform_decompose_inverts_compose_and_flips_reflections():
    rng = np.random.default_rng(5)
    p, q = rng.normal(size=(N, 3)), unit(rng, (N, 4))
    s = rng.uniform(0.5, 2.0, (N, 3))
    s[: N // 2, 1] *= -1.0  # reflections: one negative scale
    p2, q2, s2 = run(decompose_k, (p, wp.vec3d), (q, wp.quatd), (s, wp.vec3d),
                     outs=[(wp.vec3d, N), (wp.quatd, N), (wp.vec3d, N)])
    np.testing.assert_allclose(p2, p, rtol=0, atol=1e-14)
    np.testing.assert_allclose(s2[N // 2:], s[N // 2:], rtol=0, atol=1e-13)
    same_rotation(q2[N // 2:], q[N // 2:], atol=1e-12)
    # a reflection: all three scales negative and a proper rotation that rebuilds the matrix
    assert np.all(s2[: N // 2] < 0)
    rebuilt = rotmat(q2[: N // 2]) * s2[: N // 2, None, :]
    np.testing.assert_allclose(rebuilt, rotmat(q[: N // 2]) * s[: N // 2, None, :], rtol=0, atol=1e-12)


@wp.kernel
def twist_k(axis: wp.array(dtype=wp.vec3d), q: wp.array(dtype=wp.quatd), twist: wp.array(dtype=wp.quatd),
            angles: wp.array(dtype=wp.vec2d)):
    i = wp.tid()
    twist[i] = wp.quat_twist(axis[i], q[i])
    angles[i] = wp.vec2d(wp.quat_twist_angle(axis[i], q[i]), wp.quat_twist_angle_signed(axis[i], q[i]))


def test_swing_twist_decomposition():
    """q = swing * twist with the swing about an axis perpendicular to the twist axis."""
    rng = np.random.default_rng(6)
    axis = unit(rng, (N, 3))
    perp = unit(rng, (N, 3))
    perp = perp - axis * np.sum(perp * axis, 1, keepdims=True)
    perp /= np.linalg.norm(perp, axis=1, keepdims=True)
    theta, phi = rng.uniform(-3.0, 3.0, N), rng.uniform(-2.0, 2.0, N)

    def about(k, angle):
        return np.concatenate([k * np.sin(angle / 2)[:, None], np.cos(angle / 2)[:, None]], 1)

    twist_q = about(axis, theta)
    q = qmul(about(perp, phi), twist_q)
    twist, angles = run(twist_k, (axis, wp.vec3d), (q, wp.quatd), outs=[(wp.quatd, N), (wp.vec2d, N)])
    same_rotation(twist, twist_q)
    np.testing.assert_allclose(angles[:, 1], theta, rtol=0, atol=1e-12)
    np.testing.assert_allclose(angles[:, 0], np.abs(theta), rtol=0, atol=1e-12)


@wp.kernel
def spatial_k(t: wp.array(dtype=wp.transformd), a: wp.array(dtype=wp.spatial_vectord),
              b: wp.array(dtype=wp.spatial_vectord), out: wp.array(dtype=wp.float64, ndim=2)):
    i = wp.tid()
    twist = wp.transform_twist(t[i], a[i])
    wrench = wp.transform_wrench(t[i], b[i])
    out[i, 0] = wp.spatial_dot(wrench, twist) - wp.spatial_dot(b[i], a[i])
    out[i, 1] = wp.length(wp.spatial_cross(a[i], b[i]) + wp.spatial_cross(b[i], a[i]))
    # the dual cross product is minus the transpose of the motion one: <a x* b, c> = -<b, a x c>
    out[i, 2] = wp.spatial_dot(wp.spatial_cross_dual(a[i], b[i]), twist) + \
        wp.spatial_dot(b[i], wp.spatial_cross(a[i], twist))
    adj = wp.spatial_adjoint(wp.quat_to_matrix(t[i].q), wp.quat_to_matrix(t[i].q) * 0.0)
    out[i, 3] = wp.length(adj * a[i] - wp.transform_twist(wp.transformation(
        wp.vec3d(0.0, 0.0, 0.0), t[i].q), a[i]))


def test_spatial_identities():
    rng = np.random.default_rng(7)
    t = np.concatenate([rng.normal(size=(N, 3)), unit(rng, (N, 4))], 1)
    a, b = rng.normal(size=(N, 6)), rng.normal(size=(N, 6))
    (out,) = run(spatial_k, (t, wp.transformd), (a, wp.spatial_vectord), (b, wp.spatial_vectord),
                 outs=[(wp.float64, (N, 4))])
    np.testing.assert_allclose(out, 0.0, rtol=0, atol=1e-12)  # power is frame-invariant, etc.


# -- operators: values and gradients --------------------------------------------------------------

@wp.kernel
def operators_k(a: wp.array(dtype=wp.quatd), b: wp.array(dtype=wp.quatd), s: wp.array(dtype=wp.float64),
                ta: wp.array(dtype=wp.transformd), tb: wp.array(dtype=wp.transformd),
                q_out: wp.array(dtype=wp.quatd), t_out: wp.array(dtype=wp.transformd),
                c_out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    q_out[i] = a[i] * b[i] + a[i] * s[i] - b[i] / s[i] + (-a[i])
    t_out[i] = ta[i] * tb[i]
    c_out[i] = a[i].x * b[i][3] + ta[i].p[1] * tb[i].q.w


def test_operators_values_and_gradients():
    rng = np.random.default_rng(8)
    a, b, s = unit(rng, (8, 4)), unit(rng, (8, 4)), rng.uniform(0.5, 2.0, 8)
    ta = np.concatenate([rng.normal(size=(8, 3)), unit(rng, (8, 4))], 1)
    tb = np.concatenate([rng.normal(size=(8, 3)), unit(rng, (8, 4))], 1)
    q_out, t_out, c_out = run(operators_k, (a, wp.quatd), (b, wp.quatd), (s, wp.float64),
                              (ta, wp.transformd), (tb, wp.transformd),
                              outs=[(wp.quatd, 8), (wp.transformd, 8), (wp.float64, 8)])
    np.testing.assert_allclose(q_out, qmul(a, b) + a * s[:, None] - b / s[:, None] - a, rtol=0, atol=1e-14)
    p = ta[:, :3] + np.einsum("nij,nj->ni", rotmat(ta[:, 3:]), tb[:, :3])
    np.testing.assert_allclose(t_out, np.concatenate([p, qmul(ta[:, 3:], tb[:, 3:])], 1), rtol=0, atol=1e-13)
    np.testing.assert_allclose(c_out, a[:, 0] * b[:, 3] + ta[:, 1] * tb[:, 6], rtol=0, atol=1e-15)
    zeros = [arr(np.zeros((8, 4)), wp.quatd), arr(np.zeros((8, 7)), wp.transformd), arr(np.zeros(8))]
    check_kernel(operators_k, 8, [arr(a, wp.quatd), arr(b, wp.quatd), arr(s), arr(ta, wp.transformd),
                                  arr(tb, wp.transformd), *zeros], wrt=[0, 1, 2, 3, 4], outputs=[5, 6, 7])


# -- gradients at removable singularities ---------------------------------------------------------

@wp.kernel
def singular_k(q: wp.array(dtype=wp.quatd), out: wp.array(dtype=wp.float64, ndim=2)):
    i = wp.tid()
    _axis, angle = wp.quat_to_axis_angle(q[i])
    e = wp.quat_to_euler(q[i], 2, 0, 2)
    out[i, 0] = angle
    out[i, 1] = e[0] + e[2]  # about z twice: only the sum is defined at the identity
    out[i, 2] = wp.quat_slerp(q[i], q[i], 0.3)[0]


def test_identity_quaternion_gives_finite_gradients():
    q = wp.array(np.array([[0.0, 0.0, 0.0, 1.0]] * 2), dtype=wp.quatd, device=DEVICE,
                 requires_grad=True)
    out = wp.zeros((2, 3), dtype=wp.float64, device=DEVICE, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(singular_k, dim=2, inputs=[q, out], device=DEVICE)
    tape.backward(grads={out: wp.array(np.ones((2, 3)), dtype=wp.float64, device=DEVICE)})
    g = q.grad.numpy()
    assert np.all(np.isfinite(g)), g
    # slerp(q, q, t) = q: d/dq of its x component is (1, 0, 0, 0); the angle's kink adds 0 here
    np.testing.assert_allclose(g[:, 0], 1.0, rtol=0, atol=1e-12)


# -- errors ---------------------------------------------------------------------------------------

def _bad_quat_rotate(v: wp.array(dtype=wp.vec3)):
    v[0] = wp.quat_rotate(v[0], v[0])  # <- here


def _bad_transform_point(q: wp.array(dtype=wp.quat), v: wp.array(dtype=wp.vec3)):
    v[0] = wp.transform_point(q[0], v[0])  # <- here


def _bad_euler_axis(v: wp.array(dtype=wp.vec3), n: float):
    v[1] = wp.quat_rotate(wp.quat_from_euler(v[0], n, 1, 2), v[0])  # <- here


def _bad_quat_times_vec(q: wp.array(dtype=wp.quat), v: wp.array(dtype=wp.vec3)):
    v[1] = wp.quat_rotate(q[0] * v[0], v[0])  # <- here


def _bad_set_translation(t: wp.array(dtype=wp.transform), v: wp.array(dtype=wp.vec3)):
    wp.transform_set_translation(t[0], v[0])  # <- here


def _bad_mixed_precision(q: wp.array(dtype=wp.quatd), v: wp.array(dtype=wp.vec3)):
    v[0] = wp.quat_rotate(q[0], v[0])  # <- here


ERRORS = [
    (_bad_quat_rotate, "wp.quat_rotate() needs a quaternion, got a value of type vec3f",
     [(3, wp.vec3)]),
    (_bad_transform_point, "wp.transform_point() needs a transform or a mat44, got a value of "
     "type quatf", [(3, wp.quat), (3, wp.vec3)]),
    (_bad_euler_axis, "wp.quat_from_euler(): axis index i must be 0, 1 or 2 (an integer)",
     [(3, wp.vec3), 1.0]),
    (_bad_quat_times_vec, "'*' is not defined between quatf and a value of type vec3f",
     [(3, wp.quat), (3, wp.vec3)]),
    (_bad_set_translation, "wp.transform_set_translation(): argument 1 is an output and must be "
     "a variable name", [(3, wp.transform), (3, wp.vec3)]),
    (_bad_mixed_precision, "wp.quat_rotate() arguments must share one scalar type, got quatd, "
     "vec3f", [(3, wp.quatd), (3, wp.vec3)]),
]


@gradloom_only
@pytest.mark.parametrize("fn,phrase,args", ERRORS, ids=lambda x: getattr(x, "__name__", ""))
def test_wrong_types_give_clear_errors(fn, phrase, args):
    import inspect

    kernel = wp.kernel(fn)
    lines, first = inspect.getsourcelines(fn)
    line = first + next(k for k, text in enumerate(lines) if "# <- here" in text)
    inputs = [wp.zeros(a[0], dtype=a[1], device=DEVICE) if isinstance(a, tuple) else a for a in args]
    with pytest.raises(wp.CompileError) as info:
        wp.launch(kernel, dim=1, inputs=inputs, device=DEVICE)
    msg = str(info.value)
    assert phrase in msg
    assert os.path.abspath(info.value.loc.file) == os.path.abspath(__file__)
    assert info.value.loc.line == line, msg


@wp.kernel
def set_parts_kernel(xs: wp.array(dtype=wp.transformd), out: wp.array(dtype=wp.transformd)):
    i = wp.tid()
    t = xs[i]
    t.p = t.p * wp.float64(2.0)
    t.q.w = t.q.w + wp.float64(1.0)
    t.p[1] += wp.float64(5.0)
    out[i] = t


def test_transform_parts_can_be_assigned() -> None:
    x = np.arange(14, dtype=np.float64).reshape(2, 7)
    out = wp.zeros(2, dtype=wp.transformd)
    wp.launch(set_parts_kernel, dim=2, inputs=[wp.array(x, dtype=wp.transformd), out])
    want = x.copy()
    want[:, :3] *= 2.0
    want[:, 6] += 1.0
    want[:, 1] += 5.0
    np.testing.assert_array_equal(out.numpy(), want)


@wp.kernel
def quat_from_parts_kernel(a: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.quat),
                           o2: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    out[i] = wp.quat(a[i], 2.0)  # vector part, then w, as Warp allows
    o2[i] = wp.vec4(wp.vec2(1.0, 2.0), 3.0, a[i][0])


def test_composites_from_vector_and_scalar_parts() -> None:
    x = np.array([[1.0, -2.0, 0.5]], dtype=np.float32)
    out, o2 = wp.zeros(1, dtype=wp.quat), wp.zeros(1, dtype=wp.vec4)
    wp.launch(quat_from_parts_kernel, dim=1, inputs=[wp.array(x, dtype=wp.vec3), out, o2])
    np.testing.assert_array_equal(out.numpy(), [[1.0, -2.0, 0.5, 2.0]])
    np.testing.assert_array_equal(o2.numpy(), [[1.0, 2.0, 3.0, 1.0]])
