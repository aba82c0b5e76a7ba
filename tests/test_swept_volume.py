"""wp.geometry swept volumes: the field of a translating sphere mesh against the analytic capsule
distance, rotations through the poses' inverse, union of meshes, the grid's sizing rules and the
documented refusals; the envelope's extent against the capsule's box."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
import gradloom.geometry as geo


def _sphere_mesh(radius: float, centre: tuple[float, float, float] = (0.0, 0.0, 0.0), winding: bool = True) -> wp.Mesh:
    n = 24
    g = np.indices((n, n, n)).transpose(1, 2, 3, 0) * (2.4 * radius / (n - 1)) - 1.2 * radius
    f = (np.linalg.norm(g, axis=-1) - radius).astype(np.float32)
    v, i = geo.IsoSurfaceMarchingCubes.extract(wp.array(f, dtype=float), 0.0, lower=(-1.2 * radius,) * 3,
                                               upper=(1.2 * radius,) * 3)  # fmt: skip
    pts = v.numpy() + np.array(centre, np.float32)
    return wp.Mesh(wp.array(pts, dtype=wp.vec3), i, support_winding_number=winding)


def _translations(offsets: list) -> np.ndarray:
    off = np.asarray(offsets, np.float32)
    tr = np.zeros((*off.shape[:-1], 7), np.float32)
    tr[..., :3] = off
    tr[..., 6] = 1.0
    return tr


def _nodes(field: wp.array, lower: wp.vec3, upper: wp.vec3) -> np.ndarray:
    lo, hi = np.array(tuple(lower)), np.array(tuple(upper))
    idx = np.indices(field.shape).transpose(1, 2, 3, 0)
    return lo + idx * (hi - lo) / (np.array(field.shape) - 1)


def test_translating_sphere_sweeps_a_capsule() -> None:
    r = 0.5
    tr = _translations([[[x, 0.0, 0.0] for x in np.linspace(-1.0, 1.0, 11)]])
    field, lower, upper = geo.swept_volume_field([_sphere_mesh(r)], tr, voxel_size=0.1)
    p = _nodes(field, lower, upper)
    a, b = np.array([-1.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0])
    h = np.clip(((p - a) @ (b - a)) / ((b - a) @ (b - a)), 0.0, 1.0)
    capsule = np.linalg.norm(p - a - h[..., None] * (b - a), axis=-1) - r
    band = np.abs(capsule) < 0.25
    # sampled poses 0.2 apart: between two poses the union dips by at most r - sqrt(r^2 - 0.1^2)
    np.testing.assert_allclose(field.numpy()[band], capsule[band], atol=0.03)
    spacing = (np.array(tuple(upper)) - np.array(tuple(lower))) / (np.array(field.shape) - 1)
    np.testing.assert_allclose(spacing, 0.1, rtol=1e-5)
    v, _ = geo.swept_volume_mesh([_sphere_mesh(r)], tr, voxel_size=0.1)
    np.testing.assert_allclose(v.numpy().min(axis=0), [-1.5, -0.5, -0.5], atol=0.05)
    np.testing.assert_allclose(v.numpy().max(axis=0), [1.5, 0.5, 0.5], atol=0.05)


def test_rotation_and_union() -> None:
    # a sphere at +x turned a quarter turn about z, and a second sphere kept still at -x
    angles = np.linspace(0.0, np.pi / 2, 7)
    rot = np.zeros((1, len(angles), 7), np.float32)
    rot[0, :, 5], rot[0, :, 6] = np.sin(angles / 2), np.cos(angles / 2)
    still = _translations([[[0.0, 0.0, 0.0]] * len(angles)])
    meshes = [_sphere_mesh(0.3, (1.0, 0.0, 0.0)), _sphere_mesh(0.3, (-1.5, 0.0, 0.0))]
    field, lower, upper = geo.swept_volume_field(meshes, np.concatenate([rot, still]), resolution=(40, 30, 12))
    assert field.shape == (40, 30, 12)
    p = _nodes(field, lower, upper)
    centres = [np.array([np.cos(t), np.sin(t), 0.0]) for t in angles] + [np.array([-1.5, 0.0, 0.0])]
    ref = np.min([np.linalg.norm(p - c, axis=-1) - 0.3 for c in centres], axis=0)
    band = np.abs(ref) < 0.15
    np.testing.assert_allclose(field.numpy()[band], ref[band], atol=0.03)


def test_bounds_and_explicit_domain() -> None:
    mesh = _sphere_mesh(0.5)
    tr = _translations([[[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    lower, upper = geo.swept_volume_bounds([mesh], tr, padding=0.25)
    np.testing.assert_allclose(tuple(lower), [-0.75, -0.75, -0.75], atol=0.02)
    np.testing.assert_allclose(tuple(upper), [0.75, 1.75, 0.75], atol=0.02)
    _, lo, hi = geo.swept_volume_field([mesh], tr, resolution=(9, 9, 9), lower=lower, upper=upper)
    assert tuple(lo) == pytest.approx(tuple(lower)) and tuple(hi) == pytest.approx(tuple(upper))


def test_sign_modes_and_refusals() -> None:
    mesh = _sphere_mesh(0.5)
    tr = _translations([[[0.0, 0.0, 0.0]]])
    unsigned, _, _ = geo.swept_volume_field([mesh], tr, voxel_size=0.1, sign_mode=geo.SweptVolumeSignMode.NO_SIGN)
    signed, _, _ = geo.swept_volume_field([mesh], tr, voxel_size=0.1, sign_mode=geo.SweptVolumeSignMode.NORMAL)
    np.testing.assert_allclose(unsigned.numpy(), np.abs(signed.numpy()), atol=1e-5)
    with pytest.raises(ValueError):
        geo.swept_volume_mesh([mesh], tr, voxel_size=0.1, sign_mode=geo.SweptVolumeSignMode.NO_SIGN)
    with pytest.raises(ValueError):
        geo.swept_volume_field([mesh], tr)  # neither voxel_size nor resolution
    with pytest.raises(ValueError):
        geo.swept_volume_field([mesh], _translations([[[0.0] * 3], [[0.0] * 3]]), voxel_size=0.1)
    with pytest.raises(ValueError):
        geo.swept_volume_field([mesh], tr, voxel_size=0.1, lower=(-1.0,) * 3, upper=(1.0,) * 3)
    with pytest.raises(ValueError):
        geo.swept_volume_field([_sphere_mesh(0.5, winding=False)], tr, voxel_size=0.1)
