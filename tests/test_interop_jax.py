"""JAX (CPU) interop through DLPack; skipped when jax is not installed.

Zero-copy is checked by writing into the gradloom side and reading the JAX array (JAX arrays
are immutable, so writes go one way only: gradloom -> JAX).
"""

from __future__ import annotations

import numpy as np
import pytest
from wpcompat import BACKEND

if BACKEND != "gradloom":
    pytest.skip("gradloom-specific interop tests", allow_module_level=True)

import gradloom as wp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


def test_to_jax_shares_memory():
    a = wp.array(np.arange(16, dtype=np.float32), dtype=float)
    j = wp.to_jax(a)
    assert j.shape == (16,) and j.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(j), np.arange(16, dtype=np.float32))
    a.numpy()[3] = 99.0
    assert float(j[3]) == 99.0


def test_from_jax_shares_memory_and_feeds_a_launch():
    j = jnp.arange(8, dtype=jnp.float32)
    a = wp.from_jax(j)
    assert a.shape == (8,) and a.dtype == wp.float32
    assert a.ptr == j.unsafe_buffer_pointer()
    y = wp.zeros(8, dtype=float)
    wp.launch(double, 8, inputs=[a], outputs=[y])
    np.testing.assert_array_equal(y.numpy(), 2.0 * np.arange(8))
    out = wp.zeros(8, dtype=float)
    wp.launch(double, 8, inputs=[j], outputs=[out])  # a raw JAX array as a launch input
    np.testing.assert_array_equal(out.numpy(), 2.0 * np.arange(8))


def test_from_jax_vectors_and_dtypes():
    j = jnp.ones((4, 3), dtype=jnp.float32)
    a = wp.from_jax(j, dtype=wp.vec3)
    assert a.shape == (4,) and a.dtype == wp.vec3
    assert wp.dtype_from_jax(jnp.float32) == wp.float32
    assert wp.dtype_to_jax(wp.float16) == jnp.float16
    assert wp.device_from_jax(jax.devices("cpu")[0]) == "cpu"
    assert wp.device_to_jax("cpu").platform == "cpu"
