"""Kernels of the swept-volume helpers: the pseudo signed distance of rigidly moving meshes
(`swept_volume_sdf`, also a kernel-API function of `wp.geometry`), its dense field, and the
posed bounds of the meshes; written against the public API."""

# mypy: ignore-errors
# (kernel source: its annotations are gradloom types, which mypy cannot read)

import gradloom as wp


@wp.func
def _pose_distance(mesh: wp.uint64, p: wp.vec3, max_dist: float, sign_mode: int):
    """Signed (or, for sign_mode 3, unsigned) distance from p to one mesh; max_dist if none."""
    d = max_dist
    if sign_mode == 3:
        q = wp.mesh_query_point_no_sign(mesh, p, max_dist)
        if q.result:
            d = wp.length(p - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    else:
        q = wp.mesh_query_point_sign_normal(mesh, p, max_dist)
        if sign_mode == 1:
            q = wp.mesh_query_point_sign_winding_number(mesh, p, max_dist)
        elif sign_mode == 2:
            q = wp.mesh_query_point_sign_parity(mesh, p, max_dist)
        if q.result:
            d = q.sign * wp.length(p - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    return d


@wp.func
def swept_volume_sdf(point: wp.vec3, mesh_ids: wp.array(dtype=wp.uint64), transforms: wp.array2d(dtype=wp.transform),
                     max_dist: wp.float32, sign_mode: wp.int32):  # fmt: skip
    """min over meshes m and poses s of mesh m's signed distance at the point taken back to its
    rest frame by pose s (the pose maps rest space to world space); not differentiable."""
    best = max_dist
    for m in range(mesh_ids.shape[0]):
        for s in range(transforms.shape[1]):
            local = wp.transform_point(wp.transform_inverse(transforms[m, s]), point)
            best = wp.min(best, _pose_distance(mesh_ids[m], local, max_dist, sign_mode))
    return best


@wp.kernel(enable_backward=False)
def swept_field(mesh_ids: wp.array(dtype=wp.uint64), transforms: wp.array2d(dtype=wp.transform), lower: wp.vec3,
                delta: wp.vec3, max_dist: float, sign_mode: int, field: wp.array3d(dtype=float)):  # fmt: skip
    i, j, k = wp.tid()
    p = lower + wp.cw_mul(delta, wp.vec3(float(i), float(j), float(k)))
    field[i, j, k] = swept_volume_sdf(p, mesh_ids, transforms, max_dist, sign_mode)


@wp.kernel(enable_backward=False)
def posed_corners(box_lo: wp.array(dtype=wp.vec3), box_hi: wp.array(dtype=wp.vec3),
                  transforms: wp.array2d(dtype=wp.transform), out: wp.array3d(dtype=wp.vec3)):  # fmt: skip
    """The 8 corners of mesh m's rest box under pose s: out[m, s, c]."""
    m, s, c = wp.tid()
    lo = box_lo[m]
    hi = box_hi[m]
    x = wp.where(c % 2 == 1, hi[0], lo[0])
    y = wp.where((c // 2) % 2 == 1, hi[1], lo[1])
    z = wp.where(c // 4 == 1, hi[2], lo[2])
    out[m, s, c] = wp.transform_point(transforms[m, s], wp.vec3(x, y, z))
