"""LLVM IR of the BVH build behind `wp.Mesh` and `wp.Bvh` (runtime/geometry/bvh_tree.py).

Five functions, each one serial loop; a primitive's centre is read from float64 centroids
(n x 3), or, in the `tri` variants, computed from a triangle (points, int32 indices, three per
triangle): float32 `(a + b + c) * float32(1/3)` widened to float64, so no centroid array is
written:

- `gl_bvh_bounds(centroids, n, out)`, `gl_bvh_tri_bounds(points, indices, n, out)`: the
  float64 lower and upper corners (6 values) of the centres;
- `gl_bvh_keys(centroids, n, lower, extent, bits, ranks, out)` and `gl_bvh_tri_keys(points,
  indices, ...)`: per centre the sort key `rank << 3 bits | morton`, the Morton code of
  `clip((x - lower) / extent * (2**bits - 1))` with x in the highest bit of each triple (ranks
  may be null: rank 0);
- `gl_bvh_build(keys, order, n, nodes, refs, leaf)`: the binary radix tree over the sorted keys,
  written depth first (types/mesh_layout.py: each node's skip and prim; the boxes are left to the
  refit; an inner node's prim is ~k, k its index among the inner nodes in depth-first order).
  With `refs` (else null), each node's reference in the nearest-first walk's coarser tree
  (types/mesh_layout.py `PAIR_*`): a node over more than `leaf` leaves gets the next record
  index (depth-first order), any other ~(first << WALK_COUNT_BITS |
  count - 1), its leaves' range in key order.
  A node over leaves [a, b) splits where the highest bit in which keys[a] and
  keys[b - 1] differ flips (a binary search), or, when they are equal, where the highest bit of
  the leaf positions a ^ (b - 1) flips; its left child is the next node and its subtree ends at
  position + 2 (b - a) - 1. An explicit stack of ranges holds the right children still to
  write (one per level: at most 64 key bits plus 63 position bits deep).
"""

from __future__ import annotations

from ..types.mesh_layout import MESH_NODE_SIZE, NODE_PRIM, NODE_SKIP, WALK_COUNT_BITS

FUNCTIONS = ("gl_bvh_bounds", "gl_bvh_tri_bounds", "gl_bvh_keys", "gl_bvh_tri_keys",
             "gl_bvh_build")

#: stack entries of gl_bvh_build: one (a, b) pair per level of the deepest possible path
STACK = 136
_THIRD = "0x3FD5555560000000"  # float32(1/3) as LLVM writes a float constant
_INF, _NEG_INF = "0x7FF0000000000000", "0xFFF0000000000000"
# (shift, mask) steps spreading the 21 low bits of a value to every third bit
_SPREAD = ((32, 0x1F00000000FFFF), (16, 0x1F0000FF0000FF), (8, 0x100F00F00F00F00F),
           (4, 0x10C30C30C30C30C3), (2, 0x1249249249249249))


def _centre(tri: bool) -> str:
    """%x0, %x1, %x2: the float64 centre of primitive %i (%i3 = 3 %i): read from %cent, or a
    triangle's centroid, float32 (a + b + c) * float32(1/3), from %points and %indices."""
    if not tri:
        return "".join(f"  %xi{c} = add i64 %i3, {c}\n"
                       f"  %xa{c} = getelementptr double, ptr %cent, i64 %xi{c}\n"
                       f"  %x{c} = load double, ptr %xa{c}, align 8\n" for c in range(3))
    text = ""
    for v in range(3):
        text += (f"  %ix{v} = add i64 %i3, {v}\n"
                 f"  %ia{v} = getelementptr i32, ptr %indices, i64 %ix{v}\n"
                 f"  %iv{v} = load i32, ptr %ia{v}, align 4\n"
                 f"  %iw{v} = sext i32 %iv{v} to i64\n  %ib{v} = mul i64 %iw{v}, 3\n")
        for c in range(3):
            text += (f"  %pi{v}{c} = add i64 %ib{v}, {c}\n"
                     f"  %pa{v}{c} = getelementptr float, ptr %points, i64 %pi{v}{c}\n"
                     f"  %p{v}{c} = load float, ptr %pa{v}{c}, align 4\n")
    for c in range(3):
        text += (f"  %s{c}a = fadd float %p0{c}, %p1{c}\n  %s{c} = fadd float %s{c}a, %p2{c}\n"
                 f"  %m{c} = fmul float %s{c}, {_THIRD}\n  %x{c} = fpext float %m{c} to double\n")
    return text


def _source(tri: bool) -> str:
    return "ptr %points, ptr %indices" if tri else "ptr %cent"


def _bounds(tri: bool) -> str:
    name = "gl_bvh_tri_bounds" if tri else "gl_bvh_bounds"
    text = (f"define void @{name}({_source(tri)}, i64 %n, ptr %out) nounwind {{\nentry:\n"
            "  %empty = icmp sle i64 %n, 0\n  br i1 %empty, label %done, label %loop\n"
            "loop:\n  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]\n")
    for c in range(3):
        text += (f"  %lo{c} = phi double [ {_INF}, %entry ], [ %lo{c}n, %loop ]\n"
                 f"  %hi{c} = phi double [ {_NEG_INF}, %entry ], [ %hi{c}n, %loop ]\n")
    text += "  %i3 = mul i64 %i, 3\n" + _centre(tri)
    for c in range(3):
        text += (f"  %lo{c}n = call double @llvm.minnum.f64(double %lo{c}, double %x{c})\n"
                 f"  %hi{c}n = call double @llvm.maxnum.f64(double %hi{c}, double %x{c})\n")
    text += ("  %i1 = add i64 %i, 1\n  %more = icmp slt i64 %i1, %n\n"
             "  br i1 %more, label %loop, label %store\nstore:\n")
    for c in range(3):
        for k, v in ((c, f"%lo{c}n"), (c + 3, f"%hi{c}n")):
            text += (f"  %o{k} = getelementptr double, ptr %out, i64 {k}\n"
                     f"  store double {v}, ptr %o{k}, align 8\n")
    return text + "  br label %done\ndone:\n  ret void\n}\n"


def _axis(c: int) -> str:
    """%sp{c}: the spread quantised coordinate c of the centre %x{c}."""
    text = (f"  %q{c}a = fsub double %x{c}, %lo{c}\n  %q{c}b = fdiv double %q{c}a, %ext{c}\n"
            f"  %q{c}c = fmul double %q{c}b, %top\n"
            f"  %q{c}p = fcmp oge double %q{c}c, 0.0\n"  # NaN and negatives clip to 0
            f"  %q{c}d = select i1 %q{c}p, double %q{c}c, double 0.0\n"
            f"  %q{c}t = fcmp ole double %q{c}d, %top\n"
            f"  %q{c}e = select i1 %q{c}t, double %q{c}d, double %top\n"
            f"  %q{c}i = fptoui double %q{c}e to i64\n"
            f"  %v{c}_0 = and i64 %q{c}i, 2097151\n")
    for k, (shift, mask) in enumerate(_SPREAD):
        text += (f"  %v{c}_{k}s = shl i64 %v{c}_{k}, {shift}\n"
                 f"  %v{c}_{k}o = or i64 %v{c}_{k}, %v{c}_{k}s\n"
                 f"  %v{c}_{k + 1} = and i64 %v{c}_{k}o, {mask}\n")
    return text + f"  %sp{c} = shl i64 %v{c}_{len(_SPREAD)}, {2 - c}\n"


def _keys(tri: bool) -> str:
    name = "gl_bvh_tri_keys" if tri else "gl_bvh_keys"
    text = (f"define void @{name}({_source(tri)}, i64 %n, ptr %lower, ptr %extent, i64 %bits, "
            "ptr %ranks, ptr %out) nounwind {\nentry:\n")
    for c in range(3):
        text += (f"  %la{c} = getelementptr double, ptr %lower, i64 {c}\n"
                 f"  %lo{c} = load double, ptr %la{c}, align 8\n"
                 f"  %ea{c} = getelementptr double, ptr %extent, i64 {c}\n"
                 f"  %ext{c} = load double, ptr %ea{c}, align 8\n")
    text += ("  %one_b = shl i64 1, %bits\n  %topi = sub i64 %one_b, 1\n"
             "  %top = uitofp i64 %topi to double\n  %rshift = mul i64 %bits, 3\n"
             "  %has_ranks = icmp ne ptr %ranks, null\n  %empty = icmp sle i64 %n, 0\n"
             "  br i1 %empty, label %done, label %loop\n"
             "loop:\n  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]\n  %i3 = mul i64 %i, 3\n")
    text += _centre(tri)
    for c in range(3):
        text += _axis(c)
    return text + (
        "  %ra = getelementptr i64, ptr %ranks, i64 %i\n"
        "  %rsafe = select i1 %has_ranks, ptr %ra, ptr %lower\n"  # a readable address
        "  %rl = load i64, ptr %rsafe, align 8\n"
        "  %r = select i1 %has_ranks, i64 %rl, i64 0\n  %rk = shl i64 %r, %rshift\n"
        "  %k1 = or i64 %sp0, %sp1\n  %k2 = or i64 %k1, %sp2\n  %k3 = or i64 %k2, %rk\n"
        "  %ka = getelementptr i64, ptr %out, i64 %i\n  store i64 %k3, ptr %ka, align 8\n"
        "  %i1 = add i64 %i, 1\n  %more = icmp slt i64 %i1, %n\n"
        "  br i1 %more, label %loop, label %done\ndone:\n  ret void\n}\n")


def _key(name: str, index: str) -> str:
    return (f"  %{name}.a = getelementptr i64, ptr %keys, i64 {index}\n"
            f"  %{name} = load i64, ptr %{name}.a, align 8\n")


def _slot(name: str, index: str) -> str:
    return f"  %{name} = getelementptr i64, ptr %stack, i64 {index}\n"


def _build() -> str:
    text = ("define void @gl_bvh_build(ptr %keys, ptr %order, i64 %n, ptr %nodes, ptr %refs, "
            "i64 %walk_leaf) nounwind {\n"
            f"entry:\n  %stack = alloca [{2 * STACK} x i64], align 8\n"
            "  %has_refs = icmp ne ptr %refs, null\n"
            "  store i64 0, ptr %stack, align 8\n" + _slot("s1", "1") +
            "  store i64 %n, ptr %s1, align 8\n  %empty = icmp sle i64 %n, 0\n"
            "  br i1 %empty, label %done, label %loop\n"
            "loop:\n  %sp = phi i64 [ 1, %entry ], [ %sp_next, %cont ]\n"
            "  %pos = phi i64 [ 0, %entry ], [ %pos1, %cont ]\n"
            "  %kin = phi i32 [ 0, %entry ], [ %kin_next, %cont ]\n"
            "  %nbig = phi i64 [ 0, %entry ], [ %nbig1, %cont ]\n"
            "  %top = sub i64 %sp, 1\n  %ia = shl i64 %top, 1\n  %ib = add i64 %ia, 1\n"
            + _slot("sa", "%ia") + _slot("sb", "%ib") +
            "  %a = load i64, ptr %sa, align 8\n  %b = load i64, ptr %sb, align 8\n"
            "  %cnt = sub i64 %b, %a\n  %twice = shl i64 %cnt, 1\n"
            "  %end = add i64 %pos, %twice\n  %skip = sub i64 %end, 1\n"
            f"  %noff = mul i64 %pos, {MESH_NODE_SIZE}\n"
            "  %node = getelementptr i8, ptr %nodes, i64 %noff\n"
            f"  %nsa = getelementptr i8, ptr %node, i64 {NODE_SKIP}\n"
            "  %skip32 = trunc i64 %skip to i32\n  store i32 %skip32, ptr %nsa, align 4\n"
            f"  %npa = getelementptr i8, ptr %node, i64 {NODE_PRIM}\n" + _ref() +
            "shape:\n  %is_leaf = icmp eq i64 %cnt, 1\n"
            "  br i1 %is_leaf, label %leaf, label %inner\n"
            "leaf:\n  %oa = getelementptr i64, ptr %order, i64 %a\n"
            "  %o = load i64, ptr %oa, align 8\n  %o32 = trunc i64 %o to i32\n"
            "  store i32 %o32, ptr %npa, align 4\n  br label %cont\n"
            "inner:\n  %kinv = xor i32 %kin, -1\n  store i32 %kinv, ptr %npa, align 4\n"
            "  %kin1 = add i32 %kin, 1\n  %last = sub i64 %b, 1\n"
            + _key("ka", "%a") + _key("kl", "%last") +
            "  %x = xor i64 %ka, %kl\n  %same = icmp eq i64 %x, 0\n"
            "  br i1 %same, label %by_index, label %by_key\n"
            + _split() +
            "push:\n  %split = phi i64 [ %hi, %found ], [ %ysplit, %by_index ]\n"
            "  store i64 %split, ptr %sa, align 8\n"  # the top entry becomes [split, b)
            "  %ic = add i64 %ia, 2\n  %id = add i64 %ia, 3\n" + _slot("sc", "%ic")
            + _slot("sd", "%id") +
            "  store i64 %a, ptr %sc, align 8\n  store i64 %split, ptr %sd, align 8\n"
            "  %sp_push = add i64 %sp, 1\n  br label %cont\n"
            "cont:\n  %sp_next = phi i64 [ %top, %leaf ], [ %sp_push, %push ]\n"
            "  %kin_next = phi i32 [ %kin, %leaf ], [ %kin1, %push ]\n"
            "  %pos1 = add i64 %pos, 1\n  %again = icmp sgt i64 %sp_next, 0\n"
            "  br i1 %again, label %loop, label %done\n"
            "done:\n  ret void\n}\n")
    return text


def _ref() -> str:
    """refs[pos] (when refs is given): a record index for a node over more than %walk_leaf leaves
    (%nbig counts them), else ~(a << WALK_COUNT_BITS | cnt - 1); continues at %shape."""
    return ("  %big = icmp sgt i64 %cnt, %walk_leaf\n  %nbig_inc = zext i1 %big to i64\n"
            f"  %nbig1 = add i64 %nbig, %nbig_inc\n  %a4 = shl i64 %a, {WALK_COUNT_BITS}\n"
            "  %cnt1 = sub i64 %cnt, 1\n  %enc = or i64 %a4, %cnt1\n"
            "  %encn = xor i64 %enc, -1\n  %rv = select i1 %big, i64 %nbig, i64 %encn\n"
            "  %rv32 = trunc i64 %rv to i32\n  br i1 %has_refs, label %wref, label %shape\n"
            "wref:\n  %rfa = getelementptr i32, ptr %refs, i64 %pos\n"
            "  store i32 %rv32, ptr %rfa, align 4\n  br label %shape\n")


def _split() -> str:
    """The split of [a, b) with key bits %x = keys[a] ^ keys[b - 1]: by key, the first leaf
    whose key has %x's highest bit (a binary search over [a, last]); by position, when the
    keys are equal. Both end at %push with %split."""
    return (
        "by_key:\n  %xz = call i64 @llvm.ctlz.i64(i64 %x, i1 true)\n"
        "  %xbit = sub i64 63, %xz\n  %mask = shl i64 1, %xbit\n  br label %search\n"
        "search:\n  %lo = phi i64 [ %a, %by_key ], [ %lo1, %probe ]\n"
        "  %hi = phi i64 [ %last, %by_key ], [ %hi1, %probe ]\n"
        "  %gap = sub i64 %hi, %lo\n  %open = icmp sgt i64 %gap, 1\n"
        "  br i1 %open, label %probe, label %found\n"
        "probe:\n  %half = lshr i64 %gap, 1\n  %mid = add i64 %lo, %half\n"
        + _key("km", "%mid") +
        "  %bit = and i64 %km, %mask\n  %set = icmp ne i64 %bit, 0\n"
        "  %hi1 = select i1 %set, i64 %mid, i64 %hi\n"
        "  %lo1 = select i1 %set, i64 %lo, i64 %mid\n  br label %search\n"
        "found:\n  br label %push\n"
        "by_index:\n  %y = xor i64 %a, %last\n"
        "  %yz = call i64 @llvm.ctlz.i64(i64 %y, i1 true)\n  %ybit = sub i64 63, %yz\n"
        "  %ys = lshr i64 %last, %ybit\n  %ysplit = shl i64 %ys, %ybit\n  br label %push\n")


def build_module(triple: str, datalayout: str) -> str:
    """The module of FUNCTIONS for one target."""
    return (f'target triple = "{triple}"\ntarget datalayout = "{datalayout}"\n'
            "declare i64 @llvm.ctlz.i64(i64, i1)\ndeclare double @llvm.minnum.f64(double, double)\n"
            "declare double @llvm.maxnum.f64(double, double)\n"
            + _bounds(False) + _bounds(True) + _keys(False) + _keys(True) + _build())
