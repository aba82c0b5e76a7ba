"""Atomic builtins against numpy: counters and histograms, the old values they return, bitwise
atomics, exchange and compare-and-swap semantics, and what may be differentiated.

Checks do not depend on the order threads run in (launches may become multi-threaded): returned
old values are compared as sets. Runs on the backend chosen by GL_TEST_BACKEND; validated
against warp-lang 1.19 on the CPU except where marked gradloom-only.
"""

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE, wp

gradloom_only = pytest.mark.skipif(BACKEND != "gradloom", reason="gradloom behaviour")
N = 64


def _run(kernel, dim, *inputs):
    wp.launch(kernel, dim=dim, inputs=list(inputs), device=DEVICE)


def _arr(a, dtype, grad=False):
    return wp.array(a, dtype=dtype, device=DEVICE, requires_grad=grad)


@wp.kernel
def count_and_bin(bins: wp.array(dtype=wp.int32), counter: wp.array(dtype=wp.int32),
                  hist: wp.array(dtype=wp.int32), slots: wp.array(dtype=wp.int32)):
    i = wp.tid()
    slots[i] = wp.atomic_add(counter, 0, 1)
    wp.atomic_add(hist, bins[i], 1)
    wp.atomic_sub(counter, 1, 2)


def test_counter_returns_distinct_slots_and_histogram_matches_numpy():
    bins = np.random.default_rng(0).integers(0, 7, N).astype(np.int32)
    counter, hist = wp.zeros(2, dtype=wp.int32), wp.zeros(7, dtype=wp.int32)
    slots = wp.zeros(N, dtype=wp.int32)
    _run(count_and_bin, N, _arr(bins, wp.int32), counter, hist, slots)
    np.testing.assert_array_equal(counter.numpy(), [N, -2 * N])
    np.testing.assert_array_equal(np.sort(slots.numpy()), np.arange(N))
    np.testing.assert_array_equal(hist.numpy(), np.bincount(bins, minlength=7))


@wp.kernel
def float_reductions(x: wp.array(dtype=wp.float64), acc: wp.array(dtype=wp.float64),
                     grid: wp.array2d(dtype=wp.float64), vsum: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    wp.atomic_add(acc, 0, x[i])
    wp.atomic_min(acc, 1, x[i])
    wp.atomic_max(acc, 2, x[i])
    wp.atomic_sub(acc, 3, x[i] * x[i])
    wp.atomic_add(grid, i % 3, i % 2, x[i])
    wp.atomic_add(vsum, 0, wp.vec3d(x[i], wp.float64(1.0), -x[i]))


def test_float_add_min_max_match_numpy():
    x = np.random.default_rng(1).uniform(-3, 3, N)
    acc = _arr(np.array([0.0, np.inf, -np.inf, 0.0]), wp.float64)
    grid, vsum = wp.zeros((3, 2), dtype=wp.float64), wp.zeros(1, dtype=wp.vec3d)
    _run(float_reductions, N, _arr(x, wp.float64), acc, grid, vsum)
    np.testing.assert_allclose(acc.numpy(), [x.sum(), x.min(), x.max(), -(x * x).sum()],
                               rtol=1e-12)
    want = np.zeros((3, 2))
    np.add.at(want, (np.arange(N) % 3, np.arange(N) % 2), x)
    np.testing.assert_allclose(grid.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(vsum.numpy()[0], [x.sum(), N, -x.sum()], rtol=1e-12)


@wp.kernel
def bitwise(bits: wp.array(dtype=wp.uint32), olds: wp.array(dtype=wp.uint32)):
    i = wp.tid()
    wp.atomic_or(bits, 0, wp.uint32(1) << wp.uint32(i % 32))
    wp.atomic_and(bits, 1, ~(wp.uint32(1) << wp.uint32(i % 32)))
    wp.atomic_xor(bits, 2, wp.uint32(i * 2654435761))
    olds[i] = wp.atomic_or(bits, 3 + i, wp.uint32(0xF0))


def test_bitwise_atomics_match_numpy_reductions():
    n = 40
    start = np.array([0, 0xFFFFFFFF, 0x12345678, *range(n)], dtype=np.uint32)
    bits, olds = _arr(start, wp.uint32), wp.zeros(n, dtype=wp.uint32)
    _run(bitwise, n, bits, olds)
    i = np.arange(n, dtype=np.uint64)
    ones = np.bitwise_or.reduce((1 << (i % 32)).astype(np.uint32))
    xored = np.bitwise_xor.reduce(((i * 2654435761) % 2**32).astype(np.uint32))
    got = bits.numpy()
    assert got[0] == ones
    assert got[1] == 0xFFFFFFFF & ~ones
    assert got[2] == 0x12345678 ^ xored
    np.testing.assert_array_equal(got[3:], np.arange(n, dtype=np.uint32) | 0xF0)
    np.testing.assert_array_equal(olds.numpy(), np.arange(n))  # the values before the update


@wp.kernel
def exchange(slot: wp.array(dtype=wp.int32), olds: wp.array(dtype=wp.int32),
             f: wp.array(dtype=wp.float32), fold: wp.array(dtype=wp.float32)):
    i = wp.tid()
    olds[i] = wp.atomic_exch(slot, 0, i)
    fold[i] = wp.atomic_exch(f, 0, float(i) * 0.5)


def test_exchange_hands_each_value_on_exactly_once():
    slot, olds = _arr(np.array([-1], dtype=np.int32), wp.int32), wp.zeros(N, dtype=wp.int32)
    f, fold = _arr(np.array([-1.0], dtype=np.float32), wp.float32), wp.zeros(N, dtype=wp.float32)
    _run(exchange, N, slot, olds, f, fold)
    # every value stored is either still there or was returned to the next thread
    chain = np.sort(np.concatenate([olds.numpy(), slot.numpy()]))
    np.testing.assert_array_equal(chain, np.arange(-1, N))
    fchain = np.sort(np.concatenate([fold.numpy(), f.numpy()]))
    np.testing.assert_array_equal(fchain, np.concatenate([[-1.0], np.arange(N) * 0.5]))


@wp.kernel
def claim(owner: wp.array(dtype=wp.int32), olds: wp.array(dtype=wp.int32)):
    i = wp.tid()
    olds[i] = wp.atomic_cas(owner, i % 5, -1, i)


def test_cas_lets_exactly_one_thread_claim_each_slot():
    owner, olds = _arr(np.full(5, -1, dtype=np.int32), wp.int32), wp.zeros(N, dtype=wp.int32)
    _run(claim, N, owner, olds)
    olds_np, owner_np = olds.numpy(), owner.numpy()
    for s in range(5):
        mine = np.flatnonzero(np.arange(N) % 5 == s)
        winners = mine[olds_np[mine] == -1]
        assert winners.tolist() == [owner_np[s]]  # one winner, and it is the owner
        # the losers saw the winner's id
        assert set(olds_np[mine].tolist()) == {-1, int(owner_np[s])}


@wp.kernel
def cas_values(f: wp.array(dtype=wp.float32), v: wp.array(dtype=wp.vec3),
               olds: wp.array(dtype=wp.float32), vold: wp.array(dtype=wp.vec3)):
    olds[0] = wp.atomic_cas(f, 0, 2.0, 7.0)  # matches: swapped
    olds[1] = wp.atomic_cas(f, 1, 2.0, 7.0)  # no match: unchanged
    vold[0] = wp.atomic_cas(v, 0, wp.vec3(1.0, 2.0, 3.0), wp.vec3(4.0, 5.0, 6.0))
    vold[1] = wp.atomic_cas(v, 1, wp.vec3(1.0, 2.0, 3.0), wp.vec3(4.0, 5.0, 6.0))


def test_cas_swaps_only_on_a_match_and_returns_the_old_value():
    f = _arr(np.array([2.0, 3.0], dtype=np.float32), wp.float32)
    v = _arr(np.array([[1, 2, 3], [1, 2, 0]], dtype=np.float32), wp.vec3)
    olds, vold = wp.zeros(2, dtype=wp.float32), wp.zeros(2, dtype=wp.vec3)
    _run(cas_values, 1, f, v, olds, vold)
    np.testing.assert_array_equal(f.numpy(), [7.0, 3.0])
    np.testing.assert_array_equal(olds.numpy(), [2.0, 3.0])
    # a vector is replaced only when all of it matches (Warp), even if some components do
    np.testing.assert_array_equal(v.numpy(), [[4, 5, 6], [1, 2, 0]])
    np.testing.assert_array_equal(vold.numpy(), [[1, 2, 3], [1, 2, 0]])


@wp.kernel
def cas_signed_zero(f: wp.array(dtype=wp.float32)):
    wp.atomic_cas(f, 0, 0.0, 1.0)


@gradloom_only
def test_float_cas_compares_bits():
    f = _arr(np.array([-0.0], dtype=np.float32), wp.float32)
    _run(cas_signed_zero, 1, f)
    assert f.numpy()[0] == 0.0 and np.signbit(f.numpy()[0])  # -0.0 is not 0.0's bits


# -- differentiation -----------------------------------------------------------------------------

@wp.kernel
def min_of_squares(x: wp.array(dtype=wp.float64), m: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_min(m, i // 4, x[i] * x[i])


def test_atomic_min_gradient_goes_to_the_winner():
    x = np.array([0.5, -2.0, 1.5, 3.0, 1.0, -0.25, 2.0, 4.0])
    xa = _arr(x, wp.float64, grad=True)
    m = _arr(np.full(2, 100.0), wp.float64, grad=True)
    tape = wp.Tape()
    with tape:
        _run(min_of_squares, 8, xa, m)
    tape.backward(grads={m: _arr(np.array([1.0, 3.0]), wp.float64)})
    np.testing.assert_allclose(m.numpy(), [0.25, 0.0625])
    np.testing.assert_allclose(xa.grad.numpy(), [1.0, 0, 0, 0, 0, 3.0 * 2 * -0.25, 0, 0])


@wp.kernel
def scatter_by_slot(x: wp.array(dtype=wp.float64), counter: wp.array(dtype=wp.int32),
                    marks: wp.array(dtype=wp.int32), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    slot = wp.atomic_add(counter, 0, 1)
    wp.atomic_or(marks, 0, 1 << (slot % 8))
    seen = wp.atomic_exch(marks, 1, slot)
    y[slot] = x[i] * x[i] + wp.float64(seen - seen)


@gradloom_only
def test_integer_atomics_in_a_differentiated_kernel():
    x = np.array([1.0, -2.0, 3.0])
    xa, y = _arr(x, wp.float64, grad=True), wp.zeros(3, dtype=wp.float64, requires_grad=True)
    counter, marks = wp.zeros(1, dtype=wp.int32), wp.zeros(2, dtype=wp.int32)
    tape = wp.Tape()
    with tape:
        _run(scatter_by_slot, 3, xa, counter, marks, y)
    tape.backward(grads={y: _arr(np.ones(3), wp.float64)})
    np.testing.assert_allclose(np.sort(y.numpy()), np.sort(x * x))
    np.testing.assert_allclose(xa.grad.numpy(), 2 * x)
    assert marks.numpy()[0] == 0b111


@wp.kernel
def float_exch(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32)):
    i = wp.tid()
    wp.atomic_exch(y, 0, x[i])


@wp.kernel
def float_cas(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32)):
    i = wp.tid()
    wp.atomic_cas(y, 0, 0.0, x[i])


@gradloom_only
@pytest.mark.parametrize("kernel", [float_exch, float_cas], ids=["exch", "cas"])
def test_float_exch_and_cas_refuse_to_differentiate(kernel):
    x = _arr(np.array([1.0, 2.0], dtype=np.float32), wp.float32, grad=True)
    y = wp.zeros(1, dtype=wp.float32, requires_grad=True)
    tape = wp.Tape()
    with tape:
        _run(kernel, 2, x, y)
    with pytest.raises(wp.CompileError, match="not differentiable"):
        tape.backward(grads={y: _arr(np.ones(1, dtype=np.float32), wp.float32)})


# -- code generation and errors --------------------------------------------------------------------

@gradloom_only
def test_atomics_compile_to_llvm_atomic_instructions():
    from gradloom.codegen.cpu import host_target
    from gradloom.codegen.entry_cpu import cpu_module as emit_module
    from gradloom.frontend.lower import lower_kernel

    text = ""
    for k in (bitwise, exchange, claim, cas_values):
        ir = lower_kernel(k.info, list(k.params))
        text += emit_module(ir, "k", host_target().triple, host_target().datalayout)
    for instr in ("atomicrmw or", "atomicrmw and", "atomicrmw xor", "atomicrmw xchg",
                  "cmpxchg ptr"):
        assert instr in text, instr


@gradloom_only
def test_bitwise_atomic_on_floats_is_a_type_error():
    @wp.kernel  # defined here: it must not reach warp-lang's module build
    def and_on_floats(x: wp.array(dtype=wp.float32)):
        wp.atomic_and(x, 0, 1.0)

    with pytest.raises(wp.KernelTypeError, match=r"wp.atomic_and\(\) needs an array of integers"):
        _run(and_on_floats, 1, wp.zeros(1, dtype=wp.float32))
