"""LLVM IR of the BVH refit behind `wp.Mesh.refit` and `wp.Bvh.refit` (runtime/geometry/bvh_tree.py).

The nodes are stored depth first (types/mesh_layout.py: lower, upper, skip, prim; 32 bytes), so
every child comes after its parent: one loop from the last node to the first sets each leaf's
box from its primitive and each inner node's box from its children (the left child is the next
node, the right one sits at the left child's skip pointer). A leaf's primitive is a box
(`lowers[prim]`, `uppers[prim]`) or, with a points pointer, a triangle (`indices[3 prim + k]`
into `points`) whose box is widened by one float32 step on every side (slab and distance tests
round; the box must still hold the triangle); the triangles' edge lengths are summed on the way
(the mesh's mean edge length scales `mesh_query_point_sign_normal`'s epsilon). With a pairs
pointer (and the build's walk references `refs`), each inner node above the walk's leaves has its
children's boxes and references copied to its pair record (types/mesh_layout.py: `PAIR_*`, at
index refs[node]), which the nearest-first walk reads; with `leaf_tris`, each triangle's corners
and index are copied to its record in key order (`LEAF_TRI_*`: leaves come in key order in
depth-first order, so the loop from the last node counts them down).
"""

from __future__ import annotations

from ..types.mesh_layout import (
    LEAF_TRI_CORNERS,
    LEAF_TRI_ID,
    LEAF_TRI_SIZE,
    MESH_NODE_SIZE,
    NODE_LOWER,
    NODE_PRIM,
    NODE_SKIP,
    NODE_UPPER,
    PAIR_BOXES,
    PAIR_LEFT,
    PAIR_RIGHT,
    PAIR_SIZE,
)

#: `gl_bvh_refit(nodes, count, lowers, uppers, points, indices, edge_sum, pairs, refs)`: points
#: null for box leaves; with triangles, the double at edge_sum gains every triangle's three edge
#: lengths; pairs null or the pair records to fill (refs: each node's walk reference);
#: leaf_tris null or the walk's triangle records to fill; leaf_verts null or the triangles'
#: vertex indices in key order (3 int32 each), read instead of `indices`
FUNCTIONS = ("gl_bvh_refit",)


def _f(name: str, ptr: str, offset: str) -> str:
    """Load the float at ptr + offset (an i64 value or constant) into %name."""
    return (f"  %{name}.a = getelementptr i8, ptr {ptr}, i64 {offset}\n"
            f"  %{name} = load float, ptr %{name}.a, align 4\n")


def _store(name: str, ptr: str, offset: int, value: str) -> str:
    return (f"  %{name}.s = getelementptr i8, ptr {ptr}, i64 {offset}\n"
            f"  store float {value}, ptr %{name}.s, align 4\n")


def _minmax(out: str, a: str, b: str, less: bool) -> str:
    pred = "olt" if less else "ogt"
    return (f"  %{out}.c = fcmp {pred} float {a}, {b}\n"
            f"  %{out} = select i1 %{out}.c, float {a}, float {b}\n")


def _step(out: str, x: str, down: bool) -> str:
    """%out = the float next to %x towards -inf (down) or +inf."""
    towards_sign = "-2147483647" if down else "1"  # 0x80000001 (-tiny), 0x00000001 (+tiny)
    grow, shrink = ("sub", "add") if down else ("add", "sub")
    return (f"  %{out}.b = bitcast float {x} to i32\n"
            f"  %{out}.m = and i32 %{out}.b, 2147483647\n"
            f"  %{out}.z = icmp eq i32 %{out}.m, 0\n"
            f"  %{out}.p = icmp sge i32 %{out}.b, 0\n"
            f"  %{out}.u = {grow} i32 %{out}.b, 1\n"
            f"  %{out}.d = {shrink} i32 %{out}.b, 1\n"
            f"  %{out}.n = select i1 %{out}.p, i32 %{out}.u, i32 %{out}.d\n"
            f"  %{out}.r = select i1 %{out}.z, i32 {towards_sign}, i32 %{out}.n\n"
            f"  %{out} = bitcast i32 %{out}.r to float\n")


def _box_leaf() -> str:
    text = "box_leaf:\n  %bo = mul i64 %prim64, 12\n"
    for c in range(3):
        text += f"  %bo{c} = add i64 %bo, {4 * c}\n"
        text += _f(f"xl{c}", "%lowers", f"%bo{c}") + _f(f"xh{c}", "%uppers", f"%bo{c}")
        text += _store(f"bsl{c}", "%node", NODE_LOWER + 4 * c, f"%xl{c}")
        text += _store(f"bsh{c}", "%node", NODE_UPPER + 4 * c, f"%xh{c}")
    return text + "  br label %next\n"


def _tri_leaf() -> str:
    # the corners' indices: leaf_verts[3 (key position) + k] (read in order) when given, else
    # indices[3 prim + k] (read at random: most of the refit's time, measured)
    text = ("tri_leaf:\n  %t3 = mul i64 %prim64, 3\n"
            "  %tsi = getelementptr i32, ptr %indices, i64 %t3\n"
            "  %l3 = mul i64 %lcm, 3\n  %tsl = getelementptr i32, ptr %leaf_verts, i64 %l3\n"
            "  %tsrc = select i1 %has_lv, ptr %tsl, ptr %tsi\n")
    for v in range(3):
        text += (f"  %tia{v} = getelementptr i32, ptr %tsrc, i64 {v}\n"
                 f"  %tv{v} = load i32, ptr %tia{v}, align 4\n"
                 f"  %tv64{v} = sext i32 %tv{v} to i64\n"
                 f"  %to{v} = mul i64 %tv64{v}, 12\n")
        for c in range(3):
            text += f"  %to{v}{c} = add i64 %to{v}, {4 * c}\n"
            text += _f(f"p{v}{c}", "%points", f"%to{v}{c}")
    for c in range(3):
        text += _minmax(f"tl{c}a", f"%p0{c}", f"%p1{c}", True)
        text += _minmax(f"tl{c}", f"%tl{c}a", f"%p2{c}", True)
        text += _minmax(f"th{c}a", f"%p0{c}", f"%p1{c}", False)
        text += _minmax(f"th{c}", f"%th{c}a", f"%p2{c}", False)
        text += _step(f"wl{c}", f"%tl{c}", True) + _step(f"wh{c}", f"%th{c}", False)
        text += _store(f"tsl{c}", "%node", NODE_LOWER + 4 * c, f"%wl{c}")
        text += _store(f"tsh{c}", "%node", NODE_UPPER + 4 * c, f"%wh{c}")
    return text + _edges() + "  br i1 %has_lt, label %lt_copy, label %next\n" + _leaf_copy()


def _leaf_copy() -> str:
    """Copy the triangle's corners and index to its walk record in key order (LEAF_TRI_*)."""
    text = (f"lt_copy:\n  %lto = mul i64 %lcm, {LEAF_TRI_SIZE}\n"
            "  %ltr = getelementptr i8, ptr %leaf_tris, i64 %lto\n")
    for v in range(3):
        for c in range(3):
            text += _store(f"lt{v}{c}", "%ltr", LEAF_TRI_CORNERS + 12 * v + 4 * c, f"%p{v}{c}")
    return text + (f"  %ltia = getelementptr i8, ptr %ltr, i64 {LEAF_TRI_ID}\n"
                   "  store i32 %prim, ptr %ltia, align 4\n  br label %next\n")


def _edges() -> str:
    """Add the triangle's three edge lengths (float32, summed in float64) to *edge_sum."""
    text = ""
    for e in range(3):
        a, b = e, (e + 2) % 3
        for c in range(3):
            text += (f"  %ed{e}{c} = fsub float %p{a}{c}, %p{b}{c}\n"
                     f"  %eq{e}{c} = fmul float %ed{e}{c}, %ed{e}{c}\n")
        text += (f"  %es{e}a = fadd float %eq{e}0, %eq{e}1\n"
                 f"  %es{e} = fadd float %es{e}a, %eq{e}2\n"
                 f"  %el{e} = call float @llvm.sqrt.f32(float %es{e})\n"
                 f"  %ex{e} = fpext float %el{e} to double\n")
    return text + ("  %eacc = load double, ptr %edge_sum, align 8\n"
                   "  %eacc1 = fadd double %eacc, %ex0\n"
                   "  %eacc2 = fadd double %eacc1, %ex1\n"
                   "  %eacc3 = fadd double %eacc2, %ex2\n"
                   "  store double %eacc3, ptr %edge_sum, align 8\n")


def _inner() -> str:
    text = (f"inner:\n  %left = getelementptr i8, ptr %node, i64 {MESH_NODE_SIZE}\n"
            f"  %lsa = getelementptr i8, ptr %left, i64 {NODE_SKIP}\n"
            "  %lskip = load i32, ptr %lsa, align 4\n"
            "  %lskip64 = sext i32 %lskip to i64\n"
            f"  %roff = mul i64 %lskip64, {MESH_NODE_SIZE}\n"
            "  %right = getelementptr i8, ptr %nodes, i64 %roff\n")
    for c in range(3):
        for side, off, less in (("l", NODE_LOWER, True), ("h", NODE_UPPER, False)):
            o = str(off + 4 * c)
            text += _f(f"a{side}{c}", "%left", o) + _f(f"b{side}{c}", "%right", o)
            text += _minmax(f"m{side}{c}", f"%a{side}{c}", f"%b{side}{c}", less)
            text += _store(f"ms{side}{c}", "%node", off + 4 * c, f"%m{side}{c}")
    return text + "  br i1 %has_pairs, label %pair_check, label %next\n" + _pair()


def _pair() -> str:
    """Copy both children's boxes and references (refs[child]) to record refs[node], when
    that is a record index (the node is above the walk's leaves)."""
    text = ("pair_check:\n  %rsa = getelementptr i32, ptr %refs, i64 %k\n"
            "  %rself = load i32, ptr %rsa, align 4\n  %rbig = icmp sge i32 %rself, 0\n"
            "  br i1 %rbig, label %pair, label %next\n"
            "pair:\n  %kpair = sext i32 %rself to i64\n"
            f"  %poff = mul i64 %kpair, {PAIR_SIZE}\n"
            "  %prec = getelementptr i8, ptr %pairs, i64 %poff\n  %kleft = add i64 %k, 1\n")
    values = [f"%a{side}{c}" for side in "lh" for c in range(3)] + \
             [f"%b{side}{c}" for side in "lh" for c in range(3)]
    for j, v in enumerate(values):
        text += _store(f"pb{j}", "%prec", PAIR_BOXES + 4 * j, v)
    for name, pos, off in (("pl", "%kleft", PAIR_LEFT), ("pr", "%lskip64", PAIR_RIGHT)):
        text += (f"  %{name}a = getelementptr i32, ptr %refs, i64 {pos}\n"
                 f"  %{name}r = load i32, ptr %{name}a, align 4\n"
                 f"  %{name}s = getelementptr i8, ptr %prec, i64 {off}\n"
                 f"  store i32 %{name}r, ptr %{name}s, align 4\n")
    return text + "  br label %next\n"


def refit_module(triple: str, datalayout: str) -> str:
    """The module of FUNCTIONS for one target."""
    head = ("define void @gl_bvh_refit(ptr %nodes, i64 %count, ptr %lowers, ptr %uppers, "
            "ptr %points, ptr %indices, ptr %edge_sum, ptr %pairs, ptr %refs, ptr %leaf_tris, "
            "ptr %leaf_verts) "
            "nounwind {\n"
            "entry:\n  %empty = icmp sle i64 %count, 0\n"
            "  %has_pairs = icmp ne ptr %pairs, null\n  %has_lt = icmp ne ptr %leaf_tris, null\n"
            "  %has_lv = icmp ne ptr %leaf_verts, null\n"
            "  %count1 = add i64 %count, 1\n  %nleaves = lshr i64 %count1, 1\n"
            "  br i1 %empty, label %done, label %loop\n"
            "loop:\n  %i = phi i64 [ %count, %entry ], [ %k, %next ]\n"
            "  %lc = phi i64 [ %nleaves, %entry ], [ %lc1, %next ]\n"  # leaves not yet seen
            "  %lcm = sub i64 %lc, 1\n"  # this leaf's position in key order
            "  %k = sub i64 %i, 1\n"
            f"  %noff = mul i64 %k, {MESH_NODE_SIZE}\n"
            "  %node = getelementptr i8, ptr %nodes, i64 %noff\n"
            f"  %pa = getelementptr i8, ptr %node, i64 {NODE_PRIM}\n"
            "  %prim = load i32, ptr %pa, align 4\n"
            "  %prim64 = sext i32 %prim to i64\n"
            "  %is_leaf = icmp sge i32 %prim, 0\n"
            "  br i1 %is_leaf, label %leaf, label %inner\n"
            "leaf:\n  %tris = icmp ne ptr %points, null\n"
            "  br i1 %tris, label %tri_leaf, label %box_leaf\n")
    tail = ("next:\n  %lc1 = select i1 %is_leaf, i64 %lcm, i64 %lc\n"
            "  %more = icmp sgt i64 %k, 0\n"
            "  br i1 %more, label %loop, label %done\n"
            "done:\n  ret void\n}\n")
    return (f'target triple = "{triple}"\ntarget datalayout = "{datalayout}"\n'
            "declare float @llvm.sqrt.f32(float)\n" + head + _box_leaf() + _tri_leaf() + _inner() + tail)
