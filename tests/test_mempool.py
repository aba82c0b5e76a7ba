"""Warp's memory-pool and peer-access API on the devices gradloom runs on, and wp.copy's
gradient copy."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp


def test_cpu_has_no_pools_or_peers():
    assert not wp.is_mempool_supported("cpu")
    assert not wp.is_mempool_enabled("cpu")
    assert not wp.is_peer_access_supported("cpu", "cpu")
    assert not wp.is_mempool_access_supported("cpu", "cpu")
    assert not wp.is_mempool_access_enabled("cpu", "cpu")
    wp.set_mempool_enabled("cpu", False)  # switching off what is off is allowed
    wp.set_peer_access_enabled("cpu", "cpu", False)
    with pytest.raises(ValueError, match="only supported on CUDA devices"):
        wp.set_mempool_enabled("cpu", True)
    with pytest.raises(ValueError, match="only supported between CUDA devices"):
        wp.set_peer_access_enabled("cpu", "cpu", True)
    with pytest.raises(ValueError, match="only supported between CUDA devices"):
        wp.set_mempool_access_enabled("cpu", "cpu", True)
    with pytest.raises(ValueError):
        wp.get_mempool_release_threshold("cpu")
    with wp.ScopedMempool("cpu", False):
        assert not wp.is_mempool_enabled("cpu")
    with pytest.raises(ValueError), wp.ScopedMempool("cpu", True):
        pass


@pytest.mark.skipif(not wp.is_cuda_available(), reason="needs a CUDA device")
def test_cuda_pool_switch_is_scoped():
    d = wp.get_cuda_device(0)
    if not wp.is_mempool_supported(d):
        pytest.skip("the device has no memory pool")
    before = wp.is_mempool_enabled(d)
    with wp.ScopedMempool(d, not before):
        assert wp.is_mempool_enabled(d) == (not before)
        a = wp.zeros(1000, dtype=float, device=d)
        a.fill_(2.0)
        assert float(a.numpy().sum()) == 2000.0
    assert wp.is_mempool_enabled(d) == before


def test_copy_brings_gradients_along():
    src = wp.array(np.arange(4, dtype=np.float32), requires_grad=True)
    src.grad.assign(np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32))
    dst = wp.zeros(4, dtype=float, requires_grad=True)
    wp.copy(dst, src)
    np.testing.assert_array_equal(dst.numpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(dst.grad.numpy(), [1, 2, 3, 4])
    part = wp.zeros(2, dtype=float, requires_grad=True)
    wp.copy(part, src, dest_offset=0, src_offset=2, count=2)
    np.testing.assert_array_equal(part.grad.numpy(), [3, 4])
    plain = wp.zeros(4, dtype=float)  # no gradient: only the values
    wp.copy(plain, src)
    assert plain.grad is None
