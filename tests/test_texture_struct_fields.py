"""Textures as struct fields and their sizes in kernels: a struct's texture field starts as an
empty texture (no sizes, one zero texel), `tex.width/height/depth` read in a kernel equal the
data's shape, far periodic coordinates sample where near ones do, `__del__` is safe on an
instance never initialised, and invalid modes and mip counts are refused with Warp's words."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp


@wp.struct
class _Holder:
    tex: wp.Texture3D
    scale: float


@wp.kernel
def _sizes(s: _Holder, out: wp.array(dtype=wp.int32)):
    out[0] = s.tex.width
    out[1] = s.tex.height
    out[2] = s.tex.depth


@wp.kernel
def _sample(s: _Holder, out: wp.array(dtype=float)):
    out[0] = s.scale * wp.texture_sample(s.tex, wp.vec3(0.5, 0.5, 0.5), dtype=float)


def test_struct_field_defaults_to_an_empty_texture_then_takes_one() -> None:
    s = _Holder()
    assert (s.tex.width, s.tex.height, s.tex.depth) == (0, 0, 0)
    out = wp.zeros(1, dtype=float)
    s.scale = 2.0
    wp.launch(_sample, 1, inputs=[s, out])
    assert out.numpy()[0] == 0.0  # the empty texture reads zero
    s.tex = wp.Texture3D(np.full((3, 5, 7), 0.25, np.float32))  # depth, height, width
    sizes = wp.zeros(3, dtype=wp.int32)
    wp.launch(_sizes, 1, inputs=[s, sizes])
    np.testing.assert_array_equal(sizes.numpy(), [7, 5, 3])
    wp.launch(_sample, 1, inputs=[s, out])
    assert out.numpy()[0] == pytest.approx(0.5)


def test_del_on_an_uninitialised_instance_and_no_cuda_handles() -> None:
    wp.Texture2D.__new__(wp.Texture2D).__del__()
    tex = wp.Texture2D(np.zeros((2, 2), np.float32))
    assert tex.id > 0
    for handle in ("cuda_texture", "cuda_array", "cuda_surface"):
        with pytest.raises(RuntimeError, match="only supported for CUDA textures"):
            getattr(tex, handle)


def test_invalid_modes_and_levels() -> None:
    data = np.zeros((8, 8), np.float32)
    with pytest.raises(ValueError, match="Invalid texture filter mode"):
        wp.Texture2D(data, filter_mode=2)
    with pytest.raises(ValueError, match="Invalid texture address mode"):
        wp.Texture2D(data, address_mode=7)
    with pytest.raises(ValueError):
        wp.Texture2D(data, num_mip_levels=5)  # an 8x8 texture has 4 levels
    assert wp.Texture2D(data, num_mip_levels=4).num_mip_levels == 4
    ints = np.zeros((4, 4), np.uint32)
    with pytest.raises(ValueError, match="filter_mode.*CLOSEST"):
        wp.Texture2D(ints, filter_mode=wp.TextureFilterMode.LINEAR)
    wp.Texture2D(ints, mip_filter_mode=wp.TextureFilterMode.LINEAR)  # unused by one level


@wp.kernel
def _sample_1d(tex: wp.Texture1D, u: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.texture_sample(tex, u[i], dtype=float)


def test_far_periodic_coordinates_keep_their_place_in_a_texel() -> None:
    n = 16384
    data = (np.arange(n) % 4).astype(np.float32)
    u = np.array([0.125, 512.125, -511.875], np.float32)  # one place, whole periods apart
    # linear filtering at 0.125 * n - 0.5 = 2047.5: the mean of texels 2047 and 2048
    want = 0.5 * (data[2047] + data[2048])
    for mode in (wp.TextureAddressMode.WRAP, wp.TextureAddressMode.MIRROR):  # periods 1 and 2
        tex = wp.Texture1D(data, address_mode=mode)
        out = wp.zeros(3, dtype=float)
        wp.launch(_sample_1d, 3, inputs=[tex, wp.array(u, dtype=float), out])
        np.testing.assert_array_equal(out.numpy(), [want] * 3)


def test_copies_round_trip_in_place() -> None:
    data = np.array([[1, 2, 3, 4], [5, 6, 7, 4294967295]], np.uint32)
    tex = wp.Texture2D(data)
    dst = wp.zeros(data.shape, dtype=wp.uint32)
    tex.copy_to(dst)
    np.testing.assert_array_equal(dst.numpy(), data)  # exact, not through float32
    f = wp.Texture2D(np.zeros((2, 3), np.float32))
    tid = f.id
    f.copy_from(np.full((2, 3), 0.5, np.float32))
    out = np.zeros((2, 3), np.float32)
    f.copy_to(out)
    assert f.id == tid and (out == 0.5).all()
    s = _Holder()
    s.tex = wp.Texture3D(np.zeros((1, 1, 1), np.float32))
    s.tex.copy_from(np.full((1, 1, 1), 0.25, np.float32))
    s.scale = 4.0
    got = wp.zeros(1, dtype=float)
    wp.launch(_sample, 1, inputs=[s, got])
    assert got.numpy()[0] == pytest.approx(1.0)  # kernels read the copied texels
    with pytest.raises(ValueError, match="Incompatible array shape"):
        f.copy_from(np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="Incompatible array data type"):
        f.copy_to(np.zeros((2, 3), np.int32))
    with pytest.raises(RuntimeError):
        wp.Texture2D(np.zeros((4, 4), np.float32), num_mip_levels=2).copy_from(np.zeros((4, 4), np.float32))
