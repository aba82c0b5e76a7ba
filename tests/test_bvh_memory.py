"""runtime/geometry/bvh_memory.py: a tree's arrays share one mapping, which goes back to the pool
when the tree dies (and only then) and serves the next tree of about that size; a mesh dropped
without a reference cycle frees its tree at once, so rebuilding a mesh reuses that memory."""

import gc

import numpy as np
from test_mesh import brute_closest

import gradloom as wp
from gradloom.runtime.geometry import bvh_memory


class _Owner:
    pass


def test_arrays_are_aligned_and_the_mapping_is_reused_only_after_its_owner_dies() -> None:
    gc.collect()
    sizes = [3 << 20, 100, 5 << 19]
    a = _Owner()
    parts = bvh_memory.arena(a, sizes)
    assert [p.nbytes for p in parts] == sizes
    assert all(p.ctypes.data % 64 == 0 for p in parts)
    start = parts[0].ctypes.data
    parts[0][:] = 7
    b = _Owner()
    other = bvh_memory.arena(b, sizes)[0]
    assert other.ctypes.data != start  # a's mapping is still in use
    del parts, a
    c = _Owner()
    again = bvh_memory.arena(c, sizes)[0]
    assert again.ctypes.data == start  # handed back when a died, and reused
    del other, b, again, c


def test_small_trees_take_plain_memory() -> None:
    part = bvh_memory.arena(_Owner(), [1000])[0]
    assert part.nbytes == 1000 and part.ctypes.data % 64 == 0


def test_rebuilt_meshes_reuse_memory_and_answer_for_their_own_points() -> None:
    rng = np.random.default_rng(0)
    tris = rng.permutation(60000).astype(np.int32).reshape(-1, 3)  # separate triangles
    ind = wp.array(tris.reshape(-1), dtype=wp.int32)

    @wp.kernel
    def closest(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        q = wp.mesh_query_point_no_sign(mesh, xs[i], 1.0e6)
        out[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)

    x = rng.normal(size=(20, 3)).astype(np.float32) * 3
    xs, cps = wp.array(x, dtype=wp.vec3), wp.zeros(20, dtype=wp.vec3)
    for shift in (0.0, 100.0, 0.0):  # the second mesh lies far away: its own faces must answer
        pts = rng.normal(size=(60000, 3)).astype(np.float32) + np.float32(shift)
        mesh = wp.Mesh(wp.array(pts, dtype=wp.vec3), ind)
        wp.launch(closest, dim=20, inputs=[mesh.id, xs, cps])
        got = np.linalg.norm(cps.numpy() - x, axis=1)
        want = [np.linalg.norm(brute_closest(q, pts, tris)[0] - q) for q in x.astype(np.float64)]
        np.testing.assert_allclose(got, want, rtol=1e-5)
        del mesh
