"""Gradients an adjoint writes whole with non-temporal stores (a FRESH variant marked "n":
pipeline.fresh_variant, codegen/lane_memory.streamed_store): the same bits as the plain
adjoint, for zeroed and seeded gradients, scalar, vec3 and mat33 elements, on one thread and on
chunks whose starts leave the windows unaligned."""

import platform

import numpy as np
import pytest

import gradloom as wp
from gradloom import pipeline
from gradloom.runtime.array import lazy_zero
from gradloom.runtime.tape import adjoint

N = lazy_zero.MIN_BYTES // 4 + 5  # float32 elements: the gradients' zeroing is deferred


@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), g: wp.vec3, dt: float):
    i = wp.tid()
    x[i] = x[i] + v[i] * dt
    v[i] = v[i] + g * dt


@wp.kernel
def energy(F: wp.array(dtype=wp.mat33), e: wp.array(dtype=float)):
    i = wp.tid()
    f = F[i]
    wp.atomic_add(e, 0, wp.trace(wp.transpose(f) @ f) - wp.log(wp.abs(wp.determinant(f))))


@wp.kernel
def twice(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]
    y[i] = y[i] + wp.sin(x[i])  # x.grad gets two adds: kept as zero-then-add, not streamed


def _run(streamed: bool, monkeypatch: pytest.MonkeyPatch, threads: int, case: str
         ) -> list[np.ndarray]:
    """Two backward passes (the second with gradients deferred by tape.zero()) of `case`."""
    monkeypatch.setattr(adjoint, "STREAM_BYTES", 0 if streamed else 1 << 62)
    monkeypatch.setattr(wp.config, "num_threads", threads)
    rng = np.random.default_rng(7)
    out = []
    if case == "saxpy":
        x, y = (wp.array(rng.random(N, dtype=np.float32), requires_grad=True) for _ in "xy")
        s = rng.standard_normal(N).astype(np.float32)
        s[:40:3] = -0.0  # 0 + (-0) is +0, as an eager zero then add gives
        launches, grads, wrt = [(saxpy, N, [2.0, x, y])], {y: wp.array(s)}, [x]
    elif case in ("integrate", "integrate_unseeded"):
        n = N // 3 + 1
        x, v = (wp.array(rng.random((n, 3), dtype=np.float32), dtype=wp.vec3,
                         requires_grad=True) for _ in "xv")
        seeds = rng.standard_normal((2, n, 3)).astype(np.float32)
        seeds[:, :7] = -0.0  # a seed's signed zeros kept
        launches = [(integrate, n, [x, v, wp.vec3(0.0, -9.8, 0.0), 0.125])]
        grads = {x: wp.array(seeds[0], dtype=wp.vec3)}
        if case == "integrate":
            grads[v] = wp.array(seeds[1], dtype=wp.vec3)
        wrt = [v]
    elif case == "mat33":
        n = N // 9 + 1
        f = np.eye(3, dtype=np.float32) + 0.1 * rng.standard_normal((n, 3, 3)).astype(np.float32)
        F = wp.array(f, dtype=wp.mat33, requires_grad=True)
        e = wp.zeros(1, dtype=float, requires_grad=True)
        launches, grads, wrt = [(energy, n, [F, e])], None, [F]
    else:
        x, y = (wp.array(rng.random(N, dtype=np.float32), requires_grad=True) for _ in "xy")
        launches, grads, wrt = [(twice, N, [x, y])], {y: wp.ones(N, dtype=float)}, [x]
    for _ in range(2):
        tape = wp.Tape()
        with tape:
            for k, dim, inputs in launches:
                wp.launch(k, dim, inputs=inputs)
        if grads is None:
            tape.backward(loss=launches[0][2][-1])
        else:
            tape.backward(grads=grads)
        out += [a.grad.numpy().copy() for a in wrt]
        tape.zero()
        assert all(lazy_zero.is_pending(a.grad) for a in wrt)
    return out


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", ["saxpy", "integrate", "integrate_unseeded", "mat33",
                                  "twice"])
def test_streamed_gradients_are_the_plain_adjoints_bits(
        case: str, threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _run(False, monkeypatch, threads, case)
    streamed = _run(True, monkeypatch, threads, case)
    for a, b in zip(plain, streamed, strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert plain[0].tobytes() == plain[1].tobytes()  # deferred zero: as the first pass


def test_streamed_gradients_match_the_derivative(monkeypatch: pytest.MonkeyPatch) -> None:
    """saxpy's d(y_out)/dx = a, integrate's d(v_out)/dv = 1 and d(x_out)/dv = dt: exact."""
    got = _run(True, monkeypatch, 2, "saxpy")
    s = np.random.default_rng(7)
    s.random(N, dtype=np.float32), s.random(N, dtype=np.float32)
    seed = s.standard_normal(N).astype(np.float32)
    seed[:40:3] = -0.0
    assert np.array_equal(got[1], 2.0 * seed + np.float32(0.0))
    assert not np.signbit(got[1][:40:3]).any()


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 streams only")
def test_streamed_variant_stores_non_temporally_and_fences() -> None:
    variant, zeroed, _ = saxpy.fresh_variant(frozenset({1}), frozenset(), frozenset({1}))
    assert variant == "fresh:1n" and zeroed == {1}
    text, _ = pipeline.cpu_codegen(saxpy, "gl_test_streamed", variant)
    assert "!nontemporal" in text and "llvm.x86.sse.sfence" in text
    # where x.grad is added into twice, the zeroing stays and nothing is streamed
    variant, _, _ = twice.fresh_variant(frozenset({0}), frozenset(), frozenset({0}))
    text, _ = pipeline.cpu_codegen(twice, "gl_test_twice", variant)
    assert "!nontemporal" not in text
