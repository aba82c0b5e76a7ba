"""Relaunching a kernel with the arrays of a recent launch (runtime/launch/packing.py `Packer.fill`,
kernels of packing.RECALL_ARRAYS arrays or more): the packed bytes are reused, and the results,
errors and gradients are those of a fresh pack."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import gradloom as wp
from gradloom.errors import LaunchError
from gradloom.runtime.launch import packing


@wp.kernel
def affine(a: float, n: int, flag: bool, h: wp.float16, x: wp.array(dtype=float),
           y: wp.array(dtype=float), w: wp.array(dtype=float)):
    i = wp.tid()
    extra = float(0.0)
    if flag:
        extra = 100.0
    y[i] = x[i] * a * w[0] + float(n) + extra + float(h)


@wp.kernel
def copy_scaled(x: wp.array(dtype=float), y: wp.array(dtype=float), s: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = s[0] * x[i]


@wp.kernel
def copy_ints(x: wp.array(dtype=wp.int32), y: wp.array(dtype=wp.int32),
              z: wp.array(dtype=wp.int32)):
    i = wp.tid()
    y[i] = x[i] + z[0]


@wp.kernel
def square_sum(x: wp.array(dtype=float), out: wp.array(dtype=float),
               w: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, w[0] * x[i] * x[i])

ONE = wp.array(np.ones(1, np.float32))
TWO = wp.array(np.full(1, 2.0, np.float32))


def test_numbers_change_between_launches_of_the_same_arrays() -> None:
    xs = np.linspace(-1.0, 1.0, 37, dtype=np.float32)
    x, y = wp.array(xs), wp.zeros(37, dtype=float)
    for a, n, flag, h in [(1.5, 2, False, 0.5), (-3.0, 7, True, 0.25), (0.0, -4, False, 8.0),
                          (2.5, 2, True, -1.0)]:
        wp.launch(affine, 37, inputs=[a, n, flag, h, x, y, ONE])
        expect = xs.astype(np.float64) * a + n + (100.0 if flag else 0.0) + h
        np.testing.assert_allclose(y.numpy(), expect, rtol=1e-6, atol=1e-5)


def test_a_relaunch_packs_only_its_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = wp.zeros(4, dtype=float), wp.zeros(4, dtype=float)
    wp.launch(affine, 4, inputs=[1.0, 1, False, 0.0, x, y, ONE])
    wp.launch(affine, 4, inputs=[1.0, 1, False, 0.0, x, y, ONE])  # the arrays' words now known
    converted = []
    original = packing.Packer.values
    monkeypatch.setattr(packing.Packer, "values",
                        lambda self, args: converted.append(1) or original(self, args))
    wp.launch(affine, 4, inputs=[3.0, 5, True, 2.0, x, y, ONE])
    assert converted == []
    np.testing.assert_allclose(y.numpy(), [107.0] * 4)
    wp.launch(affine, 4, inputs=[3.0, 5, True, 2.0, y, x, ONE])  # other arrays: converted afresh
    assert converted == [1]
    np.testing.assert_allclose(x.numpy(), [3 * 107.0 + 107.0] * 4)


def test_alternating_states_are_recalled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Warp code swaps two states every substep: both argument sets stay recalled."""
    a = wp.array(np.arange(6, dtype=np.float32))
    b = wp.zeros(6, dtype=float)
    for src, dst in [(a, b), (b, a)] * 2:  # the first round packs the arrays' words
        wp.launch(copy_scaled, 6, inputs=[src, dst, TWO])
    converted = []
    original = packing.Packer.values
    monkeypatch.setattr(packing.Packer, "values",
                        lambda self, args: converted.append(1) or original(self, args))
    for _ in range(3):
        for src, dst in [(a, b), (b, a)]:
            wp.launch(copy_scaled, 6, inputs=[src, dst, TWO])
    assert converted == []
    np.testing.assert_array_equal(a.numpy(), np.arange(6) * 4.0 ** 5)  # five round trips


@pytest.mark.parametrize("position,value", [(1, 2.5), (2, "yes"), (0, "1.0"), (3, None)])
def test_a_wrong_number_on_a_relaunch_is_refused_as_on_a_first_launch(position: int,
                                                                        value: object) -> None:
    args: list[object] = [1.0, 1, False, 0.5, wp.zeros(3, dtype=float), wp.zeros(3, dtype=float),
                          ONE]
    bad = list(args)
    bad[position] = value
    with pytest.raises(Exception) as first:
        wp.launch(affine, 3, inputs=bad)
    wp.launch(affine, 3, inputs=args)
    wp.launch(affine, 3, inputs=args)
    with pytest.raises(Exception) as again:
        wp.launch(affine, 3, inputs=bad)
    assert type(again.value) is type(first.value)
    assert str(again.value) == str(first.value)


def test_a_view_of_another_dtype_is_refused_after_its_array_was_launched() -> None:
    x, y = wp.array(np.arange(8, dtype=np.float32)), wp.zeros(8, dtype=float)
    wp.launch(copy_scaled, 8, inputs=[x, y, TWO])
    wp.launch(copy_scaled, 8, inputs=[x, y, TWO])
    as_ints = x.view(wp.int32)  # the same memory, shape and strides: equal launch words
    wp.launch(copy_ints, 8, inputs=[as_ints, wp.zeros(8, dtype=wp.int32),
                                    wp.zeros(1, dtype=wp.int32)])
    with pytest.raises(LaunchError, match="argument 'x'"):
        wp.launch(copy_scaled, 8, inputs=[as_ints, y, TWO])


def test_each_launch_writes_the_arrays_it_was_given() -> None:
    pairs = [(wp.array(np.full(5, float(k), np.float32)), wp.zeros(5, dtype=float))
             for k in range(3)]
    for x, y in [*pairs, pairs[0], pairs[2], pairs[2], pairs[1]]:
        y.zero_()
        wp.launch(copy_scaled, 5, inputs=[x, y, TWO])
        np.testing.assert_array_equal(y.numpy(), 2.0 * x.numpy())
    for _ in range(5):  # arrays freed and new ones made, perhaps at the same addresses
        x = wp.array(np.random.default_rng(1).random(5, dtype=np.float32))
        y = wp.zeros(5, dtype=float)
        wp.launch(copy_scaled, 5, inputs=[x, y, TWO])
        np.testing.assert_array_equal(y.numpy(), 2.0 * x.numpy())


def test_a_relaunched_adjoint_adds_into_a_replaced_gradient() -> None:
    """`adjoint=True` without adj_inputs uses each array's own .grad: after `x.grad = ...` the
    next relaunch must add into the new gradient, not the old one."""
    xs = np.array([1.0, -2.0, 3.0], np.float32)
    x = wp.array(xs, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    out.grad.fill_(1.0)
    for _ in range(2):
        wp.launch(square_sum, 3, inputs=[x, out, ONE], adjoint=True)
    old = x.grad
    np.testing.assert_allclose(old.numpy(), 2 * 2.0 * xs)
    x.grad = wp.zeros(3, dtype=float)
    wp.launch(square_sum, 3, inputs=[x, out, ONE], adjoint=True)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * xs)  # d(sum x²)/dx
    np.testing.assert_allclose(old.numpy(), 2 * 2.0 * xs)  # untouched


def test_the_last_launch_keeps_no_array_alive() -> None:
    x, y = wp.zeros(1000, dtype=float), wp.zeros(1000, dtype=float)
    for _ in range(2):
        wp.launch(copy_scaled, 1000, inputs=[x, y, TWO])
    refs = [weakref.ref(x), weakref.ref(y)]
    del x, y
    gc.collect()
    assert [r() for r in refs] == [None, None]


def test_threads_launching_one_kernel_each_get_their_own_arrays() -> None:
    """Python threads launching the same kernel, each cycling through more argument sets of
    its own than the packer remembers: every launch writes the arrays it was given."""
    errors: list[str] = []

    def work(offset: int) -> None:
        sets = [(wp.array(np.full(64, float(10 * offset + k), np.float32)),
                 wp.zeros(64, dtype=float)) for k in range(packing.RECALLED + 3)]
        for step in range(300):
            x, y = sets[step % len(sets)]
            y.zero_()
            wp.launch(copy_scaled, 64, inputs=[x, y, TWO])
            if not np.array_equal(y.numpy(), 2.0 * x.numpy()):
                errors.append(f"thread {offset}, set {step % len(sets)}: {y.numpy()[:2]}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@wp.kernel
def bump(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + 1.0


def test_a_kernel_of_one_array_recalls_its_block(monkeypatch: pytest.MonkeyPatch) -> None:
    a = wp.zeros(4, dtype=float)
    for _ in range(2):  # the second launch finds the array's words
        wp.launch(bump, 4, inputs=[a])
    converted = []
    original = packing.Packer.values
    monkeypatch.setattr(packing.Packer, "values",
                        lambda self, args: converted.append(1) or original(self, args))
    wp.launch(bump, 4, inputs=[a])
    assert converted == []
    np.testing.assert_array_equal(a.numpy(), [3.0] * 4)


def test_a_recalled_block_runs_the_grid_it_is_launched_over() -> None:
    """The recalled block holds the header too: the same arrays over another grid run it."""
    a = wp.zeros(6, dtype=float)
    expect = np.zeros(6, np.float32)
    for dim in [6, 6, 2, 6, 4, 2, 0, 6, (2,), 5]:
        wp.launch(bump, dim, inputs=[a])
        expect[:dim[0] if isinstance(dim, tuple) else dim] += 1.0
        np.testing.assert_array_equal(a.numpy(), expect)
