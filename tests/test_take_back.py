"""The adjoint peephole of autodiff/take_back.py: a gradient taken for a store and added straight
back for the load of an in-place update is only read. Checked on the IR (which pairs fold, and
which must not) and on gradients against float64 central differences and analytic values."""

# ruff: noqa: UP018

from __future__ import annotations

import numpy as np
import pytest
from gradfd import arr, check_kernel

import gradloom as wp
from gradloom import pipeline
from gradloom.ir.nodes import walk_ops

f64 = wp.float64


@wp.kernel
def saxpy_inplace(a: f64, x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def integrate_inplace(x: wp.array(dtype=wp.vec3d), v: wp.array(dtype=wp.vec3d), dt: f64):
    i = wp.tid()
    x[i] = x[i] + v[i] * dt
    v[i] = v[i] + wp.vec3d(f64(0.0), f64(-9.8), f64(0.0)) * dt


@wp.kernel
def scale_inplace(y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = f64(2.0) * y[i]  # the load's adjoint is twice the taken value: not a take-back


@wp.kernel
def store_twice(y: wp.array(dtype=f64)):
    i = wp.tid()
    a = y[i]
    y[i] = f64(3.0)  # its take of the same slot sits between the final store's and the add
    y[i] = a


@wp.kernel
def shift_down(y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = y[i + 1]  # the taken value goes back, but into the next slot


@wp.kernel
def two_foreign_adds(y: wp.array(dtype=f64), x: wp.array(dtype=f64)):
    i = wp.tid()
    # x's gradient is added into at two elements before y's comes back: were x and y one
    # array, both could land in y's slot, and the sum's order would change
    y[i] = y[i] + f64(0.5) * x[i] + f64(0.25) * x[i + 1]


def _adjoint_prims(kernel) -> list[str]:
    """The adjoint's gradient accesses, in order."""
    ir, _ = pipeline.kernel_ir(kernel, adjoint=True)
    return [op.prim for op in walk_ops(ir.body) if op.prim in ("adj_take", "adj_add", "adj_read")]


def test_an_inplace_update_reads_its_gradient() -> None:
    prims = _adjoint_prims(saxpy_inplace)
    assert prims == ["adj_read", "adj_add"]  # y's gradient read; x's gradient added into


def test_vector_components_fold_past_each_other_and_past_other_gradients() -> None:
    prims = _adjoint_prims(integrate_inplace)
    assert "adj_take" not in prims
    assert prims.count("adj_read") == 6 and prims.count("adj_add") == 3  # x's adds into v's


@pytest.mark.parametrize("kernel", [scale_inplace, store_twice, shift_down,
                                    two_foreign_adds])
def test_what_is_not_a_take_back_stays(kernel) -> None:
    assert "adj_take" in _adjoint_prims(kernel)


X4 = [0.3, -1.2, 0.7, 2.1]
Y4 = [1.5, 0.4, -0.9, 0.2]


def test_inplace_gradients_match_fd() -> None:
    check_kernel(saxpy_inplace, 4, [0.75, arr(X4), arr(Y4)], wrt=[1, 2], outputs=[2])
    rng = np.random.default_rng(3)
    check_kernel(integrate_inplace, 5,
                 [arr(rng.uniform(-1, 1, (5, 3)), wp.vec3d),
                  arr(rng.uniform(-1, 1, (5, 3)), wp.vec3d), 0.05],
                 wrt=[0, 1], outputs=[0, 1])
    check_kernel(scale_inplace, 4, [arr(Y4)], wrt=[0], outputs=[0])
    check_kernel(store_twice, 4, [arr(Y4)], wrt=[0], outputs=[0])
    check_kernel(shift_down, 3, [arr(Y4)], wrt=[0], outputs=[0])
    check_kernel(two_foreign_adds, 3, [arr(Y4[:3]), arr(X4)], wrt=[0, 1], outputs=[0])


def test_one_array_passed_twice() -> None:
    """y = a·y + y through two names for one array (a Tape allows this in-place update): the
    gradient reaching y is (a + 1) times its seed, exactly."""
    y = wp.array(np.array(Y4), dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(saxpy_inplace, 4, inputs=[0.75, y, y])
    seed = wp.array(np.array([1.0, -2.0, 0.5, 3.0]), dtype=f64)
    tape.backward(grads={y: seed})
    np.testing.assert_array_equal(y.grad.numpy(), 1.75 * seed.numpy())


def test_float32_lanes_match_one_thread_at_a_time(monkeypatch) -> None:
    """The folded adjoint in SIMD lanes gives the scalar loop's bits (float32, 1000 threads)."""
    rng = np.random.default_rng(5)
    x0, v0 = (rng.uniform(-1, 1, (1000, 3)).astype(np.float32) for _ in range(2))
    seeds = [rng.uniform(-1, 1, (1000, 3)).astype(np.float32) for _ in range(2)]
    got = []
    for simd in (False, True):
        monkeypatch.setattr(wp.config, "simd", simd)  # part of the cache key: two compiles
        x = wp.array(x0, dtype=wp.vec3, requires_grad=True)
        v = wp.array(v0, dtype=wp.vec3, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(_integrate32, 1000, inputs=[x, v, 0.01])
        tape.backward(grads={x: wp.array(seeds[0], dtype=wp.vec3),
                             v: wp.array(seeds[1], dtype=wp.vec3)})
        got.append((x.grad.numpy().copy(), v.grad.numpy().copy()))
    for a, b in zip(got[0], got[1], strict=True):
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
    np.testing.assert_allclose(got[0][1], seeds[1] + 0.01 * seeds[0], rtol=1e-6)
    np.testing.assert_array_equal(got[0][0], seeds[0])


@wp.kernel
def _integrate32(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float):
    i = wp.tid()
    x[i] = x[i] + v[i] * dt
    v[i] = v[i] + wp.vec3(0.0, -9.8, 0.0) * dt

