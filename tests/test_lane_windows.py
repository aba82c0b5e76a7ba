"""Windows in the SIMD thread loop (codegen/lane_memory.py): the elements of W consecutive threads
are loaded and stored one vector register at a time, under lane masks too, with the scalar
loop's bits; the loop prefetches its windows' cache lines a fixed number of vectors of threads
ahead, in the direction the window moves, each line once. Prefetches change no value: the
kernels' results are checked against numpy too."""

from __future__ import annotations

import re

import numpy as np
import pytest

import gradloom as wp
from gradloom import config
from gradloom.codegen import cpu, lanes

pytestmark = pytest.mark.usefixtures("simd_width_16")


@wp.kernel
def long_body(F: wp.array(dtype=wp.mat33), out: wp.array(dtype=float)):
    i = wp.tid()
    f = F[i]
    j = wp.determinant(f) - 1.0
    out[i] = 0.5 * (wp.trace(wp.transpose(f) @ f) - 3.0) - j + 2.0 * j * j


@wp.kernel
def short_body(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def short_vec3_body(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float):
    i = wp.tid()
    x[i] = x[i] + v[i] * dt


@wp.kernel
def masked_elements(m: wp.array(dtype=wp.mat33), v: wp.array(dtype=wp.vec3),
                    out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    if v[i][0] > 0.0:  # lanes differ: masked window loads and stores
        out[i] = m[i] @ v[i]
    else:
        out[i][2] = wp.determinant(m[i])  # one component: the others keep their values


def run_masked(simd: bool, width: int, m0, v0, o0):
    config.simd, config.simd_width = simd, width
    m = wp.array(m0, dtype=wp.mat33, requires_grad=True)
    v = wp.array(v0, dtype=wp.vec3, requires_grad=True)
    out = wp.array(o0, dtype=wp.vec3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(masked_elements, len(m0), inputs=[m, v, out])
    tape.backward(grads={out: wp.array(np.ones_like(o0), dtype=wp.vec3)})
    return [a.numpy().copy() for a in (out, m.grad, v.grad)]


@pytest.mark.parametrize("width", [4, 8, 16])
def test_masked_windows_agree_with_the_scalar_loop_and_numpy(width):
    n = 3 * width + 5  # full vectors and a tail
    rng = np.random.default_rng(width)
    m0 = rng.standard_normal((n, 3, 3)).astype(np.float32)
    v0, o0 = (rng.standard_normal((n, 3)).astype(np.float32) for _ in range(2))
    scalar, lanes_ = run_masked(False, width, m0, v0, o0), run_masked(True, width, m0, v0, o0)
    for a, b in zip(scalar, lanes_, strict=True):
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
    on = v0[:, 0] > 0
    expect = o0.copy()
    expect[on] = np.einsum("nij,nj->ni", m0[on].astype(np.float64), v0[on])
    expect[~on, 2] = np.linalg.det(m0[~on].astype(np.float64))
    np.testing.assert_allclose(lanes_[0], expect, rtol=1e-5, atol=1e-5)
    # d(sum out)/dv = column sums of m where on; d/dm = det·m^-T where off, v_j per row where on
    np.testing.assert_allclose(lanes_[2][on], m0[on].sum(axis=1), rtol=1e-5, atol=1e-5)
    grad_m = np.where(on[:, None, None], np.broadcast_to(v0[:, None, :], (n, 3, 3)),
                      np.linalg.det(m0.astype(np.float64))[:, None, None]
                      * np.linalg.inv(m0.astype(np.float64)).transpose(0, 2, 1))
    np.testing.assert_allclose(lanes_[1], grad_m, rtol=1e-4, atol=1e-4)


def test_window_accesses_are_one_register_wide():
    """No vector wider than W: one 144-float load per `mat33` window was what LLVM split into
    scalar inserts through the stack."""
    text, _ = long_body._codegen("gl_test_windows", False)
    assert re.search(r"<(144|48) x float>", text) is None
    optimized = cpu.optimized_ir(text, 3)  # the components' loads of one register are one
    assert len(re.findall(r"load <16 x float>", optimized)) == 9  # F's window: 9 registers


def prefetch_offsets(kernel, adjoint=False) -> list[tuple[int, int]]:
    """(byte offset from the window's start, 1 for a write) of each prefetch in the entry."""
    text, facts = kernel._codegen("gl_test_prefetch", adjoint)
    assert facts["lanes"] is None  # the loop runs in lanes
    geps = dict(re.findall(r"(%lpf\d+) = getelementptr i8, ptr %\S+, i64 (-?\d+)", text))
    calls = re.findall(r"call void @llvm\.prefetch\.p0\(ptr (%lpf\d+), i32 (\d)", text)
    return [(int(geps[p]), int(rw)) for p, rw in calls]


def energies(F: np.ndarray) -> np.ndarray:
    f = F.astype(np.float64)
    j = np.linalg.det(f) - 1.0
    return 0.5 * ((f * f).sum(axis=(1, 2)) - 3.0) - j + 2.0 * j * j


def test_a_long_body_prefetches_each_line_of_its_window_once_ahead():
    ahead = lanes.PREFETCH_VECTORS * 16 * 36  # 16 lanes' mat33 elements: 9 cache lines
    written = lanes.PREFETCH_VECTORS * 16 * 4  # `out`: one line, for a write
    assert sorted(prefetch_offsets(long_body)) == \
        sorted([(written, 1)] + [(ahead + 64 * k, 0) for k in range(9)])
    # the adjoint's threads touch their own elements only, so it runs them in launch order
    # (pipeline.thread_order); read are F's window, F.grad's (added into: read first) and
    # out.grad's
    reads = [(written, 0)] + 2 * [(ahead + 64 * k, 0) for k in range(9)]
    assert sorted(prefetch_offsets(long_body, adjoint=True)) == sorted(reads)
    # its variant run last first (a launch with a zero-stride view): the windows move backwards
    backwards = prefetch_offsets(long_body, adjoint="adjoint:rev")
    assert sorted(backwards) == sorted([(-written, 0)] + 2 * [(-ahead + 64 * k, 0)
                                                              for k in range(9)])


def test_short_bodies_prefetch_too():
    # saxpy: x's and y's windows read, y's written, one line each per vector of 16 float32s
    # (the forward-mode benchmark's jvp 3.6 -> 3.3 ms on one core: codegen/lanes.py)
    ahead = lanes.PREFETCH_VECTORS * 16 * 4
    assert sorted(prefetch_offsets(short_body)) == [(ahead, 0), (ahead, 0), (ahead, 1)]
    # 16 lanes of vec3 span 3 cache lines per array (an integrate step: 7.4-8.5 -> 4.4-5.3 ms
    # on one core); read are x's and v's windows, written x's
    ahead = lanes.PREFETCH_VECTORS * 16 * 12
    lines = [ahead + 64 * k for k in range(3)]
    assert sorted(prefetch_offsets(short_vec3_body)) == sorted(
        [(at, 0) for at in 2 * lines] + [(at, 1) for at in lines])


def energies_and_grads(F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    f = F.astype(np.float64)
    det = np.linalg.det(f)
    j = det - 1.0
    e = 0.5 * ((f * f).sum(axis=(1, 2)) - 3.0) - j + 2.0 * j * j
    # d det / dF = det · F^-T
    grad = f + ((4.0 * j - 1.0) * det)[:, None, None] * np.linalg.inv(f).transpose(0, 2, 1)
    return e, grad


@pytest.mark.parametrize("n", [5, 37, 1000])
def test_prefetching_kernels_compute_the_same(n):
    rng = np.random.default_rng(n)
    F0 = (np.eye(3) + 0.1 * rng.standard_normal((n, 3, 3))).astype(np.float32)
    F = wp.array(F0, dtype=wp.mat33, requires_grad=True)
    out = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(long_body, n, inputs=[F, out])
    tape.backward(grads={out: wp.ones(n, dtype=float)})
    e, grad = energies_and_grads(F0)
    np.testing.assert_allclose(out.numpy(), e, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(F.grad.numpy(), grad, rtol=1e-4, atol=1e-4)


@wp.kernel
def weighted_components(a2: wp.array(dtype=wp.vec2), a4: wp.array(dtype=wp.vec4),
                        a6: wp.array(dtype=wp.spatial_vector), a7: wp.array(dtype=wp.transform),
                        a9: wp.array(dtype=wp.mat33), a16: wp.array(dtype=wp.mat44),
                        out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for k in range(2):
        s += float(k + 1) * a2[i][k]
    for k in range(4):
        s += float(k + 3) * a4[i][k]
    for k in range(6):
        s += float(k + 7) * a6[i][k]
    t = a7[i]
    p = wp.transform_get_translation(t)
    q = wp.transform_get_rotation(t)
    s += 13.0 * p[0] + 14.0 * p[1] + 15.0 * p[2] + 16.0 * q[0] + 17.0 * q[1] + 18.0 * q[2]
    s += 19.0 * q[3]
    m = a9[i]
    for r in range(3):
        for c in range(3):
            s += float(20 + 3 * r + c) * m[r, c]
    m4 = a16[i]
    for r in range(4):
        for c in range(4):
            s += float(29 + 4 * r + c) * m4[r, c]
    out[i] = s


@pytest.mark.parametrize("width", [4, 8, 16])
def test_every_element_size_is_taken_apart_lane_by_lane(width):
    """Windows of 2, 4, 6, 7, 9 and 16 floats per element (their strides taken apart one prime
    factor at a time: codegen/lane_memory.deinterleave): each component reaches its lane, in
    full vectors and in the masked tail, against numpy in float64."""
    config.simd_width = width
    n = 5 * width + 3
    rng = np.random.default_rng(width + 100)
    data = {k: rng.standard_normal((n, k)).astype(np.float32) for k in (2, 4, 6, 7, 9, 16)}
    dtypes = {2: wp.vec2, 4: wp.vec4, 6: wp.spatial_vector, 7: wp.transform, 9: wp.mat33,
              16: wp.mat44}
    arrays = [wp.array(data[k] if k not in (9, 16) else data[k].reshape(n, *(3, 3) if k == 9
                                                                          else (4, 4)),
                       dtype=dtypes[k]) for k in (2, 4, 6, 7, 9, 16)]
    out = wp.zeros(n, dtype=float)
    wp.launch(weighted_components, n, inputs=[*arrays, out])
    weights = np.arange(1, 45, dtype=np.float64)
    flat = np.concatenate([data[k].astype(np.float64) for k in (2, 4, 6, 7, 9, 16)], axis=1)
    np.testing.assert_allclose(out.numpy(), flat @ weights, rtol=1e-5, atol=1e-4)
    _, facts = weighted_components._codegen("gl_test_sizes", False)
    assert facts["lanes"] is None  # the loop ran in lanes


def test_mat33_components_take_36_permutes():
    """The 9 components of W mat33s: two rounds of stride-3 steps, shared between the components
    (each round 9 chunks x 2 permutes), where picking each component on its own took ~80."""
    optimized = cpu.optimized_ir(long_body._codegen("gl_test_permutes", False)[0], 3)
    lanes_loop = optimized[optimized.index("v.pre"):] if "v.pre" in optimized else optimized
    shuffles = re.findall(r"shufflevector <16 x float> %\S+, <16 x float> %\S+, <16 x i32>",
                          lanes_loop)
    assert len(shuffles) <= 40


@wp.kernel
def scaled_copies(a4: wp.array(dtype=wp.vec4), a6: wp.array(dtype=wp.spatial_vector),
                  a9: wp.array(dtype=wp.mat33), a16: wp.array(dtype=wp.mat44),
                  o4: wp.array(dtype=wp.vec4), o6: wp.array(dtype=wp.spatial_vector),
                  o9: wp.array(dtype=wp.mat33), o16: wp.array(dtype=wp.mat44)):
    i = wp.tid()
    o4[i] = 2.0 * a4[i]
    o6[i] = 3.0 * a6[i]
    o9[i] = wp.transpose(a9[i])
    o16[i] = wp.transpose(a16[i]) * 0.5


@pytest.mark.parametrize("width", [4, 8, 16])
def test_whole_element_stores_are_woven_back_in_order(width):
    """Stores of every component of an element (vec4, spatial_vector, mat33, mat44): the
    components' vectors woven back one prime factor at a time (codegen/lane_memory.interleave),
    in full vectors and the masked tail, equal to numpy's."""
    config.simd_width = width
    n = 4 * width + 3
    rng = np.random.default_rng(width + 200)
    shapes = {4: (4,), 6: (6,), 9: (3, 3), 16: (4, 4)}
    types = {4: wp.vec4, 6: wp.spatial_vector, 9: wp.mat33, 16: wp.mat44}
    data = {k: rng.standard_normal((n, *s)).astype(np.float32) for k, s in shapes.items()}
    ins = [wp.array(data[k], dtype=types[k]) for k in shapes]
    outs = [wp.zeros(n, dtype=types[k]) for k in shapes]
    wp.launch(scaled_copies, n, inputs=[*ins, *outs])
    np.testing.assert_array_equal(outs[0].numpy(), 2.0 * data[4])
    np.testing.assert_array_equal(outs[1].numpy(), 3.0 * data[6])
    np.testing.assert_array_equal(outs[2].numpy(), np.transpose(data[9], (0, 2, 1)))
    np.testing.assert_array_equal(outs[3].numpy(), np.transpose(data[16], (0, 2, 1)) * 0.5)
    assert scaled_copies._codegen("gl_test_weave", False)[1]["lanes"] is None
