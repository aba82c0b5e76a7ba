"""`wp.Tape` behaviour: seeding, housekeeping, nesting, overwrites, the adjoint stack, atomics.

Every expected gradient is analytic (written out from the kernel's formula) or a float64 central
difference from ``tests/gradfd.py``; nothing is a value copied from a previous run. The tests use
gradloom directly (they check gradloom's errors and its copy-on-write snapshots), so they are
skipped when the suite runs against warp-lang.
"""

# Kernel bodies write explicit float64 casts (`f64(2.0)`) the way Warp code must.
# ruff: noqa: UP018

from __future__ import annotations

import numpy as np
import pytest
from gradfd import arr, check_kernel, check_program
from wpcompat import BACKEND

if BACKEND != "gradloom":
    pytest.skip("gradloom-specific Tape tests", allow_module_level=True)

import gradloom as wp
from gradloom.errors import CompileError, GradloomError
from gradloom.runtime.cpu.launch import prepared_adjoint

f64 = wp.float64
F64 = wp.array(dtype=wp.float64)
F32 = wp.array(dtype=wp.float32)

STACK_START = 1 << 16  # the adjoint stack's initial size (docs/autodiff.md: 64 KiB)


def a64(values, requires_grad=True):
    return wp.array(np.array(values, dtype=np.float64), dtype=f64, requires_grad=requires_grad)


def z64(shape):
    return wp.zeros(shape, dtype=f64, requires_grad=True)


def grad(a):
    return a.grad.numpy().copy()


# =============================================================================================
# kernels


@wp.kernel
def square(x: F64, y: F64):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def sine(x: F64, y: F64):
    i = wp.tid()
    y[i] = wp.sin(x[i])


@wp.kernel
def triple_into(src: F64, dst: F64):
    i = wp.tid()
    dst[i] = src[i] * f64(3.0)


@wp.kernel
def double_into(src: F64, dst: F64):
    i = wp.tid()
    dst[i] = src[i] * f64(2.0)


@wp.kernel
def sum_squares(x: F64, loss: F64):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * x[i])


@wp.kernel
def scatter_squares(z: F64, idx: wp.array(dtype=wp.int32), y: F64):
    i = wp.tid()
    y[idx[i]] = z[i] * z[i]


@wp.kernel
def gather_mixed(x: F64, w: F64, idx: wp.array(dtype=wp.int32), c: F64, y: F64):
    i = wp.tid()
    y[i] = x[i] * w[idx[i]] + c[i] * x[i]


@wp.kernel
def sin_inplace(x: F64, t: F64):
    i = wp.tid()
    x[i] = wp.sin(x[i]) * t[i]


@wp.kernel
def sin_aliased(x: F64, t: F64, y: F64):
    i = wp.tid()
    y[i] = wp.sin(x[i]) * t[i]


@wp.kernel
def running_total(x: F64, total: F64, y: F64):
    i = wp.tid()
    before = wp.atomic_add(total, 0, x[i])  # threads run in order: x[0] + ... + x[i - 1]
    y[i] = before * x[i]


@wp.kernel
def shift_left(x: F64):
    i = wp.tid()
    if i < 3:
        x[i] = x[i + 1] * f64(2.0)  # reads the element thread i + 1 overwrites afterwards


@wp.kernel
def loop_product(x: F64, lens: wp.array(dtype=wp.int32), s: F64, y: F64):
    i = wp.tid()
    p = s[i]
    for k in range(lens[i]):
        p = p * x[k]
    wp.atomic_add(y, i, p)  # its adjoint only reads y.grad: running a thread twice shows


@wp.kernel
def loop_product_inplace(x: F64, lens: wp.array(dtype=wp.int32), y: F64):
    i = wp.tid()
    p = f64(1.0)
    for k in range(lens[i]):
        p = p * x[k]
    y[i] = y[i] * p


@wp.kernel
def min_max_squares(x: F64, lo: F64, hi: F64):
    i = wp.tid()
    v = x[i] * x[i]
    wp.atomic_min(lo, 0, v)
    wp.atomic_max(hi, 0, v)


@wp.kernel
def min_into(x: F64, lo: F64):
    i = wp.tid()
    wp.atomic_min(lo, 0, x[i])


@wp.kernel
def min_reads_its_target(x: F64, lo: F64):
    i = wp.tid()
    wp.atomic_min(lo, 0, x[i] + lo[1])


@wp.kernel
def copy_first(x0: F64, lo: F64):
    lo[0] = x0[0]


@wp.kernel(enable_backward=False)
def forward_only_square(x: F64, y: F64):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.struct
class Scaled:
    a: F64
    scale: f64


@wp.kernel
def struct_square(p: Scaled, y: F64):
    i = wp.tid()
    y[i] = p.a[i] * p.a[i] * p.scale


@wp.kernel
def square_scaled(x: F64, c: float, y: F64):
    i = wp.tid()
    y[i] = x[i] * x[i] * wp.float64(c)


@wp.kernel
def cube32(x: F32, y: F32):
    i = wp.tid()
    y[i] = x[i] * x[i] * x[i]


@wp.kernel
def inplace_exp32(x: F32, t: F32):
    i = wp.tid()
    x[i] = wp.exp(x[i] * t[i])


@wp.kernel
def quad_form(m: wp.array(dtype=wp.mat33d), v: wp.array(dtype=wp.vec3d), y: F64):
    i = wp.tid()
    y[i] = wp.dot(m[i] @ v[i], v[i])


@wp.kernel
def vec_length32(v: wp.array(dtype=wp.vec3f), y: F32):
    i = wp.tid()
    y[i] = wp.length(v[i])


@wp.kernel
def component_x_store(z: F64, y: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    y[i].x = z[i]


@wp.kernel
def spread_vec(x: F64, y: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    y[i] = wp.vec3d(x[i] * f64(2.0), x[i] * f64(3.0), x[i] * x[i])


@wp.kernel
def grid(x: wp.array2d(dtype=f64), c: F64, y: wp.array2d(dtype=f64)):
    i, j = wp.tid()
    y[i, j] = x[i, j] * x[i, j] * c[j] + wp.sin(x[i, j]) * f64(i + 1)


# =============================================================================================
# backward(): seeding and errors

X5 = np.array([0.3, -0.7, 1.2, 0.45, -1.6])
W5 = np.array([0.7, -1.3, 0.4, 1.1, -0.6])


def test_backward_loss_sets_the_loss_gradient_to_one():
    x = a64(X5)
    loss = z64(1)
    loss.grad.fill_(5.0)  # backward sets the seed, it does not add to what is there
    tape = wp.Tape()
    with tape:
        wp.launch(sum_squares, 5, inputs=[x, loss])
    tape.backward(loss=loss)
    # atomic_add reads its target's gradient without consuming it: still exactly 1
    np.testing.assert_array_equal(loss.grad.numpy(), [1.0])
    np.testing.assert_allclose(grad(x), 2 * X5, rtol=1e-15)
    np.testing.assert_allclose(loss.numpy(), [np.sum(X5 * X5)], rtol=1e-14)


def test_backward_loss_must_have_one_element():
    x, y = a64(X5), z64(5)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 5, inputs=[x, y])
    with pytest.raises(GradloomError, match=r"exactly one element.*\(5,\)"):
        tape.backward(loss=y)
    np.testing.assert_array_equal(grad(x), 0.0)


def test_backward_loss_without_gradient_is_an_error():
    x = a64(X5)
    loss = wp.zeros(1, dtype=f64)  # no requires_grad
    tape = wp.Tape()
    with tape:
        wp.launch(sum_squares, 5, inputs=[x, loss])
    with pytest.raises(GradloomError, match="requires_grad"):
        tape.backward(loss=loss)
    with pytest.raises(GradloomError, match="gradloom array"):
        tape.backward(loss=np.zeros(1))


def test_backward_seed_for_array_without_gradient_gives_it_one():
    """As in Warp 1.19, grads={a: seed} for an array without a gradient makes seed its
    gradient (here a copy: the seed buffer itself is never written)."""
    x = a64(X5)
    loss = wp.zeros(1, dtype=f64)  # no requires_grad
    tape = wp.Tape()
    with tape:
        wp.launch(sum_squares, 5, inputs=[x, loss])
    seed = a64([2.0], requires_grad=False)
    tape.backward(grads={loss: seed})
    np.testing.assert_allclose(grad(x), 4.0 * X5)  # d(2 * sum x^2)/dx
    assert loss.grad is not None and loss.grad is not seed
    np.testing.assert_array_equal(seed.numpy(), [2.0])


def test_backward_with_nothing_seeded_gives_zero_gradients():
    # Warp: backward() with no arguments seeds from the .grad contents; here all zero
    x, y = a64(X5), z64(5)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 5, inputs=[x, y])
    tape.backward()
    tape.backward(grads={})  # an empty dict is the same as no seeds
    np.testing.assert_array_equal(grad(x), 0.0)
    np.testing.assert_array_equal(grad(y), 0.0)


def test_backward_seed_of_the_wrong_shape_is_an_error():
    x, y = a64(X5), z64(5)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 5, inputs=[x, y])
    with pytest.raises(GradloomError):
        tape.backward(grads={y: np.ones(4)})


@pytest.mark.parametrize("seed_kind", ["array", "numpy"])
def test_seed_is_never_written_and_backward_repeats(seed_kind):
    x, y = a64(X5), z64(5)
    seed = a64(W5, requires_grad=False) if seed_kind == "array" else W5.copy()
    tape = wp.Tape()
    with tape:
        wp.launch(square, 5, inputs=[x, y])
    expected = 2 * X5 * W5

    tape.backward(grads={y: seed})
    first = grad(x)
    np.testing.assert_allclose(first, expected, rtol=1e-15)
    seed_values = seed.numpy() if seed_kind == "array" else seed
    np.testing.assert_array_equal(seed_values, W5)  # the store consumed y.grad, not the seed

    tape.zero()
    tape.backward(grads={y: seed})
    np.testing.assert_array_equal(grad(x), first)

    tape.backward(grads={y: seed})  # no zero(): leaf gradients accumulate
    np.testing.assert_allclose(grad(x), 2 * expected, rtol=1e-15)
    np.testing.assert_array_equal(seed_values, W5)


def test_loss_backward_twice_accumulates():
    x, loss = a64(X5), z64(1)
    tape = wp.Tape()
    with tape:
        wp.launch(sum_squares, 5, inputs=[x, loss])
    tape.backward(loss=loss)
    tape.backward(loss=loss)
    np.testing.assert_allclose(grad(x), 4 * X5, rtol=1e-15)
    tape.zero()
    np.testing.assert_array_equal(loss.grad.numpy(), [0.0])
    tape.backward(loss=loss)
    np.testing.assert_allclose(grad(x), 2 * X5, rtol=1e-15)


# =============================================================================================
# zero(), reset(), gradients


def test_zero_zeroes_the_gradient_of_every_recorded_array():
    x, y, z = a64(X5), z64(5), z64(5)
    bystander = a64(X5)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 5, inputs=[x, y])
        c = wp.clone(y, requires_grad=True)
        z.assign(c)
    for a in (x, y, z, c, bystander):
        a.grad.fill_(3.0)
    tape.zero()
    for a in (x, y, z, c):
        np.testing.assert_array_equal(a.grad.numpy(), 0.0)
    np.testing.assert_array_equal(bystander.grad.numpy(), 3.0)  # not on the tape


def test_reset_forgets_the_recording():
    x, y = a64(X5), z64(5)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 5, inputs=[x, y])
    tape.backward(grads={y: W5})
    assert np.any(grad(x) != 0)
    tape.reset()
    np.testing.assert_array_equal(grad(x), 0.0)  # reset zeroes first
    tape.backward(grads={y: W5})
    np.testing.assert_array_equal(grad(x), 0.0)  # nothing recorded any more
    np.testing.assert_array_equal(grad(y), W5)  # the seed was set, no store consumed it
    # as in Warp, `gradients` still lists what was recorded before the reset (zeroed then)
    assert set(map(id, tape.gradients)) == {id(x), id(y)}
    # the tape records again after a reset
    with tape:
        wp.launch(sine, 5, inputs=[x, y])
    tape.zero()
    tape.backward(grads={y: W5})
    np.testing.assert_allclose(grad(x), np.cos(X5) * W5, rtol=1e-14)


def test_gradients_maps_recorded_arrays_to_their_grads():
    x, w, y = a64(X5), a64(W5), z64(5)
    c = a64(X5, requires_grad=False)
    idx = wp.array(np.arange(5, dtype=np.int32), dtype=wp.int32)
    tape = wp.Tape()
    with tape:
        wp.launch(gather_mixed, 5, inputs=[x, w, idx, c, y])
    grads = tape.gradients
    assert set(map(id, grads)) == {id(x), id(w), id(y)}
    for a, g in grads.items():
        assert g is a.grad


def test_no_gradient_for_requires_grad_false_and_integer_arrays():
    x, w, y = a64(X5), a64([0.5, -2.0, 1.5]), z64(5)
    c_values = np.array([1.0, 2.0, -1.0, 0.5, 3.0])
    c = a64(c_values, requires_grad=False)
    idx_values = np.array([2, 0, 2, 1, 0], dtype=np.int32)
    idx = wp.array(idx_values, dtype=wp.int32)
    tape = wp.Tape()
    with tape:
        wp.launch(gather_mixed, 5, inputs=[x, w, idx, c, y])
    tape.backward(grads={y: W5})
    assert c.grad is None and not c.requires_grad
    assert idx.grad is None
    np.testing.assert_array_equal(c.numpy(), c_values)
    np.testing.assert_array_equal(idx.numpy(), idx_values)
    np.testing.assert_allclose(grad(x), (w.numpy()[idx_values] + c_values) * W5, rtol=1e-14)
    want_w = np.zeros(3)
    np.add.at(want_w, idx_values, X5 * W5)
    np.testing.assert_allclose(grad(w), want_w, rtol=1e-14)


def test_integer_array_with_requires_grad_receives_nothing():
    x, w, y = a64(X5), a64([0.5, -2.0, 1.5]), z64(5)
    idx = wp.array(np.array([2, 0, 2, 1, 0], dtype=np.int32), dtype=wp.int32,
                   requires_grad=True)
    c = a64(np.ones(5), requires_grad=False)
    tape = wp.Tape()
    with tape:
        wp.launch(gather_mixed, 5, inputs=[x, w, idx, c, y])
    tape.backward(grads={y: W5})
    np.testing.assert_array_equal(idx.grad.numpy(), 0)
    np.testing.assert_allclose(grad(x), (w.numpy()[idx.numpy()] + 1.0) * W5, rtol=1e-14)


# =============================================================================================
# several tapes, record_tape=False


def test_nested_tapes_each_replay_only_their_records():
    x, y, z = a64(X5), z64(5), z64(5)
    outer, inner = wp.Tape(), wp.Tape()
    with outer:
        wp.launch(square, 5, inputs=[x, y])  # A: only on the outer tape
        with inner:
            c = wp.clone(y, requires_grad=True)  # an array operation: on both
            wp.launch(sine, 5, inputs=[c, z])  # B: on both
    y_values = X5 * X5
    inner.backward(grads={z: W5})
    np.testing.assert_allclose(grad(y), np.cos(y_values) * W5, rtol=1e-14)
    np.testing.assert_array_equal(grad(x), 0.0)  # A is not on the inner tape
    assert id(x) not in set(map(id, inner.gradients))

    inner.zero()
    np.testing.assert_array_equal(grad(y), 0.0)
    np.testing.assert_array_equal(grad(c), 0.0)
    outer.backward(grads={z: W5})
    np.testing.assert_allclose(grad(x), 2 * X5 * np.cos(y_values) * W5, rtol=1e-14)
    np.testing.assert_array_equal(grad(y), 0.0)  # A's store consumed y's gradient


def test_sequential_tapes_are_independent():
    x, y, z = a64(X5), z64(5), z64(5)
    t1, t2 = wp.Tape(), wp.Tape()
    with t1:
        wp.launch(square, 5, inputs=[x, y])
    with t2:
        wp.launch(sine, 5, inputs=[y, z])
    t2.backward(grads={z: W5})
    np.testing.assert_array_equal(grad(x), 0.0)
    np.testing.assert_allclose(grad(y), np.cos(X5 * X5) * W5, rtol=1e-14)
    t1.backward(grads={y: W5})  # re-seeds y: only A runs
    np.testing.assert_allclose(grad(x), 2 * X5 * W5, rtol=1e-15)


def test_record_tape_false_launches_are_not_recorded():
    x, y, z = a64(X5), z64(5), z64(5)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 5, inputs=[x, y], record_tape=False)
        wp.launch(sine, 5, inputs=[y, z])
    np.testing.assert_allclose(z.numpy(), np.sin(X5 * X5), rtol=1e-14)  # both ran
    tape.backward(grads={z: W5})
    np.testing.assert_allclose(grad(y), np.cos(X5 * X5) * W5, rtol=1e-14)
    np.testing.assert_array_equal(grad(x), 0.0)
    assert id(x) not in set(map(id, tape.gradients))


# =============================================================================================
# overwrites after a launch read an array: the launch's gradient uses the old values

N = 5
XO = np.array([0.6, -1.1, 0.35, 1.4, -0.8])
SO = np.array([1.3, 0.45, -0.9, 0.7, 2.1])
WO1 = np.array([0.9, -0.6, 1.2, 0.5, -1.4])
WO2 = np.array([-0.7, 1.1, 0.8, -1.3, 0.6])


def _overwrite(how, x, src):
    if how == "launch":
        wp.launch(triple_into, N, inputs=[src, x])
    elif how == "launch_view":
        wp.launch(triple_into, N - 1, inputs=[src[: N - 1], x[1:]])
    elif how == "assign_array":
        x.assign(src)
    elif how == "assign_numpy":
        x.assign(np.array([4.0, 3.0, 2.0, 1.0, 0.5]))
    elif how == "fill":
        x.fill_(2.5)
    elif how == "zero":
        x.zero_()
    elif how == "copy":
        wp.copy(x, src)
    elif how == "copy_offsets":
        wp.copy(x, src, dest_offset=1, src_offset=0, count=2)
    elif how == "setitem":
        x[1:3] = 5.0
    elif how == "setitem_view":
        v = x[2:]
        v[0] = -3.0  # x[2], through a view
    else:
        raise AssertionError(how)


# (elements of x replaced by the overwrite, d(new x)/d(src) as {x index: (src index, factor)})
_OVERWRITES = {
    "launch": (range(N), {i: (i, 3.0) for i in range(N)}),
    "launch_view": (range(1, N), {i: (i - 1, 3.0) for i in range(1, N)}),
    "assign_array": (range(N), {i: (i, 1.0) for i in range(N)}),
    "assign_numpy": (range(N), {}),
    "fill": (range(N), {}),
    "zero": (range(N), {}),
    "copy": (range(N), {i: (i, 1.0) for i in range(N)}),
    "copy_offsets": ([1, 2], {1: (0, 1.0), 2: (1, 1.0)}),
    "setitem": ([1, 2], {}),
    "setitem_view": ([2], {}),
}


@pytest.mark.parametrize("how", list(_OVERWRITES))
def test_gradient_of_a_launch_uses_values_from_before_an_overwrite(how):
    def program(arrays):
        x, src = arrays
        y1, y2 = z64(N), z64(N)
        wp.launch(square, N, inputs=[x, y1])  # reads x
        _overwrite(how, x, src)
        wp.launch(square, N, inputs=[x, y2])  # reads the new x
        return [y1, y2]

    replaced, from_src = _OVERWRITES[how]
    kept = np.ones(N)
    kept[list(replaced)] = 0.0
    # y1 = x_old², y2 = x_new² with x_new = x_old where kept, else a constant or factor * src
    want_x = 2 * XO * WO1 + 2 * XO * WO2 * kept
    want_src = np.zeros(N)
    for i, (j, factor) in from_src.items():
        want_src[j] += 2 * (factor * SO[j]) * factor * WO2[i]
    check_program(program, [arr(XO), arr(SO)], wrt=[0, 1], name=f"overwrite_{how}",
                  weights=[WO1, WO2], expected={0: want_x, 1: want_src})


def test_setitem_with_an_array_value_passes_gradient_to_the_source():
    def program(arrays):
        x, src = arrays
        y = z64(N)
        x[1:3] = src[0:2]
        wp.launch(square, N, inputs=[x, y])
        return [y]

    want_src = np.zeros(N)
    want_src[0:2] = 2 * SO[0:2] * WO1[1:3]
    want_x = 2 * XO * WO1
    want_x[1:3] = 0.0
    check_program(program, [arr(XO), arr(SO)], wrt=[0, 1], name="setitem_array",
                  weights=[WO1], expected={0: want_x, 1: want_src})


def test_assign_into_a_slice_passes_gradient_to_the_source():
    """The working counterpart of the xfail above: the same data flow through assign()."""
    def program(arrays):
        x, src = arrays
        y = z64(N)
        x[1:3].assign(src[0:2])
        wp.launch(square, N, inputs=[x, y])
        return [y]

    want_src = np.zeros(N)
    want_src[0:2] = 2 * SO[0:2] * WO1[1:3]
    want_x = 2 * XO * WO1
    want_x[1:3] = 0.0
    check_program(program, [arr(XO), arr(SO)], wrt=[0, 1], name="assign_slice",
                  weights=[WO1], expected={0: want_x, 1: want_src})


_LATER_WRITES = ["scatter_kernel", "setitem", "fill_view", "copy_offsets", "view_kernel"]
Z7 = np.array([0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4])


@pytest.mark.parametrize("how", _LATER_WRITES)
def test_an_element_overwritten_later_passes_no_gradient_through_the_earlier_write(how):
    idx = np.array([3, 1], dtype=np.int32)

    def program(arrays):
        x, z = arrays
        y = z64(N)
        wp.launch(double_into, N, inputs=[x, y])  # y = 2 x
        if how == "scatter_kernel":  # y[3] = z[0]², y[1] = z[1]²
            wp.launch(scatter_squares, 2, inputs=[z, wp.array(idx, dtype=wp.int32), y])
        elif how == "setitem":
            y[1:4:2] = 7.0
        elif how == "fill_view":
            y[1:4:2].fill_(7.0)
        elif how == "copy_offsets":  # y[1:4] = z[3:6]
            wp.copy(y, z, dest_offset=1, src_offset=3, count=3)
        else:  # y[1] = 2 z[0], y[3] = 2 z[1], written through a strided view
            wp.launch(double_into, 2, inputs=[z, y[1:4:2]])
        return [y]

    z_values = Z7 if how == "copy_offsets" else SO
    lost = [1, 2, 3] if how == "copy_offsets" else [1, 3]
    want_x = 2 * WO1
    want_x[lost] = 0.0
    want_z = np.zeros(z_values.size)
    if how == "scatter_kernel":
        want_z[[0, 1]] = 2 * z_values[[0, 1]] * WO1[idx]
    elif how == "copy_offsets":
        want_z[3:6] = WO1[1:4]
    elif how == "view_kernel":
        want_z[[0, 1]] = 2 * WO1[[1, 3]]
    check_program(program, [arr(XO), arr(z_values)], wrt=[0, 1], name=f"later_{how}",
                  weights=[WO1], expected={0: want_x, 1: want_z})


def test_partial_component_overwrite_keeps_the_other_components_gradient():
    def program(arrays):
        x, z = arrays
        y = wp.zeros(3, dtype=wp.vec3d, requires_grad=True)
        wp.launch(spread_vec, 3, inputs=[x, y])  # y = (2x, 3x, x²)
        wp.launch(component_x_store, 3, inputs=[z, y])  # y.x = z: 2x loses its path
        return [y]

    xv, zv = XO[:3], SO[:3]
    w = np.array([[0.5, -1.2, 0.8], [1.1, 0.3, -0.4], [-0.9, 0.7, 1.3]])
    want_x = 3 * w[:, 1] + 2 * xv * w[:, 2]
    check_program(program, [arr(xv), arr(zv)], wrt=[0, 1], name="component_overwrite",
                  weights=[w], expected={0: want_x, 1: w[:, 0]})


def test_atomic_min_target_overwritten_after_the_launch():
    """The min target is watched after its launch: a later overwrite does not move the winner."""
    x = a64([0.9, -0.4, 1.3])
    lo, hi = a64([100.0]), a64([-100.0])
    tape = wp.Tape()
    with tape:
        wp.launch(min_max_squares, 3, inputs=[x, lo, hi])
    lo.assign(np.array([0.0]))  # outside the tape: not an overwrite the tape knows about
    hi.fill_(50.0)
    tape.backward(grads={lo: np.array([2.0]), hi: np.array([3.0])})
    np.testing.assert_allclose(grad(x), [0.0, 2 * -0.4 * 2.0, 2 * 1.3 * 3.0], rtol=1e-15)


# =============================================================================================
# a kernel that reads and writes one array; backward changes no values

T5 = np.array([1.5, -0.8, 0.6, 2.0, -1.2])


def test_read_then_write_same_array():
    w = W5
    check_kernel(sin_inplace, 5, [arr(X5), arr(T5)], wrt=[0, 1], outputs=[0], weights=[w],
                 expected={0: np.cos(X5) * T5 * w, 1: np.sin(X5) * w})


def test_read_then_write_same_array_twice():
    def program(arrays):
        x, t = arrays
        wp.launch(sin_inplace, 5, inputs=[x, t])
        wp.launch(sin_inplace, 5, inputs=[x, t])
        return [x]

    x1 = np.sin(X5) * T5
    want_x = np.cos(x1) * T5 * np.cos(X5) * T5 * W5
    want_t = (np.sin(x1) + np.cos(x1) * T5 * np.sin(X5)) * W5
    check_program(program, [arr(X5), arr(T5)], wrt=[0, 1], name="inplace_twice",
                  weights=[W5], expected={0: want_x, 1: want_t})


def test_same_array_passed_as_input_and_output():
    def program(arrays):
        x, t = arrays
        wp.launch(sin_aliased, 5, inputs=[x, t, x])
        return [x]

    check_program(program, [arr(X5), arr(T5)], wrt=[0, 1], name="aliased_args",
                  weights=[W5], expected={0: np.cos(X5) * T5 * W5, 1: np.sin(X5) * W5})


def test_backward_leaves_every_array_value_unchanged():
    x, t, y, loss = a64(X5), a64(T5), z64(5), z64(1)
    lens = wp.array(np.array([5, 3, 0, 4, 1], dtype=np.int32), dtype=wp.int32)
    lo, hi = a64([10.0]), a64([-10.0])
    tape = wp.Tape()
    with tape:
        wp.launch(sin_inplace, 5, inputs=[x, t])
        wp.launch(loop_product_inplace, 5, inputs=[t, lens, x])
        c = wp.clone(x, requires_grad=True)
        wp.launch(square, 5, inputs=[c, y])
        wp.copy(c, t, dest_offset=1, count=2)
        wp.launch(min_max_squares, 5, inputs=[c, lo, hi])
        y.assign(c)
        wp.launch(sum_squares, 5, inputs=[y, loss])
        wp.launch(sin_inplace, 5, inputs=[y, t])
    arrays = [x, t, y, loss, lens, lo, hi, c]
    before = [a.numpy().copy() for a in arrays]
    tape.backward(grads={loss: np.ones(1), y: W5, hi: np.ones(1)})
    for a, b in zip(arrays, before):
        np.testing.assert_array_equal(a.numpy(), b)
    assert np.all(np.isfinite(grad(x))) and np.any(grad(x) != 0)


def test_gradient_through_a_float_atomic_result_is_a_clear_error():
    """y[i] = (t0 + x[0] + ... + x[i-1]) * x[i] via the value atomic_add returns: the value
    depends on the order threads run in, so backward refuses it rather than guess."""
    x = wp.array([0.5, 1.5, -0.7, 2.0], dtype=wp.float64, requires_grad=True)
    total = wp.array([0.3], dtype=wp.float64, requires_grad=True)
    y = wp.zeros(4, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(running_total, 4, inputs=[x, total, y])
    with pytest.raises(wp.CompileError, match="atomic_add.*order threads"):
        tape.backward(grads={y: np.ones(4)})


def test_read_of_an_element_another_thread_overwrites():
    # forward threads run in order: x'[i] = 2 x[i + 1] (i < 3), x'[3] = x[3]
    xv = np.array([0.5, 1.5, -0.7, 2.0])
    w = W5[:4]
    check_kernel(shift_left, 4, [arr(xv)], wrt=[0], outputs=[0], weights=[w],
                 expected={0: [0.0, 2 * w[0], 2 * w[1], 2 * w[2] + w[3]]})


# =============================================================================================
# loops that overflow the initial per-thread adjoint stack

NLOOP = 20_000
XL = 1.0 + 0.01 * np.sin(np.arange(NLOOP))  # products stay near 1
LENS = np.array([100, 3000, 9000, NLOOP], dtype=np.int32)  # threads 2 and 3 need > 64 KiB


def _product_gradients(lens, scale, w):
    """d/dx of sum_i w_i scale_i prod_{k < lens_i} x_k, and each prod."""
    prods = np.array([np.prod(XL[:n]) for n in lens])
    gx = np.zeros(NLOOP)
    for n, s, wi, p in zip(lens, scale, w, prods):
        gx[:n] += wi * s * p / XL[:n]
    return gx, prods


def test_loop_product_longer_than_the_initial_stack():
    assert NLOOP * 8 > 2 * STACK_START  # p is pushed once per trip: 160 kB for thread 3
    s0 = np.array([1.0, 2.0, -0.5, 0.75])
    w = np.array([0.3, -1.2, 0.8, 1.5])
    x, s, y = a64(XL), a64(s0), z64(4)
    lens = wp.array(LENS, dtype=wp.int32)
    tape = wp.Tape()
    with tape:
        wp.launch(loop_product, 4, inputs=[x, lens, s, y])
    tape.backward(grads={y: w})
    gx, prods = _product_gradients(LENS, s0, w)
    np.testing.assert_allclose(y.numpy(), s0 * prods, rtol=1e-12)
    np.testing.assert_allclose(grad(s), w * prods, rtol=1e-12)
    np.testing.assert_allclose(grad(x), gx, rtol=1e-11, atol=1e-13)
    assert max(s.size for s in prepared_adjoint(loop_product).stacks) >= NLOOP * 8


def test_loop_product_longer_than_the_stack_in_a_read_write_kernel():
    """y[i] = y[i] * prod: y needs a working copy, so a full stack restarts the launch."""
    y0 = np.array([1.0, 2.0, -0.5, 0.75])
    w = np.array([0.3, -1.2, 0.8, 1.5])
    x, y = a64(XL), a64(y0)
    lens = wp.array(LENS, dtype=wp.int32)
    tape = wp.Tape()
    with tape:
        wp.launch(loop_product_inplace, 4, inputs=[x, lens, y])
    tape.backward(grads={y: w})
    gx, prods = _product_gradients(LENS, y0, w)
    np.testing.assert_allclose(y.numpy(), y0 * prods, rtol=1e-12)
    np.testing.assert_allclose(grad(y), w * prods, rtol=1e-12)
    np.testing.assert_allclose(grad(x), gx, rtol=1e-11, atol=1e-13)
    assert max(s.size for s in prepared_adjoint(loop_product_inplace).stacks) >= NLOOP * 8
    # a second backward (stack already large) accumulates exactly the same again
    tape.backward(grads={y: w})
    np.testing.assert_allclose(grad(x), 2 * gx, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(grad(y), w * prods, rtol=1e-12)


# =============================================================================================
# atomic_min / atomic_max


def test_atomic_min_max_gradient_goes_to_the_winning_thread():
    xv = np.array([1.5, -0.5, 3.0, 2.0, -2.5])
    x = a64(xv)
    lo, hi = a64([100.0]), a64([-100.0])
    tape = wp.Tape()
    with tape:
        wp.launch(min_max_squares, 5, inputs=[x, lo, hi])
    np.testing.assert_array_equal(lo.numpy(), [0.25])
    np.testing.assert_array_equal(hi.numpy(), [9.0])
    tape.backward(grads={lo: np.array([2.0]), hi: np.array([3.0])})
    # lo = x[1]², hi = x[2]²
    np.testing.assert_array_equal(grad(x), [0.0, 2 * -0.5 * 2.0, 2 * 3.0 * 3.0, 0.0, 0.0])


def test_atomic_min_where_the_initial_value_wins_gives_no_thread_gradient():
    x = a64([1.5, 0.5, 3.0])
    lo = a64([0.1])  # min(0.1, x...) = 0.1
    tape = wp.Tape()
    with tape:
        wp.launch(min_into, 3, inputs=[x, lo])
    tape.backward(grads={lo: np.array([1.0])})
    np.testing.assert_array_equal(grad(x), 0.0)


def test_atomic_min_winner_takes_the_gradient_from_the_previous_value():
    def program(arrays):
        x0, x = arrays
        lo = z64(1)
        wp.launch(copy_first, 1, inputs=[x0, lo])  # lo = x0
        wp.launch(min_into, 3, inputs=[x, lo])  # lo = min(x0, x)
        return [lo]

    check_program(program, [arr([5.0]), arr([3.0, 1.0, 2.0])], wrt=[0, 1], name="min_chain",
                  weights=[[1.0]], expected={0: [0.0], 1: [0.0, 1.0, 0.0]})


def test_two_atomic_min_launches_into_one_target():
    def program(arrays):
        x, z = arrays
        lo = wp.array(np.array([100.0]), dtype=f64, requires_grad=True)
        wp.launch(min_into, 3, inputs=[x, lo])
        wp.launch(min_into, 2, inputs=[z, lo])
        return [lo]

    check_program(program, [arr([3.0, 1.0, 2.0]), arr([0.5, 4.0])], wrt=[0, 1],
                  name="min_twice", weights=[[1.0]],
                  expected={0: [0.0, 0.0, 0.0], 1: [1.0, 0.0]})


def test_atomic_min_on_an_array_the_kernel_reads_fails_at_backward():
    x, lo = a64([1.0, 2.0, 3.0]), a64([10.0, 0.5])
    tape = wp.Tape()
    with tape:
        wp.launch(min_reads_its_target, 3, inputs=[x, lo])  # the forward runs
    np.testing.assert_array_equal(lo.numpy(), [1.5, 0.5])
    with pytest.raises(CompileError, match=r"atomic_min.*separate array") as info:
        tape.backward(grads={lo: np.ones(2)})
    assert "min_reads_its_target" in str(info.value)


@wp.kernel
def min_old_value_shared(x: F64, lo: F64, y: F64):
    i = wp.tid()
    y[i] = wp.atomic_min(lo, 0, x[i])


def test_atomic_min_old_value_used_where_threads_share_the_element_fails_at_backward():
    x, lo, y = a64([1.0, 2.0, 3.0]), a64([10.0]), a64([0.0, 0.0, 0.0])
    tape = wp.Tape()
    with tape:
        wp.launch(min_old_value_shared, 3, inputs=[x, lo, y])
    with pytest.raises(CompileError, match=r"atomic_min\(\) returns .*order threads run in"):
        tape.backward(grads={y: np.ones(3)})


@wp.kernel
def min_old_value_own(slot: F64, value: F64, out: F64):
    i = wp.tid()
    out[i] = wp.atomic_min(slot, i, value[i])


def test_atomic_min_at_the_threads_own_element_with_nans():
    # warp-lang's test_special_values rows: a NaN element is always replaced, a NaN value
    # never replaces a number; the replaced element's gradient is consumed, the old value's
    # (out's seed) goes back to the element
    nan = float("nan")
    slot, value = a64([nan, nan, 2.0, 5.0, 2.0]), a64([nan, 2.0, nan, 2.0, 5.0])
    out = a64(np.zeros(5))
    tape = wp.Tape()
    with tape:
        wp.launch(min_old_value_own, 5, inputs=[slot, value, out])
    np.testing.assert_array_equal(slot.numpy()[1:], [2.0, 2.0, 2.0, 2.0])
    assert np.isnan(slot.numpy()[0])
    tape.backward(grads={slot: np.ones(5), out: np.full(5, 0.5)})
    np.testing.assert_array_equal(grad(value), [1.0, 1.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(grad(slot), [0.5, 0.5, 1.5, 0.5, 1.5])


def test_atomic_min_of_nans_where_threads_share_the_element():
    x, lo = a64([nan := float("nan"), nan]), a64([nan])
    tape = wp.Tape()
    with tape:
        wp.launch(min_into, 2, inputs=[x, lo])
    tape.backward(grads={lo: np.array([1.0])})
    np.testing.assert_array_equal(grad(x), [1.0, 1.0])  # NaN ties NaN: every thread


@wp.kernel
def int_max_old_value_used(ids: wp.array(dtype=wp.int32), x: F64, y: F64):
    i = wp.tid()
    k = wp.atomic_max(ids, i // 2, 3)
    y[i] = x[i] * wp.float64(k)


def test_integer_atomic_max_old_value_used_is_differentiated():
    # integers carry no gradient: the old value is replayed, not refused
    ids = wp.array(np.array([7, 1]), dtype=wp.int32)
    x, y = a64([0.5, 1.5, -2.0, 0.25]), a64(np.zeros(4))
    tape = wp.Tape()
    with tape:
        wp.launch(int_max_old_value_used, 4, inputs=[ids, x, y])
    tape.backward(grads={y: np.ones(4)})
    np.testing.assert_array_equal(grad(x), [7.0, 7.0, 1.0, 3.0])


# =============================================================================================
# enable_backward=False, structs, manual adjoint launches


def test_kernel_without_backward_warns_naming_it_and_passes_no_gradient():
    # warp-lang's behaviour: a warning at backward, no gradient through that launch
    x, y, z = a64(X5), z64(5), z64(5)
    tape = wp.Tape()
    with tape:
        wp.launch(forward_only_square, 5, inputs=[x, y])
        wp.launch(sine, 5, inputs=[y, z])
    np.testing.assert_allclose(y.numpy(), X5 * X5, rtol=1e-15)
    with pytest.warns(wp.errors.GradloomWarning,
                      match="forward_only_square.*enable_backward=False"):
        tape.backward(grads={z: W5})
    assert not np.any(grad(x))
    np.testing.assert_allclose(grad(y), np.cos(X5 * X5) * W5, rtol=1e-14)


def test_struct_array_field_gets_the_gradient():
    a = a64(X5)
    p = Scaled()
    p.a = a
    p.scale = 1.75
    y = z64(5)
    tape = wp.Tape()
    with tape:
        wp.launch(struct_square, 5, inputs=[p, y])
    np.testing.assert_allclose(y.numpy(), 1.75 * X5 * X5, rtol=1e-15)
    tape.backward(grads={y: W5})
    np.testing.assert_allclose(grad(a), 2 * 1.75 * X5 * W5, rtol=1e-15)
    assert any(k is a for k in tape.gradients)


def test_manual_adjoint_launch():
    x, y = a64(X5, requires_grad=False), a64(np.zeros(5), requires_grad=False)
    wp.launch(square_scaled, 5, inputs=[x, 0.5, y])
    gx = wp.zeros(5, dtype=f64)
    gy = a64(W5, requires_grad=False)
    wp.launch(square_scaled, 5, inputs=[x, 0.5, y], adj_inputs=[gx, None, gy], adjoint=True)
    np.testing.assert_allclose(gx.numpy(), 2 * 0.5 * X5 * W5, rtol=1e-15)
    np.testing.assert_array_equal(x.numpy(), X5)
    np.testing.assert_allclose(y.numpy(), 0.5 * X5 * X5, rtol=1e-15)
    assert x.grad is None  # the adjoint used the given arrays, not new .grad ones


def test_manual_adjoint_launch_with_outputs():
    x, y = a64(X5), z64(5)
    gx = wp.zeros(5, dtype=f64)
    gy = a64(W5, requires_grad=False)
    wp.launch(sine, 5, inputs=[x], outputs=[y], adj_inputs=[gx], adj_outputs=[gy],
              adjoint=True)
    np.testing.assert_allclose(gx.numpy(), np.cos(X5) * W5, rtol=1e-15)
    np.testing.assert_array_equal(grad(x), 0.0)  # x's own gradient untouched


# =============================================================================================
# float32, vectors and matrices, 2-D launches


def test_float32_kernel():
    xv = np.array([0.3, -0.7, 1.2, 0.45, -1.6], dtype=np.float32)
    x = wp.array(xv, dtype=wp.float32, requires_grad=True)
    y = wp.zeros(5, dtype=wp.float32, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(cube32, 5, inputs=[x, y])
    tape.backward(grads={y: W5.astype(np.float32)})
    assert x.grad.numpy().dtype == np.float32
    np.testing.assert_allclose(grad(x), 3 * xv.astype(np.float64) ** 2 * W5, rtol=1e-6)


def test_float32_read_then_write():
    xv = np.array([0.3, -0.7, 1.2, 0.45, -1.6], dtype=np.float32)
    tv = np.array([0.5, 1.1, -0.4, 0.9, 0.2], dtype=np.float32)
    x = wp.array(xv, dtype=wp.float32, requires_grad=True)
    t = wp.array(tv, dtype=wp.float32, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(inplace_exp32, 5, inputs=[x, t])
    tape.backward(grads={x: W5.astype(np.float32)})
    e = np.exp(xv.astype(np.float64) * tv)
    np.testing.assert_allclose(grad(x), e * tv * W5, rtol=1e-5)
    np.testing.assert_allclose(grad(t), e * xv * W5, rtol=1e-5)


def test_vec3_and_mat33_arrays():
    rng = np.random.default_rng(11)
    m0 = rng.uniform(-1, 1, (4, 3, 3))
    v0 = rng.uniform(-1, 1, (4, 3))
    w = np.array([0.5, -1.5, 1.0, 2.0])
    m = wp.array(m0, dtype=wp.mat33d, requires_grad=True)
    v = wp.array(v0, dtype=wp.vec3d, requires_grad=True)
    y = z64(4)
    tape = wp.Tape()
    with tape:
        wp.launch(quad_form, 4, inputs=[m, v, y])
    np.testing.assert_allclose(y.numpy(), np.einsum("ni,nij,nj->n", v0, m0, v0), rtol=1e-14)
    tape.backward(grads={y: w})
    # y = vᵀ M v: dy/dv = (M + Mᵀ) v, dy/dM = v vᵀ
    want_v = np.einsum("nij,nj->ni", m0 + m0.transpose(0, 2, 1), v0) * w[:, None]
    want_m = np.einsum("ni,nj->nij", v0, v0) * w[:, None, None]
    np.testing.assert_allclose(grad(v), want_v, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(grad(m), want_m, rtol=1e-13, atol=1e-15)


def test_vec3f_length():
    v0 = np.array([[0.3, -1.2, 0.8], [2.0, 0.5, -0.1], [-0.7, 0.7, 1.4]], dtype=np.float32)
    v = wp.array(v0, dtype=wp.vec3f, requires_grad=True)
    y = wp.zeros(3, dtype=wp.float32, requires_grad=True)
    w = np.array([1.0, -2.0, 0.5])
    tape = wp.Tape()
    with tape:
        wp.launch(vec_length32, 3, inputs=[v, y])
    tape.backward(grads={y: w.astype(np.float32)})
    v64 = v0.astype(np.float64)
    want = v64 / np.linalg.norm(v64, axis=1, keepdims=True) * w[:, None]
    np.testing.assert_allclose(grad(v), want, rtol=1e-5, atol=1e-7)


def test_two_dimensional_launch():
    rng = np.random.default_rng(5)
    x0 = rng.uniform(-1, 1, (3, 4))
    c0 = np.array([0.5, -1.0, 2.0, 1.5])
    w = rng.uniform(-1, 1, (3, 4))
    x = wp.array(x0, dtype=f64, requires_grad=True)
    c = a64(c0)
    y = wp.zeros((3, 4), dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(grid, (3, 4), inputs=[x, c, y])
    rows = np.arange(1, 4)[:, None]
    np.testing.assert_allclose(y.numpy(), x0 * x0 * c0 + np.sin(x0) * rows, rtol=1e-14)
    tape.backward(grads={y: w})
    np.testing.assert_allclose(grad(x), (2 * x0 * c0 + np.cos(x0) * rows) * w, rtol=1e-13)
    np.testing.assert_allclose(grad(c), np.sum(x0 * x0 * w, axis=0), rtol=1e-13)
    check_kernel(grid, (3, 4), [arr(x0), arr(c0), arr(np.zeros((3, 4)))], wrt=[0, 1],
                 outputs=[2])


@wp.kernel
def compact_squares(x: F64, counter: wp.array(dtype=wp.int32), out: F64):
    i = wp.tid()
    if x[i] > 0.0:
        slot = wp.atomic_add(counter, 0, 1)  # an integer slot counter: the adjoint replays it
        out[slot] = x[i] * x[i]


def test_slot_counter_compaction_replays_the_slots():
    """Stream compaction through an integer atomic counter: each kept x lands in the slot the
    counter handed out; the adjoint must route out's gradient back to the same x."""
    xv = np.array([0.5, -1.0, 2.0, 3.0, -0.25])
    x = wp.array(xv, dtype=wp.float64, requires_grad=True)
    counter = wp.zeros(1, dtype=wp.int32)
    out = wp.zeros(5, dtype=wp.float64, requires_grad=True)
    seed = np.array([1.0, 10.0, 100.0, 0.0, 0.0])
    tape = wp.Tape()
    with tape:
        wp.launch(compact_squares, 5, inputs=[x, counter, out])
    tape.backward(grads={out: seed})
    kept = np.flatnonzero(xv > 0)  # serial launch: slots in thread order
    want = np.zeros(5)
    want[kept] = 2 * xv[kept] * seed[: len(kept)]
    np.testing.assert_allclose(x.grad.numpy(), want)


# =============================================================================================
# structs made in funcs, arrays in (nested) structs,
# backward() seeded from .grad, record_func, record_scope_begin/end


@wp.struct
class Holder:
    a: F64
    k: f64


@wp.func
def hold(values: F64, k: f64):
    s = Holder()
    s.a = values
    s.k = k
    return s


@wp.kernel
def held_square(x: F64, y: F64):
    i = wp.tid()
    s = hold(x, f64(2.5))
    y[i] = s.a[i] * s.a[i] * s.k


@wp.kernel
def local_holder(x: F64, y: F64):
    i = wp.tid()
    s = Holder()  # fields start as zeros, the array as an unset array
    s.a = x
    y[i] = s.a[i] + s.k


def test_struct_with_an_array_member_made_in_a_func():
    x, y = a64(X5), z64(5)
    tape = wp.Tape()
    with tape:
        wp.launch(held_square, 5, inputs=[x, y])
    np.testing.assert_allclose(y.numpy(), 2.5 * X5 * X5, rtol=1e-15)
    tape.backward(grads={y: W5})
    np.testing.assert_allclose(grad(x), 5.0 * X5 * W5, rtol=1e-15)
    y2 = z64(5)
    wp.launch(local_holder, 5, inputs=[x, y2])
    np.testing.assert_array_equal(y2.numpy(), X5)


@wp.struct
class Inner:
    a: F64


@wp.struct
class Outer:
    inner: Inner
    b: F64
    unused: F64
    s: f64


@wp.kernel
def nested_product(o: Outer, y: F64):
    i = wp.tid()
    y[i] = o.inner.a[i] * o.b[i] * o.s


def _outer(a, b, unused):
    o = Outer()
    o.inner = Inner()
    o.inner.a, o.b, o.unused, o.s = a, b, unused, 2.0
    return o


def test_zero_reaches_arrays_in_structs_and_nested_structs():
    a, b, unused, y = a64(X5), a64(W5), a64(X5), z64(5)
    o = _outer(a, b, unused)
    tape = wp.Tape()
    with tape:
        wp.launch(nested_product, 5, inputs=[o, y])
    tape.backward(grads={y: np.ones(5)})
    np.testing.assert_allclose(grad(a), 2.0 * W5, rtol=1e-15)
    np.testing.assert_allclose(grad(b), 2.0 * X5, rtol=1e-15)
    unused.grad.fill_(4.0)  # in the struct, never read by the kernel: zero() still resets it
    mirror = tape.gradients[o]  # Warp: the struct's gradients as a struct of the same type
    assert mirror.inner.a is a.grad and mirror.b is b.grad and mirror.unused is unused.grad
    tape.zero()
    for g in (a.grad, b.grad, unused.grad):
        np.testing.assert_array_equal(g.numpy(), 0.0)


def test_nested_struct_array_overwritten_after_the_launch_keeps_its_values_for_backward():
    a, b, y = a64(X5), a64(W5), z64(5)
    tape = wp.Tape()
    with tape:
        wp.launch(nested_product, 5, inputs=[_outer(a, b, a64(X5)), y])
    a.fill_(100.0)  # outside the tape: copy-on-write keeps what the launch read
    tape.backward(grads={y: np.ones(5)})
    np.testing.assert_allclose(grad(b), 2.0 * X5, rtol=1e-15)


def test_backward_from_a_filled_grad_keeps_the_seed():
    x, y = a64(X5), z64(5)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 5, inputs=[x, y])
    y.grad.fill_(1.0)
    tape.backward()
    np.testing.assert_allclose(grad(x), 2 * X5, rtol=1e-15)
    np.testing.assert_array_equal(grad(y), 1.0)  # the store's adjoint did not eat the seed
    tape.backward()  # no zero(): the same gradient again
    np.testing.assert_allclose(grad(x), 4 * X5, rtol=1e-15)
    tape.zero()  # zero() clears the seed too, as in Warp
    np.testing.assert_array_equal(grad(y), 0.0)
    tape.backward()
    np.testing.assert_array_equal(grad(x), 0.0)


def test_backward_from_a_torch_tensor_seed():
    torch = pytest.importorskip("torch")
    x, y, z = a64(X5), z64(5), z64(5)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 5, inputs=[x, y])
        wp.launch(triple_into, 5, inputs=[y, z])
    seed = torch.tensor(W5, dtype=torch.float64)
    z.grad = wp.from_torch(seed)
    tape.backward()
    want = 6 * X5 * W5
    np.testing.assert_allclose(grad(x), want, rtol=1e-15)
    np.testing.assert_array_equal(seed.numpy(), W5)  # the tensor keeps its values
    np.testing.assert_array_equal(grad(y), 0.0)  # intermediate gradients are consumed
    tape.backward()
    np.testing.assert_allclose(grad(x), 2 * want, rtol=1e-15)
    np.testing.assert_array_equal(seed.numpy(), W5)


def test_backward_from_grad_of_an_array_updated_in_place():
    # the seed is dL/d(final x); x's own .grad then holds dL/d(initial x), as with grads=
    x, t = a64(X5), a64(W5)
    tape = wp.Tape()
    with tape:
        wp.launch(sin_inplace, 5, inputs=[x, t])
    seed = np.array([1.0, 0.5, 2.0, -1.0, 0.25])
    x.grad.assign(seed)
    tape.backward()
    np.testing.assert_allclose(grad(x), np.cos(X5) * W5 * seed, rtol=1e-14)
    np.testing.assert_allclose(grad(t), np.sin(X5) * seed, rtol=1e-14)


def test_backward_from_grad_of_an_atomic_loss():
    x, loss = a64(X5), z64(1)
    tape = wp.Tape()
    with tape:
        wp.launch(sum_squares, 5, inputs=[x, loss])
    loss.grad.fill_(0.5)
    tape.backward()
    np.testing.assert_allclose(grad(x), X5, rtol=1e-15)
    np.testing.assert_array_equal(loss.grad.numpy(), [0.5])


def test_backward_from_grad_set_after_an_array_copy():
    # the copy's backward step reads z.grad when it runs, not the .grad z had when recorded
    x, z = a64(X5), z64(5)
    tape = wp.Tape()
    with tape:
        wp.copy(z, x)
    z.grad = a64(W5, requires_grad=False)
    tape.backward()
    np.testing.assert_array_equal(grad(x), W5)


def test_record_func_runs_in_recorded_order_and_zero_reaches_its_arrays():
    x, y, z = a64(X5), z64(5), z64(5)
    order = []

    def backward_double():  # y -> z as z = 2 y, written by hand
        order.append("func")
        y.grad.assign(y.grad.numpy() + 2.0 * z.grad.numpy())

    tape = wp.Tape()
    with tape:
        wp.launch(square, 5, inputs=[x, y])
        z.assign(y.numpy() * 2.0)  # not differentiable by itself (numpy values)
        tape.record_func(backward_double, [y, z])
    tape.backward(grads={z: W5})
    assert order == ["func"]
    np.testing.assert_allclose(grad(x), 4 * X5 * W5, rtol=1e-15)
    tape.zero()
    for g in (x.grad, y.grad, z.grad):
        np.testing.assert_array_equal(g.numpy(), 0.0)


def test_record_func_needs_arrays_with_gradients():
    tape = wp.Tape()
    for bad in (wp.zeros(3, dtype=f64), np.zeros(3)):
        with pytest.raises(RuntimeError, match="requires_grad"):
            tape.record_func(lambda: None, [bad])
    with pytest.raises(GradloomError, match="callable"):
        tape.record_func(None, [])
    assert tape.launches == []


def test_record_scopes_as_warp_records_them():
    tape = wp.Tape()
    with pytest.raises(RuntimeError, match="ended tape scope, but scope not present"):
        tape.record_scope_end()
    x, y = a64(X5), z64(5)
    with tape:
        tape.record_scope_begin("outer", {"step": 3})
        tape.record_scope_begin("empty")
        tape.record_scope_end()  # nothing recorded inside: dropped
        tape.record_scope_begin("inner")
        wp.launch(square, 5, inputs=[x, y])
        tape.record_scope_end()
        tape.record_scope_end()
    assert tape.scopes == [(0, "outer", {"step": 3}), (0, "inner", {}), (1, None, None),
                           (1, None, None)]
    with pytest.raises(RuntimeError, match="scope not present"):
        tape.record_scope_end()
    tape.record_scope_begin("kept")
    tape.record_scope_end(remove_scope_if_empty=False)
    assert tape.scopes[-2:] == [(1, "kept", {}), (1, None, None)]
    tape.backward(grads={y: W5})  # scopes change nothing in backward
    np.testing.assert_allclose(grad(x), 2 * X5 * W5, rtol=1e-15)
    tape.reset()
    assert tape.scopes == [] and tape.launches == []


@wp.kernel
def _double_into(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


def test_a_replaced_gradient_receives_the_next_backward() -> None:
    """Launches pack an array's words once per gradient (runtime/launch/packing.py): a gradient set
    with `a.grad = ...` or `requires_grad` after a launch is the one the next adjoint fills."""
    x = wp.array(np.arange(4.0), dtype=float, requires_grad=True)
    y = wp.zeros(4, dtype=float, requires_grad=True)
    seed = wp.array(np.ones(4), dtype=float)
    for step in range(3):
        tape = wp.Tape()
        with tape:
            wp.launch(_double_into, 4, inputs=[x, y])
        first = x.grad
        if step == 1:
            x.grad = wp.zeros(4, dtype=float)
        elif step == 2:
            x.requires_grad = False
            x.requires_grad = True
        tape.backward(grads={y: seed})
        np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0))
        if step:
            assert x.grad is not first and not first.numpy().any()
        x.grad.zero_()
