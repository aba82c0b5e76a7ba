"""wp.mesh_get: a Mesh's points, indices and velocities arrays read in a kernel (as newton's
bounds kernels read them), against the arrays the mesh was built from."""

from __future__ import annotations

import numpy as np

import gradloom as wp


@wp.kernel
def _read(mesh: wp.uint64, lo: wp.array(dtype=wp.vec3), counts: wp.array(dtype=int),
          first: wp.array(dtype=wp.vec3), vel: wp.array(dtype=wp.vec3)):  # fmt: skip
    m = wp.mesh_get(mesh)
    low = wp.vec3(1.0e30, 1.0e30, 1.0e30)
    for i in range(m.points.shape[0]):
        low = wp.min(low, m.points[i])
    lo[0] = low
    counts[0] = m.points.shape[0]
    counts[1] = m.indices.shape[0]
    counts[2] = m.velocities.shape[0]
    first[0] = m.points[m.indices[3]]
    if m.velocities.shape[0] > 0:
        vel[0] = m.velocities[1]


def test_mesh_get_reads_the_mesh_arrays():
    rng = np.random.default_rng(1)
    pts = rng.uniform(-1, 1, size=(5, 3)).astype(np.float32)
    idx = np.array([0, 1, 2, 2, 3, 4], np.int32)
    vels = rng.uniform(-1, 1, size=(5, 3)).astype(np.float32)
    for velocities in (None, vels):
        mesh = wp.Mesh(wp.array(pts, dtype=wp.vec3), wp.array(idx, dtype=wp.int32),
                       velocities=None if velocities is None else wp.array(velocities, dtype=wp.vec3))  # fmt: skip
        lo, counts = wp.zeros(1, dtype=wp.vec3), wp.zeros(3, dtype=int)
        first, vel = wp.zeros(1, dtype=wp.vec3), wp.zeros(1, dtype=wp.vec3)
        wp.launch(_read, 1, inputs=[mesh.id, lo, counts, first, vel])
        np.testing.assert_array_equal(lo.numpy()[0], pts.min(axis=0))
        n_vel = 0 if velocities is None else 5
        np.testing.assert_array_equal(counts.numpy(), [5, 6, n_vel])
        np.testing.assert_array_equal(first.numpy()[0], pts[idx[3]])
        np.testing.assert_array_equal(vel.numpy()[0], 0 if velocities is None else vels[1])
