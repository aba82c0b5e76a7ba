"""What the CUDA tests share: whether a GPU, cuda-bindings and libdevice are here, and the
`env` fixture body that runs a test on the GPU or on the stand-in driver (tests/fake_cuda.py)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

import gradloom as wp
from gradloom.codegen import nvptx
from gradloom.runtime.cuda import driver as cuda_driver

HAS_GPU = wp.is_cuda_available()
HAS_BINDINGS = importlib.util.find_spec("cuda") is not None and \
    importlib.util.find_spec("cuda.bindings") is not None
NO_GPU = "needs an NVIDIA GPU (cuda-bindings, a driver and a device)"
NO_FAKE = "the fake driver needs cuda-bindings and libdevice (pip install 'gradloom[cuda]')"


def have_libdevice() -> bool:
    try:
        nvptx.libdevice_path()
    except nvptx.LibdeviceNotFound:
        return False
    return True


def skip_unless_runnable(where: str) -> None:
    """Skip a test parametrised over "gpu" and "fake" where that one cannot run here."""
    if where == "gpu" and not HAS_GPU:
        pytest.skip(NO_GPU)
    if where == "fake" and not (HAS_BINDINGS and have_libdevice()):
        pytest.skip(NO_FAKE)


def device_env(where: str, kernels: list[Any] | None = None) -> Iterator[Any]:
    """For an `env` fixture (`yield from`): the fake driver knowing these kernels (yielded),
    or None on the GPU, synchronised after the test."""
    skip_unless_runnable(where)
    if where == "gpu":
        yield None
        wp.synchronize()
        return
    from fake_cuda import FakeCuda

    fake = FakeCuda() if kernels is None else FakeCuda(kernels=kernels)
    with cuda_driver.using(fake):
        yield fake
