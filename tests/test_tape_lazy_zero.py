"""Tape.zero() defers zeroing large host gradients (runtime/array/lazy_zero.py): every way of
reading a deferred gradient sees zeros, and gradients after a deferred zero are the ones an
eager zero gives (checked against the analytic derivative, bit for bit)."""

import copy
import ctypes

import numpy as np
import pytest

import gradloom as wp
from gradloom.runtime.array import lazy_zero

N = (lazy_zero.MIN_BYTES // 4) + 5  # float32 elements: just above the deferral threshold
A = 2.0


@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def double_into(src: wp.array(dtype=float), dst: wp.array(dtype=float)):
    i = wp.tid()
    dst[i] = 2.0 * src[i]


def _arrays(seed: int = 0) -> tuple[wp.array, wp.array, wp.array]:
    rng = np.random.default_rng(seed)
    x = wp.array(rng.random(N, dtype=np.float32), requires_grad=True)
    y = wp.array(rng.random(N, dtype=np.float32), requires_grad=True)
    s = wp.array(rng.random(N, dtype=np.float32))
    return x, y, s


def _backward(x: wp.array, y: wp.array, s: wp.array) -> wp.Tape:
    tape = wp.Tape()
    with tape:
        wp.launch(saxpy, N, inputs=[A, x, y])
    tape.backward(grads={y: s})
    return tape


def _zeroed_pending() -> tuple[wp.array, wp.array, wp.array, wp.Tape]:
    x, y, s = _arrays()
    tape = _backward(x, y, s)
    tape.zero()
    assert lazy_zero.is_pending(x.grad) and lazy_zero.is_pending(y.grad)
    return x, y, s, tape


def test_gradients_after_deferred_zero_are_exact() -> None:
    x, y, s = _arrays()
    for _ in range(3):  # x.grad and y.grad deferred at every zero; seeds overwrite y.grad
        tape = _backward(x, y, s)
        # d(y_out)/dx = a, d(y_out)/dy = 1: exact in float32 (a = 2)
        assert np.array_equal(x.grad.numpy(), A * s.numpy())
        assert np.array_equal(y.grad.numpy(), s.numpy())
        tape.zero()
        assert lazy_zero.is_pending(x.grad)


def test_accumulation_across_backward_calls_starts_from_zero() -> None:
    x, y, s, _ = _zeroed_pending()
    tape = wp.Tape()
    with tape:
        wp.launch(saxpy, N, inputs=[A, x, y])
    tape.backward(grads={y: s})
    tape.backward(grads={y: s})  # leaf gradients accumulate: x.grad = 2 a s
    assert np.array_equal(x.grad.numpy(), 2 * A * s.numpy())


@pytest.mark.parametrize("read", ["numpy", "asarray", "view", "list_item", "ptr", "copy",
                                  "launch", "str", "assign_from"])
def test_every_read_of_a_deferred_gradient_sees_zeros(read: str) -> None:
    x, _, _, _ = _zeroed_pending()
    g = x.grad
    if read == "numpy":
        got = g.numpy()
    elif read == "asarray":
        got = np.asarray(g)
    elif read == "view":
        got = g[3:].numpy()
    elif read == "list_item":
        got = np.array([g.numpy()[N - 1]])
    elif read == "ptr":
        got = np.ctypeslib.as_array(ctypes.cast(g.ptr, ctypes.POINTER(ctypes.c_float)),
                                    shape=(N,)).copy()
    elif read == "copy":
        got = wp.clone(g).numpy()
    elif read == "launch":  # the gradient array itself as a kernel's input
        out = wp.zeros(N, dtype=float)
        wp.launch(double_into, N, inputs=[g, out])
        got = out.numpy()
    elif read == "str":
        assert "1." not in str(g)  # printing reads it; float32 random seeds are never 1.0
        got = g.numpy()
    else:
        other = wp.zeros(N, dtype=float)
        other.assign(g)
        got = other.numpy()
    assert not lazy_zero.is_pending(x.grad)
    assert not got.any()


def test_a_view_held_before_zero_sees_zeros() -> None:
    x, y, s = _arrays()
    tape = _backward(x, y, s)
    held = x.grad.numpy()  # another holder of the memory: zeroed at once
    tape.zero()
    assert not lazy_zero.is_pending(x.grad)
    assert not held.any()


def test_a_gradient_view_made_before_zero_sees_zeros() -> None:
    x, y, s = _arrays()
    tape = _backward(x, y, s)
    part = x[10:]  # its gradient is a view of x.grad's memory
    tape.zero()
    assert not lazy_zero.is_pending(x.grad)
    assert not part.grad.numpy().any()


def test_explicit_adjoint_launch_reads_zeroed_gradients() -> None:
    x, y, s, _ = _zeroed_pending()
    y.grad.assign(s)  # the seed, by hand (overwrites every element: no zeroing)
    wp.launch(saxpy, N, inputs=[A, x, y], adjoint=True, adj_inputs=[None, None, None])
    assert np.array_equal(x.grad.numpy(), A * s.numpy())


def test_seeding_a_gradient_with_itself_after_zero() -> None:
    x, y, _, _ = _zeroed_pending()
    tape = wp.Tape()
    with tape:
        wp.launch(saxpy, N, inputs=[A, x, y])
    tape.backward(grads={y: y.grad})  # the seed is the (zeroed) gradient itself
    assert not x.grad.numpy().any()


def test_a_copy_of_a_deferred_array_shares_the_zeroing() -> None:
    x, _, _, _ = _zeroed_pending()
    twin = copy.copy(x.grad)
    assert not twin.numpy().any()
    x.grad.numpy()[:] = 3.0  # settled once: the original must not be zeroed again
    assert (x.grad.numpy() == 3.0).all() and (twin.numpy() == 3.0).all()


def test_zero_inside_a_recording_tape_is_eager() -> None:
    x, y, s = _arrays()
    tape = _backward(x, y, s)
    with wp.Tape():
        tape.zero()
    assert not lazy_zero.is_pending(x.grad)
    assert not x.grad.numpy().any()


def test_small_gradients_are_zeroed_at_once() -> None:
    x = wp.array(np.ones(8, dtype=np.float32), requires_grad=True)
    y = wp.zeros(8, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(double_into, 8, inputs=[x, y])
    tape.backward(grads={y: np.ones(8, dtype=np.float32)})
    tape.zero()
    assert not lazy_zero.is_pending(x.grad)
    assert not x.grad.numpy().any()


# ---- adjoints that zero deferred gradients themselves (passes/fresh_gradients.py) -----------


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), g: wp.vec3, dt: float):
    i = wp.tid()
    x[i] = x[i] + v[i] * dt
    v[i] = v[i] + g * dt


@wp.kernel
def curve(x: wp.array(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_add(loss, 0, wp.sin(x[i]) * x[i] * x[i])


@wp.kernel
def neighbour(x: wp.array(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    j = wp.min(i + 1, x.shape[0] - 1)
    wp.atomic_add(loss, 0, x[i] * x[j])


def _fills(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Bytes zeroed by settling deferred gradients, call by call."""
    calls: list[int] = []
    fill = lazy_zero.fill

    def counted(storage: np.ndarray, value: float) -> None:
        calls.append(storage.nbytes)
        fill(storage, value)

    monkeypatch.setattr(lazy_zero, "fill", counted)
    return calls


def test_fresh_variant_is_chosen_only_for_own_element_gradients() -> None:
    assert saxpy.fresh_variant(frozenset({1, 2}))[1] == {1, 2}
    assert integrate.fresh_variant(frozenset({0, 1}))[1] == {0, 1}
    assert neighbour.fresh_variant(frozenset({0}))[0] == "adjoint"  # x.grad at i and i + 1


def test_unseeded_vector_gradient_is_zeroed_by_the_adjoint(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    n, dt = N // 3 + 1, np.float32(0.125)
    rng = np.random.default_rng(1)
    x = wp.array(rng.random((n, 3), dtype=np.float32), dtype=wp.vec3, requires_grad=True)
    v = wp.array(rng.random((n, 3), dtype=np.float32), dtype=wp.vec3, requires_grad=True)
    seed = rng.random((n, 3), dtype=np.float32)
    calls = _fills(monkeypatch)
    got = []
    for _ in range(2):
        tape = wp.Tape()
        with tape:
            wp.launch(integrate, n, inputs=[x, v, wp.vec3(0.0, -9.8, 0.0), float(dt)])
        tape.backward(grads={x: seed})  # v's output gets no seed: its pending zero is read
        got.append(v.grad.numpy().copy())
        assert np.array_equal(x.grad.numpy(), seed)
        tape.zero()
    # the second pass ran with v.grad deferred (zeroed inside the adjoint) and x.grad
    # deferred (overwritten by its seed): nothing was filled
    assert lazy_zero.is_pending(v.grad) and not calls
    # d(x_out)/dv = dt: float32 products, the same bits as numpy's
    assert np.array_equal(got[0], dt * seed) and np.array_equal(got[1], got[0])


def _loss_gradient(kernel: wp.Kernel, x0: np.ndarray, defer: bool) -> np.ndarray:
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, len(x0), inputs=[x, loss])
    tape.backward(loss=loss)
    held = None if defer else x.grad.numpy()  # a view held: zero() zeroes at once
    tape.zero()
    assert lazy_zero.is_pending(x.grad) == defer
    del held
    tape.backward(loss=loss)
    return x.grad.numpy().copy()


@pytest.mark.parametrize("kernel", [curve, neighbour], ids=["own", "neighbour"])
def test_gradient_after_deferred_zero_matches_fd_and_eager(kernel: wp.Kernel) -> None:
    n = lazy_zero.MIN_BYTES // 8 + 3
    x0 = np.random.default_rng(2).uniform(-2.0, 2.0, n)
    lazy = _loss_gradient(kernel, x0, defer=True)
    eager = _loss_gradient(kernel, x0, defer=False)
    assert np.array_equal(lazy, eager)  # bit for bit
    # central differences in float64 along a random direction
    d = np.random.default_rng(3).standard_normal(n)
    eps = 1e-6

    def loss(x: np.ndarray) -> float:
        if kernel is curve:
            return float(np.sum(np.sin(x) * x * x))
        j = np.minimum(np.arange(n) + 1, n - 1)
        return float(np.sum(x * x[j]))

    fd = (loss(x0 + eps * d) - loss(x0 - eps * d)) / (2 * eps)
    assert abs(fd - float(lazy @ d)) <= 1e-6 * max(1.0, abs(fd))


# ---- seeds copied into gradients when first used, or read where they are -------------------


def _copies(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Bytes copied from seeds into waiting gradients, call by call."""
    calls: list[int] = []
    copy_into = lazy_zero.copy_into

    def counted(dst: np.ndarray, src: np.ndarray) -> None:
        calls.append(dst.nbytes)
        copy_into(dst, src)

    monkeypatch.setattr(lazy_zero, "copy_into", counted)
    return calls


def test_training_loop_neither_zeroes_nor_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y, s = _arrays()
    expected = A * s.numpy()
    _backward(x, y, s).zero()
    fills, copies = _fills(monkeypatch), _copies(monkeypatch)
    for _ in range(3):
        tape = _backward(x, y, s)  # y's seed read where it is; x.grad zeroed by the adjoint
        assert np.array_equal(x.grad.numpy(), expected)
        tape.zero()
    assert not fills and not copies
    assert np.array_equal(y.grad.numpy(), np.zeros(N, np.float32))
    assert np.array_equal(s.numpy(), _arrays()[2].numpy())  # the seed is never written


@pytest.mark.parametrize("change", ["assign", "numpy", "fill", "launch"])
def test_a_seed_changed_after_backward_leaves_the_gradient_a_copy(change: str) -> None:
    x, y, s = _arrays()
    before = s.numpy().copy()
    _backward(x, y, s)
    if change == "assign":
        s.assign(np.zeros(N, np.float32))
    elif change == "numpy":
        s.numpy()[:] = 0.0
    elif change == "fill":
        s.fill_(3.0)
    else:
        wp.launch(double_into, N, inputs=[x, s])
    assert np.array_equal(y.grad.numpy(), before)
    assert np.array_equal(x.grad.numpy(), A * before)


def test_a_seed_held_by_a_numpy_view_is_copied_at_once() -> None:
    x, y, s = _arrays()
    view = s.numpy()
    tape = wp.Tape()
    with tape:
        wp.launch(saxpy, N, inputs=[A, x, y])
    tape.backward(grads={y: s})
    assert lazy_zero.seed_of(y.grad) is None
    view[:] = 0.0
    assert not np.array_equal(y.grad.numpy(), view)


def test_a_seed_the_adjoint_writes_is_copied_before(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y, _ = _arrays()
    start = np.random.default_rng(4).random(N, dtype=np.float32)
    x.grad.assign(start)
    tape = wp.Tape()
    with tape:
        wp.launch(saxpy, N, inputs=[A, x, y])
    tape.backward(grads={y: x.grad})  # the seed is x.grad, which the adjoint adds into
    assert np.array_equal(y.grad.numpy(), start)
    assert np.array_equal(x.grad.numpy(), start + A * start)


def test_vector_seeds_read_in_place_and_copied_by_the_adjoint(
        monkeypatch: pytest.MonkeyPatch) -> None:
    n, dt = N // 3 + 1, np.float32(0.25)
    rng = np.random.default_rng(5)
    x = wp.array(rng.random((n, 3), dtype=np.float32), dtype=wp.vec3, requires_grad=True)
    v = wp.array(rng.random((n, 3), dtype=np.float32), dtype=wp.vec3, requires_grad=True)
    seeds = rng.random((2, n, 3), dtype=np.float32)
    seeds[:, 0] = -0.0  # signed zeros: a copy keeps them, 0 + (-0) would not
    sx, sv = (wp.array(a, dtype=wp.vec3) for a in seeds)
    expected = seeds[1] + dt * seeds[0]  # d(v_out)/dv = 1, d(x_out)/dv = dt
    copies, fills = _copies(monkeypatch), _fills(monkeypatch)
    for _ in range(2):
        tape = wp.Tape()
        with tape:
            wp.launch(integrate, n, inputs=[x, v, wp.vec3(0.0, -9.8, 0.0), float(dt)])
        tape.backward(grads={x: sx, v: sv})
        got = v.grad.numpy()
        # x's seed is only read (in place); v's, which the adjoint adds into, is copied in by
        # each thread (the fresh variant): no separate copy, no zeroing
        assert copies == [] and fills == []
        assert np.array_equal(got, expected) and np.array_equal(np.signbit(got),
                                                                np.signbit(expected))
        assert np.array_equal(x.grad.numpy(), seeds[0])  # d(x_out)/dx = 1 (copied now)
        assert copies == [x.grad.numpy().nbytes]
        tape.zero()
        copies.clear()


@wp.kernel
def bend(x: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x[i] = wp.sin(x[i]) * x[i]


def test_a_seed_the_adjoint_needs_contents_beside_is_copied_first() -> None:
    """x[i] = sin(x[i]) x[i] in place: the adjoint reads x's old contents through x's data, so
    no variant may pass the seed there; the seed is copied, and the gradient is exact."""
    n = lazy_zero.MIN_BYTES // 8 + 1
    rng = np.random.default_rng(6)
    x0 = rng.uniform(-2.0, 2.0, n)
    seed = wp.array(rng.standard_normal(n), dtype=wp.float64)
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    for _ in range(2):
        x.assign(x0)
        tape = wp.Tape()
        with tape:
            wp.launch(bend, n, inputs=[x])
        tape.backward(grads={x: seed})
        s = seed.numpy()
        # d/dx (sin(x) x) = cos(x) x + sin(x)
        assert np.allclose(x.grad.numpy(), s * (np.cos(x0) * x0 + np.sin(x0)), rtol=1e-12,
                           atol=1e-12)
        tape.zero()
