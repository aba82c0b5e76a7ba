"""Import the framework under test as ``wp``.

The kernel-language tests are written against NVIDIA Warp's public API so that the very same
file runs on warp-lang (to validate the tests themselves) and on gradloom (to test gradloom):

    GL_TEST_BACKEND=warp     python -m pytest tests/test_kernels_*.py   # validate the tests
    GL_TEST_BACKEND=gradloom python -m pytest tests/test_kernels_*.py   # (default) test gradloom

Kernels must be defined at module level with ``@wp.kernel``, so test modules do
``from wpcompat import wp, DEVICE`` at import time.
"""

import os

import numpy as np

BACKEND = os.environ.get("GL_TEST_BACKEND", "gradloom").strip().lower() or "gradloom"

if BACKEND == "warp":
    import warp as wp

    wp.config.quiet = True
    wp.init()
elif BACKEND == "gradloom":
    import gradloom as wp

    if hasattr(wp, "init"):
        wp.init()
else:
    raise RuntimeError(f"GL_TEST_BACKEND must be 'gradloom' or 'warp', got {BACKEND!r}")

DEVICE = "cpu"

__all__ = ["BACKEND", "DEVICE", "wp"]


# Small helpers the kernel tests share (device fixed to DEVICE).
def warr(a, dtype):
    return wp.array(a, dtype=dtype, device=DEVICE)


def zeros(shape, dtype):
    return wp.zeros(shape, dtype=dtype, device=DEVICE)


def launch(kernel, dim, *inputs):
    wp.launch(kernel, dim=dim, inputs=list(inputs), device=DEVICE)


def f32(a):
    return np.asarray(a, dtype=np.float32)
