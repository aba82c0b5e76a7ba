"""wp.Texture1D/2D/3D and wp.texture_sample: values against a float64 numpy model of the sampler
(filters, address modes, normalised coordinates, dtypes, channels, mip levels) and against
warp-lang; coordinate gradients against central differences of the model."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp

F, A = wp.TextureFilterMode, wp.TextureAddressMode


def _address(i: np.ndarray, n: int, mode: A) -> tuple[np.ndarray, np.ndarray]:
    if mode == A.WRAP:
        return np.mod(i, n), np.ones_like(i, bool)
    if mode == A.MIRROR:
        m = np.mod(i, 2 * n)
        return np.where(m >= n, 2 * n - 1 - m, m), np.ones_like(i, bool)
    inside = (i >= 0) & (i < n)
    return np.clip(i, 0, n - 1), inside if mode == A.BORDER else np.ones_like(i, bool)


def model(level: np.ndarray, coords: np.ndarray, filt: F, modes: list[A], normalized: bool) -> np.ndarray:
    """The sampler in float64: level (…, channels) with axes slowest-first, coords (m, ndim) x-first."""
    ndim = level.ndim - 1
    sizes = level.shape[:-1][::-1]  # width first
    taps = []
    for a in range(ndim):
        x = coords[:, a] * sizes[a] if normalized else coords[:, a].astype(np.float64)
        x = x - (0.5 if filt == F.LINEAR else 0.0)
        base = np.floor(x)
        frac = x - base if filt == F.LINEAR else np.zeros_like(x)
        i0 = base.astype(np.int64)
        taps.append([(*_address(i0, sizes[a], modes[a]), 1 - frac),
                     (*_address(i0 + 1, sizes[a], modes[a]), frac)])
    out = np.zeros((coords.shape[0], level.shape[-1]))
    for corner in range(1 << ndim):
        picks = [taps[a][(corner >> a) & 1] for a in range(ndim)]
        w = np.prod([p[2] for p in picks], axis=0) * np.all([p[1] for p in picks], axis=0)
        out += w[:, None] * level[tuple(p[0] for p in picks[::-1])]
    return out


@wp.kernel
def _sample1(t: wp.Texture1D, c: wp.array(dtype=float), out: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    out[i] = wp.texture_sample(t, c[i], dtype=wp.vec4)


@wp.kernel
def _sample2(t: wp.Texture2D, c: wp.array(dtype=wp.vec2), out: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    out[i] = wp.texture_sample(t, c[i], dtype=wp.vec4)


@wp.kernel
def _sample3(t: wp.Texture3D, c: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    out[i] = wp.texture_sample(t, c[i], dtype=wp.vec4)


_KERNELS = {1: (_sample1, wp.Texture1D, float), 2: (_sample2, wp.Texture2D, wp.vec2),
            3: (_sample3, wp.Texture3D, wp.vec3)}  # fmt: skip


def _run(ndim: int, data: np.ndarray, coords: np.ndarray, **kw: object) -> np.ndarray:
    kernel, cls, ctype = _KERNELS[ndim]
    tex = cls(data, **kw)
    out = wp.zeros(len(coords), dtype=wp.vec4)
    c = coords[:, 0].copy() if ndim == 1 else coords
    wp.launch(kernel, len(coords), inputs=[tex, wp.array(c, dtype=ctype), out])
    return out.numpy()


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("filt", list(F))
@pytest.mark.parametrize("mode", list(A))
def test_filters_and_address_modes_against_the_model(ndim, filt, mode):
    rng = np.random.default_rng(ndim * 10 + int(mode))
    shape = (3, 4, 5)[3 - ndim:]
    data = rng.standard_normal((*shape, 4)).astype(np.float32)
    coords = rng.uniform(-1.7, 2.6, size=(64, ndim)).astype(np.float32)
    got = _run(ndim, data, coords, filter_mode=filt, address_mode=mode)
    want = model(data.astype(np.float64), coords, filt, [mode] * ndim, True)
    np.testing.assert_allclose(got, want, atol=2e-5)


def test_dtypes_channels_and_unnormalized_coordinates():
    # Warp's conversions: unsigned 8/16-bit to [0, 1], signed to [-1, 1] (the most negative
    # value clamps), 32-bit integers unnormalised
    cases = {np.uint8: 255.0, np.uint16: 65535.0, np.int8: 127.0, np.int16: 32767.0}
    coords = np.array([[0.5, 0.5], [2.5, 1.5], [1.2, 0.7]], np.float32)
    for np_type, scale in cases.items():
        info = np.iinfo(np_type)
        data = np.linspace(info.min, info.max, 2 * 3 * 2).astype(np_type).reshape(2, 3, 2)
        got = _run(2, data, coords, normalized_coords=False, filter_mode=F.CLOSEST)
        level = np.maximum(data.astype(np.float64) / scale, -1.0)
        want = model(level, coords, F.CLOSEST, [A.CLAMP] * 2, False)
        np.testing.assert_allclose(got[:, :2], want, rtol=1e-6)
        np.testing.assert_array_equal(got[:, 2:], 0.0)  # channels the texture lacks read 0
    ints = np.array([[7, -3, 100000]], np.int32)
    assert wp.Texture2D(ints).filter_mode == F.CLOSEST  # 32-bit integers default to closest
    got = _run(2, ints, np.array([[2.5, 0.5]], np.float32), normalized_coords=False)
    assert got[0, 0] == 100000.0
    with pytest.raises(ValueError, match="closest filtering only"):
        wp.Texture2D(ints, filter_mode=F.LINEAR)


def test_mip_levels_average_pairs_and_blend():
    data = np.array([1, 2, 4, 8, 16, 32, 64], np.float32)
    tex = wp.Texture1D(data, num_mip_levels=0, filter_mode=F.CLOSEST)
    assert tex.num_mip_levels == 3 and tex.is_mipmapped
    np.testing.assert_array_equal(tex._level_arrays[1].ravel(), [1.5, 6.0, 24.0])  # 64 dropped
    np.testing.assert_array_equal(tex._level_arrays[2].ravel(), [3.75])
    lods = wp.array([0.0, 0.25, 1.0, 1.5, 9.0, -2.0], dtype=float)
    out = wp.zeros(6, dtype=float)
    wp.launch(_sample_lod, 6, inputs=[tex, 0.3, lods, out])
    # u = 0.3 reads texel 2 of level 0 (4.0), texel 0 of level 1 (1.5), level 2 (3.75)
    np.testing.assert_allclose(out.numpy(), [4.0, 0.75 * 4.0 + 0.25 * 1.5, 1.5,
                                             0.5 * 1.5 + 0.5 * 3.75, 3.75, 4.0])  # fmt: skip


@wp.kernel
def _sample_lod(t: wp.Texture1D, u: float, lods: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.texture_sample(t, u, dtype=float, lod=lods[i])


@wp.kernel
def _loss(t: wp.Texture2D, c: wp.array(dtype=wp.vec2), out: wp.array(dtype=float)):
    i = wp.tid()
    v = wp.texture_sample(t, c[i], dtype=wp.vec2)
    wp.atomic_add(out, 0, v[0] * v[0] + 3.0 * v[1])


@pytest.mark.parametrize("mode", [A.WRAP, A.BORDER])
def test_coordinate_gradients_match_the_model(mode):
    rng = np.random.default_rng(3)
    data = rng.standard_normal((4, 5, 2)).astype(np.float32)
    coords = rng.uniform(-0.3, 1.3, size=(16, 2)).astype(np.float32)
    tex = wp.Texture2D(data, address_mode=mode)
    c = wp.array(coords, dtype=wp.vec2, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_loss, 16, inputs=[tex, c, out])
    tape.backward(loss=out)

    def f(x: np.ndarray) -> np.ndarray:
        v = model(data.astype(np.float64), x, F.LINEAR, [mode] * 2, True)
        return v[:, 0] ** 2 + 3.0 * v[:, 1]

    h = 1e-6
    fd = np.stack([(f(coords + h * e) - f(coords - h * e)) / (2 * h) for e in np.eye(2)], axis=1)
    np.testing.assert_allclose(c.grad.numpy(), fd, rtol=1e-3, atol=1e-3)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="1, 2 or 4 channels"):
        wp.Texture2D(np.zeros((2, 2, 3), np.float32))
    with pytest.raises(ValueError, match="not supported"):
        wp.Texture1D(np.zeros(4, np.float64))
    with pytest.raises(TypeError, match="base class"):
        wp.Texture(np.zeros(4, np.float32))
    assert wp.Texture3D(width=2, height=3, depth=4, num_channels=2).num_channels == 2


def test_textures_in_an_array_of_structs_and_against_warp_lang():
    warp = pytest.importorskip("warp")
    rng = np.random.default_rng(11)
    data = rng.uniform(0, 255, size=(6, 7, 4)).astype(np.uint8)
    coords = rng.uniform(-0.5, 1.5, size=(32, 2)).astype(np.float32)
    kw = {"address_mode": (A.MIRROR, A.WRAP), "num_mip_levels": 0}
    got = _run(2, data, coords, **kw)
    wkw = {"address_mode": (warp.TextureAddressMode.MIRROR, warp.TextureAddressMode.WRAP),
           "num_mip_levels": 0}  # fmt: skip
    wtex = warp.Texture2D(data, device="cpu", **wkw)
    wout = warp.zeros(32, dtype=warp.vec4, device="cpu")
    warp.launch(_warp_kernel(warp), 32, inputs=[wtex, warp.array(coords, dtype=warp.vec2, device="cpu"), wout],
                device="cpu")  # fmt: skip
    np.testing.assert_allclose(got, wout.numpy(), atol=1e-6)


_WARP_KERNELS: dict[str, object] = {}


def _warp_kernel(warp: object) -> object:
    if "k" not in _WARP_KERNELS:
        import importlib

        _WARP_KERNELS["k"] = importlib.import_module("texture_warp_kernels").make(warp)
    return _WARP_KERNELS["k"]
