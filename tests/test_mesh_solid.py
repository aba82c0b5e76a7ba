"""mesh_query_point's closest-face sign on meshes that bound a solid (runtime/geometry/mesh_solid.py).

The certificate accepts closed, outward, star-shaped meshes (a UV sphere with repeated pole
vertices as Warp's mcgp example builds it, a bumpy sphere, a box) and refuses inward, open,
nested, hollow, overlapping, torus-shaped and doubly covering ones. On every mesh the signs equal
the three rays' (the same mesh after a refit, which turns the face path off) for points far
from the surface, near it and on it, and warp-lang's for points clear of it; forcing the face
path onto nested spheres changes the answer (the certificate is what keeps it exact); a refit
after the check turns the path off.
"""

from typing import Any

import numpy as np
import pytest
from test_mesh_sign import closed_box

import gradloom as wp
from gradloom.runtime.geometry import mesh_solid
from gradloom.types.mesh_layout import MESH_SOLID_TOL


def uv_sphere(lat: int = 16, lon: int = 32, r: Any = 1.0, center: Any = (0.0, 0.0, 0.0)
              ) -> tuple[np.ndarray, np.ndarray]:
    """Warp's mcgp sphere: every ring has lon vertices, the poles too (lon copies each, the
    south pole's not quite equal: sin(pi) != 0), two triangles per quad, outward."""
    th, ph = np.meshgrid(np.pi * np.arange(lat + 1) / lat, 2 * np.pi * np.arange(lon) / lon,
                         indexing="ij")
    rad = r(th, ph) if callable(r) else r
    pts = np.stack([rad * np.sin(th) * np.cos(ph), rad * np.sin(th) * np.sin(ph),
                    rad * np.cos(th)], -1).reshape(-1, 3) + np.asarray(center)
    i, j = np.meshgrid(np.arange(lat), np.arange(lon), indexing="ij")
    v0, v1 = i * lon + j, i * lon + (j + 1) % lon
    v2, v3 = v0 + lon, v1 + lon
    tris = np.stack([v0, v2, v1, v1, v2, v3], -1).reshape(-1, 3)
    return pts.astype(np.float32), tris.astype(np.int32)


def torus(n: int = 24, m: int = 12) -> tuple[np.ndarray, np.ndarray]:
    u, v = np.meshgrid(2 * np.pi * np.arange(n) / n, 2 * np.pi * np.arange(m) / m, indexing="ij")
    pts = np.stack([(1 + 0.4 * np.cos(v)) * np.cos(u), (1 + 0.4 * np.cos(v)) * np.sin(u),
                    0.4 * np.sin(v)], -1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")
    a, b = i * m + j, i * m + (j + 1) % m
    c, d = ((i + 1) % n) * m + j, ((i + 1) % n) * m + (j + 1) % m
    return pts.astype(np.float32), np.stack([a, c, b, b, c, d], -1).reshape(-1, 3).astype(np.int32)


def join(*meshes: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    pts, tris, base = [], [], 0
    for p, t in meshes:
        pts.append(p)
        tris.append(t + base)
        base += len(p)
    return np.concatenate(pts), np.concatenate(tris).astype(np.int32)


def flip(mesh: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return mesh[0], np.ascontiguousarray(mesh[1][:, ::-1])


SOLID = {
    "uv sphere": uv_sphere(),
    "bumpy sphere": uv_sphere(24, 48, lambda th, ph: 1.0 + 0.12 * np.sin(3 * th) * np.cos(4 * ph)),
    "box": closed_box(),
}
NOT_SOLID = {
    "inward": flip(uv_sphere()),
    "open": (uv_sphere()[0], uv_sphere()[1][:-40]),
    "nested": join(uv_sphere(), uv_sphere(r=0.5)),
    "hollow": join(uv_sphere(), flip(uv_sphere(r=0.5))),
    "overlapping": join(uv_sphere(), uv_sphere(center=(0.6, 0.0, 0.0))),
    "apart": join(uv_sphere(), uv_sphere(center=(3.0, 0.0, 0.0))),
    "torus": torus(),
}


@wp.kernel
def signs(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.mesh_query_point(mesh, xs[i], 1.0e6).sign


def make(mesh: tuple[np.ndarray, np.ndarray]) -> Any:
    return wp.Mesh(points=wp.array(mesh[0], dtype=wp.vec3),
                   indices=wp.array(mesh[1].ravel(), dtype=wp.int32))


def tolerance(m: Any) -> float:
    return float(m._desc[MESH_SOLID_TOL:MESH_SOLID_TOL + 4].view(np.float32)[0])


def run(m: Any, xs: np.ndarray) -> np.ndarray:
    out = wp.zeros(len(xs), dtype=float)
    wp.launch(signs, dim=len(xs), inputs=[m.id, wp.array(xs, dtype=wp.vec3), out])
    return out.numpy()


def query_points(mesh: tuple[np.ndarray, np.ndarray], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Points in the mesh's box and beyond, and points on and near its faces (offsets along
    the face normal from 0 to 1e-2): (points, whether each is clear of the surface)."""
    pts, tris = mesh
    rng = np.random.default_rng(seed)
    lo, hi = pts.min(0), pts.max(0)
    far = rng.uniform(lo - 0.4 * (hi - lo), hi + 0.4 * (hi - lo), (1500, 3))
    f = rng.integers(0, len(tris), 600)
    w = rng.dirichlet(np.ones(3), 600)
    tri = pts[tris[f]].astype(np.float64)
    on = np.einsum("ik,ikc->ic", w, tri)
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-30)
    off = rng.choice([0.0, 1e-6, -1e-6, 1e-4, -1e-4, 1e-2, -1e-2], 600)
    near = on + off[:, None] * n
    xs = np.concatenate([far, near]).astype(np.float32)
    clear = np.concatenate([np.ones(len(far), bool), np.abs(off) >= 1e-2])
    return xs, clear


@pytest.mark.parametrize("name", [*SOLID, *NOT_SOLID])
def test_faces_give_the_rays_answer(name: str) -> None:
    mesh = {**SOLID, **NOT_SOLID}[name]
    xs, _ = query_points(mesh, 3)
    m = make(mesh)
    got = run(m, xs)
    assert (tolerance(m) > 0) == (name in SOLID)
    m.refit()  # after the check: the rays decide
    assert tolerance(m) == 0.0
    np.testing.assert_array_equal(got, run(m, xs))


@pytest.mark.parametrize("name", [*SOLID, "nested", "torus"])
def test_signs_match_warp_lang(name: str) -> None:
    warp = pytest.importorskip("warp")
    warp.config.quiet = True
    mesh = {**SOLID, **NOT_SOLID}[name]
    xs, clear = query_points(mesh, 4)
    got = run(make(mesh), xs)

    @warp.kernel
    def wsigns(mesh: warp.uint64, xs: warp.array(dtype=warp.vec3), out: warp.array(dtype=float)):
        i = warp.tid()
        out[i] = warp.mesh_query_point(mesh, xs[i], 1.0e6).sign

    with warp.ScopedDevice("cpu"):
        wm = warp.Mesh(points=warp.array(mesh[0], dtype=warp.vec3),
                       indices=warp.array(mesh[1].ravel(), dtype=warp.int32))
        out = warp.zeros(len(xs), dtype=float)
        warp.launch(wsigns, dim=len(xs), inputs=[wm.id, warp.array(xs, dtype=warp.vec3), out])
    np.testing.assert_array_equal(got[clear], out.numpy()[clear])


def test_the_certificate_is_what_keeps_it_exact() -> None:
    """Nested outward spheres: between them, nearer the inner one, the rays (reaching the outer
    one) vote inside; the face path, forced on, would answer outside."""
    m = make(NOT_SOLID["nested"])
    xs = np.array([[0.58, 0.05, 0.07], [0.03, 0.6, -0.06]], np.float32)  # inside faces
    rays = run(m, xs)
    np.testing.assert_array_equal(rays, [-1.0, -1.0])
    m._desc[MESH_SOLID_TOL:MESH_SOLID_TOL + 4] = np.frombuffer(np.float32(1e-4).tobytes(), np.uint8)
    np.testing.assert_array_equal(run(m, xs), [1.0, 1.0])


def test_refit_before_the_first_use_keeps_the_check() -> None:
    m = make(SOLID["uv sphere"])
    m.refit()
    run(m, np.zeros((1, 3), np.float32))
    assert tolerance(m) > 0


def test_a_double_cover_is_refused() -> None:
    """Every triangle twice: all behind-the-centroid tests pass, the solid angles sum to 8 pi."""
    pts, tris = uv_sphere(8, 12)
    p = pts.astype(np.float64)
    tri = p[tris]
    keep = mesh_solid._sliver_ratio(tri) > 1e-3
    assert mesh_solid._star_shaped(tri[keep], 2.0)
    assert not mesh_solid._star_shaped(np.concatenate([tri[keep], tri[keep]]), 2.0)
