"""Texture sampling at mip levels and far coordinates, as Warp's CPU sampler defines it: texel
coordinates are scaled by the level's size over the base level's, periodic modes reduce any
coordinate (texel or normalised) by an exact remainder, and a given lod on a whole level has the
one-sided slope towards the next level (checked against a float64 finite difference)."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp

WRAP, MIRROR = wp.TextureAddressMode.WRAP, wp.TextureAddressMode.MIRROR
CLOSEST, LINEAR = wp.TextureFilterMode.CLOSEST, wp.TextureFilterMode.LINEAR


@wp.kernel
def _sample_lod(tex: wp.Texture1D, pos: wp.array(dtype=float), lod: wp.array(dtype=float),
                out: wp.array(dtype=float)):
    t = wp.tid()
    out[t] = wp.texture_sample(tex, pos[t], dtype=float, lod=lod[t])


def _run(tex: wp.Texture1D, pos: list[float], lod: list[float],
         grads: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p = wp.array(np.array(pos, np.float32), dtype=float, requires_grad=True)
    lo = wp.array(np.array(lod, np.float32), dtype=float, requires_grad=True)
    out = wp.zeros(len(pos), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_sample_lod, dim=len(pos), inputs=[tex, p, lo, out])
    if grads:
        tape.backward(grads={out: wp.ones_like(out)})
    return out.numpy(), p.grad.numpy(), lo.grad.numpy()


_DATA = np.array([1.0, 4.0, 9.0, 16.0], np.float32)  # level 1 (mean of pairs): 2.5, 12.5


@pytest.mark.parametrize("mode", [WRAP, MIRROR])
def test_texel_coordinates_are_scaled_to_the_mip_level(mode: wp.TextureAddressMode) -> None:
    tex = wp.Texture1D(_DATA, address_mode=mode, normalized_coords=False, filter_mode=CLOSEST,
                       num_mip_levels=2)
    # texel 5.0 of the base level is texel 2.5 of level 1: index 2, periodic in a level of 2
    out, _, _ = _run(tex, [5.0, 6.0, 5.0], [1.0, 1.0, 0.0])
    level1 = {WRAP: [2.5, 12.5], MIRROR: [12.5, 2.5]}[mode]
    base = {WRAP: 4.0, MIRROR: 9.0}[mode]
    np.testing.assert_array_equal(out, [level1[0], level1[1], base])


def test_far_periodic_texel_coordinates_reduce_exactly() -> None:
    """2**40 and 2**41 are 1 and 2 modulo a width of 3 texels: the same samples as 1.0 and 2.0
    (a coordinate clamped before the remainder would land elsewhere)."""
    tex = wp.Texture1D(np.array([0.0, 10.0, 20.0], np.float32), address_mode=WRAP,
                       normalized_coords=False, filter_mode=LINEAR)
    near, _, _ = _run(tex, [1.0, 2.0], [0.0, 0.0])
    far, _, _ = _run(tex, [2.0**40, 2.0**41], [0.0, 0.0])
    np.testing.assert_array_equal(near, [5.0, 15.0])
    np.testing.assert_array_equal(far, near)


def test_lod_gradient_on_a_whole_level_is_the_slope_into_the_chain() -> None:
    tex = wp.Texture1D(_DATA, address_mode=WRAP, normalized_coords=True, filter_mode=CLOSEST,
                       num_mip_levels=2)
    lods = [-1.0, 0.0, 0.5, 1.0]
    out, dpos, dlod = _run(tex, [0.3] * 4, lods, grads=True)  # texel 1 (4.0); level 1: 2.5
    np.testing.assert_allclose(out, [4.0, 4.0, 3.25, 2.5])
    # a float64 one-sided difference inside [0, 1): (f(lod + h) - f(lod)) / h
    h = 1e-3
    right = (4.0 + (0.0 + h) * (2.5 - 4.0) - 4.0) / h
    np.testing.assert_allclose(dlod, [0.0, right, right, 0.0], rtol=1e-6)
    np.testing.assert_array_equal(dpos, 0.0)  # closest filtering: no slope in the coordinate


@wp.kernel
def _sample_2d(tex: wp.Texture2D, pos: wp.array(dtype=wp.vec2f), out: wp.array(dtype=float)):
    out[0] = wp.texture_sample(tex, pos[0], dtype=float)


def _slope_2d(data: np.ndarray, point: tuple[float, float], seed: float) -> np.ndarray:
    tex = wp.Texture2D(data, normalized_coords=False, filter_mode=LINEAR)
    pos = wp.array([point], dtype=wp.vec2f, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_sample_2d, dim=1, inputs=[tex, pos, out])
    tape.backward(grads={out: wp.array([seed], dtype=float)})
    return pos.grad.numpy()[0]


def test_slopes_of_texels_with_a_large_common_offset_are_exact() -> None:
    """Texels 1e8 + 8 * [[0, 1], [2, 4]] (float32 holds them exactly): the slope is a
    difference of texels interpolated in the other axis, not a cancelling sum of products."""
    small = np.array([[0.0, 1.0], [2.0, 4.0]], np.float32) * 8.0  # rows: v, columns: u
    fu, fv = 0.875 - 0.5, 0.75 - 0.5  # texel centres at 0.5 and 1.5
    du = (1 - fv) * (small[0, 1] - small[0, 0]) + fv * (small[1, 1] - small[1, 0])
    dv = (1 - fu) * (small[1, 0] - small[0, 0]) + fu * (small[1, 1] - small[0, 1])
    for offset in (0.0, 1.0e8):
        got = _slope_2d(small + np.float32(offset), (0.875, 0.75), -0.5)
        np.testing.assert_allclose(got, [-0.5 * du, -0.5 * dv], rtol=1e-6, atol=1e-6)


def test_a_zero_seed_passes_no_nan_from_overflowing_texel_differences() -> None:
    big = np.float32(2.0**127)
    data = np.array([[-big, big], [-big, big]], np.float32)  # neighbours 2**128 apart
    np.testing.assert_array_equal(_slope_2d(data, (1.0, 1.0), 0.0), [0.0, 0.0])


def test_mip_levels_of_large_finite_texels_stay_finite() -> None:
    """Levels average in double, rounded once per level: 2e38 + 2e38 would overflow float32."""
    value = np.float32(2.0e38)
    tex = wp.Texture1D(np.full(4, value, np.float32), num_mip_levels=3, filter_mode=LINEAR)
    out, dpos, dlod = _run(tex, [0.3, 0.3, 0.3], [0.5, 1.0, 2.0], grads=True)
    np.testing.assert_allclose(out, value, rtol=1e-6)
    np.testing.assert_array_equal(dlod, 0.0)
    np.testing.assert_array_equal(dpos, 0.0)
