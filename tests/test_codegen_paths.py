"""The two thread-loop copies (contiguous fast path, general strides) and the compiler in cache keys."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp


@wp.kernel
def add_one(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] + 1.0


@wp.kernel
def axpy_vec(a: float, x: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@pytest.mark.parametrize("x_step,y_step", [(1, 1), (2, 1), (1, 3), (2, 2)])
def test_contiguous_and_strided_inputs_agree_with_numpy(x_step: int, y_step: int) -> None:
    rng = np.random.default_rng(3)
    n = 1000
    xs = rng.random(n * x_step).astype(np.float32)
    ys = np.zeros(n * y_step, np.float32)
    x = wp.array(xs)[::x_step] if x_step > 1 else wp.array(xs)
    y = wp.array(ys)[::y_step] if y_step > 1 else wp.array(ys)
    wp.launch(add_one, n, [x, y])
    np.testing.assert_allclose(y.numpy(), xs[::x_step] + 1.0, rtol=1e-6)


def test_vector_arrays_on_strided_views() -> None:
    rng = np.random.default_rng(4)
    xs = rng.random((40, 3)).astype(np.float32)
    ys = rng.random((40, 3)).astype(np.float32)
    x = wp.array(xs, dtype=wp.vec3)[::2]
    y = wp.array(ys, dtype=wp.vec3)
    wp.launch(axpy_vec, 20, [2.0, x, y[:20]])
    expected = ys.copy()
    expected[:20] = 2.0 * xs[::2] + ys[:20]
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)


def test_cache_key_covers_the_compiler_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: a changed code generator once reused stale object code from the disk cache."""
    import sys

    kmod = sys.modules["gradloom.kernel"]
    before = add_one.cache_key()
    monkeypatch.setattr(kmod, "compiler_fingerprint", lambda: "a different compiler")
    assert add_one.cache_key() != before


@wp.kernel
def _curl4(p: wp.array(dtype=wp.vec4), out: wp.array(dtype=wp.vec3), seed: int):
    i = wp.tid()
    s = wp.rand_init(seed)
    out[i] = wp.curlnoise(s, p[i], wp.uint32(2), 2.0, 0.5)


def test_noise_sized_kernels_keep_the_fast_loop() -> None:
    """curlnoise on vec4 (6,004 operations, its adjoint 16,042) keeps the contiguous or SIMD
    copy: in lanes it runs 4.8x faster (benchmarks/bench_compile.py), within the compile target."""
    for symbol, adjoint in (("k_curl", False), ("k_curl_adj", True)):
        text, _ = _curl4._codegen(symbol, adjoint)
        assert ("\nc.pre:" in text or "\nv.pre:" in text) and "\ns.pre:" in text


def test_large_kernels_get_one_thread_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past entry_cpu.CONTIGUOUS_MAX_OPS primitive operations a kernel is compiled with the
    general loop only (the second copy would double LLVM's time on it)."""
    from gradloom.codegen import entry_cpu

    text, _ = add_one._codegen("k_two", False)  # the fast copy: contiguous (c.) or SIMD (v.)
    assert ("\nc.pre:" in text or "\nv.pre:" in text) and "\ns.pre:" in text
    monkeypatch.setattr(entry_cpu, "CONTIGUOUS_MAX_OPS", 3)
    for symbol, adjoint in (("k_one", False), ("k_one_adj", True)):
        text, facts = add_one._codegen(symbol, adjoint)
        assert "\nc.pre:" not in text and "\nv.pre:" not in text and "\ns.pre:" in text
        assert not wp.config.simd or "operations" in facts["lanes"]
