"""Memory in the SIMD thread loop: loads and stores of W threads at once, read-modify-writes of
elements no two lanes share, and the lane-wise adjoint stack (codegen/lanes.py runs the loop;
codegen/lane_log.py handles memory lanes share).

An access whose offset is an element index `tid + c` times the array's element size reads one
window of consecutive elements (a plain or masked vector load, lanes picked out of it by
shuffles, codegen/lane_shuffles.py: `vec3` components from three consecutive floats per lane);
any other access is a gather or scatter. Every access under a lane mask is masked, so an
inactive lane touches nothing, as its thread would not have.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..abi import STATUS_STACK_FULL, STATUS_THREAD
from ..ir.nodes import Op, Var
from ..ir.prims import PRIMS, Effect
from ..types import ScalarType
from .lane_shuffles import LaneShuffles
from .llvm_types import literal, mem_type, reg_type

_MANGLE = {"float": "f32", "double": "f64", "half": "f16", "ptr": "p0"}
#: bytes of each memory type a lane access moves
#: bytes of one cache line (x86-64 and AArch64 CPUs alike): prefetches go line by line
CACHE_LINE = 64
_BYTES = {"i8": 1, "i16": 2, "half": 2, "i32": 4, "float": 4, "i64": 8, "double": 8, "ptr": 8}


def mangle(ty: str) -> str:
    return _MANGLE.get(ty, ty)


@dataclass(frozen=True)
class Window:
    """W lanes' elements inside one run of `n` consecutive values of the accessed type from
    `start`; lane l's value is element `picks[l]`."""

    start: str
    n: int
    per: int
    picks: tuple[int, ...]
    reverse: bool
    #: what names the window's place: its array, lane 0's offset (an SSA name) and the shift
    place: tuple[int, str, int] = (0, "", 0)

    def lane_of(self, e: int) -> int:
        k = e // self.per
        return self.n // self.per - 1 - k if self.reverse else k


#: bytes of a lane vector's element type in memory (mem_type's names)
_BYTES = {"i8": 1, "i16": 2, "half": 2, "bfloat": 2, "i32": 4, "float": 4, "i64": 8,
          "double": 8}


class NotWindows(Exception):
    """A loop of two vectors of threads per trip (`windows_only`) met an access other than a
    window: codegen/entry_cpu.py emits one vector per trip instead."""


class LaneMemory(LaneShuffles):
    """The memory primitives' lane rules (a mixin of the CPU kernel emitter)."""

    #: the loop runs two vectors of threads per trip (codegen/lanes.py `interleaves`), which
    #: keeps every result only where each access is a window and no lanes add into one element
    windows_only: bool = False
    mask: str | None
    loop_depth: int
    #: how many vectors of threads ahead windows prefetch (0: none); window places prefetched
    prefetch_vectors: int
    prefetched: set[tuple[int, str, int]]
    private_adds: frozenset[int]
    #: argument offsets of the pointers whose whole-vector stores skip the cache (a gradient
    #: an adjoint writes whole, too large to be read again from it: pipeline.Variant.FRESH),
    #: their alias metadata, and whether a store did (the entry then ends with a fence)
    streamed: frozenset[int] = frozenset()
    streamed_md: frozenset[str] = frozenset()
    streams: bool = False
    #: argument offset of an array's data or gradient pointer -> its element size
    elem_sizes: dict[int, int]

    if TYPE_CHECKING:
        def root_offset(self, p: Var) -> int | None: ...
        def permutation(self, s: Op) -> tuple[str, str]: ...
        def emit_scalar_op(self, s: Op) -> None: ...

    def setup_alias_scopes(self, roots: tuple[int, ...]) -> list[str]:
        """One alias scope per array pointer the SIMD loop accesses (the entry checked that
        written arrays overlap nothing else): the metadata lines of the module."""
        first = 10
        scopes = {r: first + 1 + k for k, r in enumerate(roots)}
        lines = [f'!{first} = distinct !{{!{first}, !"gl.lanes"}}']
        lines += [f"!{n} = distinct !{{!{n}, !{first}}}" for n in scopes.values()]
        nxt = first + 1 + len(roots)
        self.alias_md: dict[int, str] = {}
        for r, n in scopes.items():
            others = ", ".join(f"!{m}" for q, m in scopes.items() if q != r)
            lines.append(f"!{nxt} = !{{!{n}}}")
            lines.append(f"!{nxt + 1} = !{{{others}}}")
            self.alias_md[r] = f", !alias.scope !{nxt}, !noalias !{nxt + 1}"
            nxt += 2
        self.streamed_md = frozenset(self.alias_md[r] for r in self.streamed
                                     if r in self.alias_md)
        return lines

    def scope_of(self, s: Op) -> str:
        """The alias metadata of an access through the op's pointer ("" if none)."""
        root = self.root_offset(s.args[0])
        return self.alias_md.get(root, "") if root is not None else ""

    # -- where W lanes access memory -------------------------------------------------------

    def window(self, s: Op, t: ScalarType) -> Window | None:
        base, off, z = s.args[0], s.args[1], t.size
        aff = self.affine.get(off.id)
        root = self.root_offset(base)
        size = self.elem_sizes.get(root) if root is not None else None
        if (aff is None or not aff.scaled or size is None or abs(aff.stride) != size
                or self.is_varying(base) or size % z):
            return None
        comp = aff.const_off + int(s.attr or 0)
        if comp < 0 or comp + z > size or comp % z:
            return None
        per, f = size // z, self.f
        first = f.fresh("%lwin")
        shift = -aff.const_off - (0 if aff.stride > 0 else (self.width - 1) * size)
        f.emit(f"{first} = add i64 {aff.lane0}, {shift}")
        start = f.fresh("%lwin")
        f.emit(f"{start} = getelementptr i8, ptr {self.names[base.id]}, i64 {first}")
        lanes = range(self.width) if aff.stride > 0 else range(self.width - 1, -1, -1)
        return Window(start, per * self.width, per, tuple(k * per + comp // z for k in lanes),
                      aff.stride < 0, (base.id, aff.lane0, shift))

    def pointers(self, s: Op) -> str:
        """The W addresses of a gather or scatter."""
        element, offset = self.element_pointers(s)
        if offset:
            moved = self.f.fresh("%lptr")
            self.f.emit(f"{moved} = getelementptr i8, {self.vty('ptr')} {element}, i64 {offset}")
            return moved
        return element

    def element_pointers(self, s: Op) -> tuple[str, int]:
        """The W addresses of an access without its constant byte offset (a vector's
        component), and that offset: the components of one element share the first."""
        base, f = s.args[0], self.f
        out = f.fresh("%lptr")
        src = (f"{self.vty('ptr')} {self.vec(base)}" if self.is_varying(base)
               else f"ptr {self.names[base.id]}")
        f.emit(f"{out} = getelementptr i8, {src}, {self.vty('i64')} {self.va(s, 1)}")
        return out, int(s.attr or 0)

    def full_mask(self) -> str:
        return self.mask or "splat (i1 true)"

    def chunk_mask(self, w: Window, k: int, only: set[int] | None = None) -> str | None:
        """The mask of the window's k-th run of W values: the lane mask spread over each
        lane's elements (`only`: just the elements at these positions inside each lane's
        run); None when every element is on."""
        elems = range(k * self.width, (k + 1) * self.width)
        spread = None if self.mask is None else self.shuffle(
            self.mask, self.width, "i1", [w.lane_of(e) for e in elems])
        if only is None:
            return spread
        hits = "<" + ", ".join(f"i1 {'true' if e % w.per in only else 'false'}"
                               for e in elems) + ">"
        if spread is None:
            return hits
        out = self.f.fresh("%lwm")
        self.f.emit(f"{out} = and {self.vty('i1')} {spread}, {hits}")
        return out

    # -- loads and stores ------------------------------------------------------------------

    def lane_read(self, s: Op, t: ScalarType) -> str:
        """The W values at the op's addresses (a vector of t's register type)."""
        mt = mem_type(t)
        w = self.window(s, t)
        if w is None:
            raw = self.gather(self.pointers(s), mt, t.size, self.scope_of(s))
        else:
            chunks = self.window_chunks(w, mt, t.size, self.scope_of(s))
            raw = self.pick(chunks, mt, list(w.picks))
        if t.kind != "b":
            return raw
        out = self.f.fresh("%lbool")
        self.f.emit(f"{out} = icmp ne {self.vty('i8')} {raw}, zeroinitializer")
        return out

    def window_chunks(self, w: Window, mt: str, align: int, md: str) -> list[str]:
        """The whole window as vectors of W values each (masked to the active lanes'
        elements): one load per vector register, where a single wide load would leave LLVM
        to split the shuffles that pick the lanes out of it (`pick`), which it did with
        scalar inserts through the stack in long kernels (neo-Hookean)."""
        self.prefetch(w, align, write=False)
        out, width = [], self.width
        for k in range(w.n // width):
            p = self.f.fresh("%lchunk")
            self.f.emit(f"{p} = getelementptr i8, ptr {w.start}, i64 {k * width * align}")
            out.append(self.vector_load(p, width, mt, align, self.chunk_mask(w, k), md))
        return out

    def vector_load(self, p: str, n: int, mt: str, align: int, mask: str | None,
                    md: str) -> str:
        """n consecutive values at p: a plain load, or a masked one under an <n x i1> mask."""
        vt, f = f"<{n} x {mt}>", self.f
        out = f.fresh("%lwide")
        if mask is None:
            f.emit(f"{out} = load {vt}, ptr {p}, align {align}{md}")
            return out
        fn = self.intrinsic("masked.load", f"v{n}{mangle(mt)}.p0", vt, f"ptr, <{n} x i1>, {vt}")
        f.emit(f"{out} = call {vt} @{fn}(ptr align {align} {p}, <{n} x i1> {mask}, "
               f"{vt} poison){md}")
        return out

    def vector_store(self, data: str, p: str, n: int, mt: str, align: int, mask: str | None,
                     md: str) -> None:
        """Store n consecutive values at p: a plain store, or a masked one."""
        vt = f"<{n} x {mt}>"
        if mask is None:
            if md and md in self.streamed_md:
                self.streamed_store(vt, data, p, n * _BYTES.get(mt, 0), align, md)
            else:
                self.f.emit(f"store {vt} {data}, ptr {p}, align {align}{md}")
            return
        fn = self.intrinsic("masked.store", f"v{n}{mangle(mt)}.p0", "void",
                            f"{vt}, ptr, <{n} x i1>")
        self.f.emit(f"call void @{fn}({vt} {data}, ptr align {align} {p}, <{n} x i1> {mask})"
                    f"{md}")

    def streamed_store(self, vt: str, data: str, p: str, size: int, align: int, md: str
                       ) -> None:
        """A whole vector into a streamed array: non-temporal (!5, the line written without
        being read for ownership) where p is aligned to the vector (64 bytes at most: x86
        streams only aligned vectors; an unaligned one would become 8-byte stores), else
        plain. The windows of a loop share their alignment, so the branch is predicted."""
        line = min(size, 64)
        if line < 32 or line & (line - 1):
            self.f.emit(f"store {vt} {data}, ptr {p}, align {align}{md}")
            return
        f = self.f
        at, low, ok = f.fresh("%lsta"), f.fresh("%lstl"), f.fresh("%lsto")
        nt, plain, done = f.fresh("lstn"), f.fresh("lstp"), f.fresh("lstd")
        f.emit(f"{at} = ptrtoint ptr {p} to i64")
        f.emit(f"{low} = and i64 {at}, {line - 1}")
        f.emit(f"{ok} = icmp eq i64 {low}, 0")
        f.emit(f"br i1 {ok}, label %{nt}, label %{plain}")
        f.start_block(nt)
        f.emit(f"store {vt} {data}, ptr {p}, align {line}{md}, !nontemporal !5")
        f.emit(f"br label %{done}")
        f.start_block(plain)
        f.emit(f"store {vt} {data}, ptr {p}, align {align}{md}")
        f.emit(f"br label %{done}")
        f.start_block(done)
        self.streams = True

    def gather(self, ptrs: str, mt: str, align: int, md: str = "") -> str:
        """The W values at ptrs: one vector load where the active lanes' addresses turn out
        to be consecutive elements (a 2-D launch's row, a stencil's neighbours), else a
        gather (one element per lane: many times slower)."""
        self.not_a_window()
        vt, f = self.vty(mt), self.f
        first, straight = self.consecutive(ptrs, mt)
        load, gath, done = f.fresh("lcl"), f.fresh("lgt"), f.fresh("lgd")
        f.emit(f"br i1 {straight}, label %{load}, label %{gath}")
        f.start_block(load)
        loaded = self.vector_load(first, self.width, mt, align, self.mask, md)
        f.emit(f"br label %{done}")
        f.start_block(gath)
        fn = self.intrinsic("masked.gather", f"v{self.width}{mangle(mt)}.v{self.width}p0",
                            vt, f"{self.vty('ptr')}, {self.vty('i1')}, {vt}")
        gathered = f.fresh("%lgath")
        f.emit(f"{gathered} = call {vt} @{fn}({self.vty('ptr')} align {align} {ptrs}, "
               f"{self.vty('i1')} {self.full_mask()}, {vt} poison){md}")
        f.emit(f"br label %{done}")
        f.start_block(done)
        out = f.fresh("%lgv")
        f.emit(f"{out} = phi {vt} [{loaded}, %{load}], [{gathered}, %{gath}]")
        return out

    def consecutive(self, ptrs: str, mt: str) -> tuple[str, str]:
        """(lane 0's address, an i1: every active lane l addresses lane 0's element + l)."""
        f, w = self.f, self.width
        first, expect, eq, ok = (f.fresh("%lcs") for _ in range(4))
        f.emit(f"{first} = extractelement {self.vty('ptr')} {ptrs}, i64 0")
        steps = self.steps("i64", _BYTES[mt])
        f.emit(f"{expect} = getelementptr i8, ptr {first}, {self.vty('i64')} {steps}")
        f.emit(f"{eq} = icmp eq {self.vty('ptr')} {ptrs}, {expect}")
        if self.mask is not None:  # inactive lanes may hold any address
            m = self.vty("i1")
            f.emit(f"{ok} = select {m} {self.mask}, {m} {eq}, {m} splat (i1 true)")
            eq = ok
        every = f.fresh("%lcs")
        fn = f"llvm.vector.reduce.and.v{w}i1"
        self.declares.add(f"declare i1 @{fn}({self.vty('i1')})")
        f.emit(f"{every} = call i1 @{fn}({self.vty('i1')} {eq})")
        return first, every

    def lane_write(self, s: Op, t: ScalarType, value: str) -> None:
        """Store W values (a vector of t's register type) at the op's addresses."""
        mt = mem_type(t)
        value = self.stored_bits(t, value)
        w = self.window(s, t)
        if w is None:
            self.scatter(value, self.pointers(s), mt, t.size, self.scope_of(s))
            return
        self.window_store(w, mt, t.size, [(w.picks[0] % w.per, value)], self.scope_of(s))

    def stored_bits(self, t: ScalarType, value: str) -> str:
        """A lane vector as memory holds it: bools (i1 in registers) are bytes."""
        if t.kind != "b":
            return value
        wide = self.f.fresh("%lstb")
        self.f.emit(f"{wide} = zext {self.vty('i1')} {value} to {self.vty('i8')}")
        return wide

    def window_store(self, w: Window, mt: str, align: int, parts: list[tuple[int, str]],
                     md: str) -> None:
        """Store lane vectors into the window: parts are (position inside each lane's run,
        vector); the other positions keep their values. One store per run of W values: every
        component of a forward window's elements woven back together (`interleave`), else
        each run's values picked out of the parts' vectors (see window_chunks)."""
        width, only = self.width, None
        if md not in self.streamed_md:  # a streamed line is not read: a prefetch would
            self.prefetch(w, align, write=True)
        if (len(parts) == w.per > 1 and sorted(p for p, _ in parts) == list(range(w.per))
                and w.picks == tuple(w.per * lane + w.picks[0] for lane in range(width))):
            stores = list(enumerate(self.interleave([v for _, v in sorted(parts)], mt)))
        else:
            source = [-1] * w.n  # element -> index into the parts' lanes (part·W + lane)
            for k, (pos, _) in enumerate(parts):
                for lane, e in enumerate(w.picks):
                    source[e - w.picks[0] % w.per + pos] = k * width + lane
            values = [v for _, v in parts]
            only = None if len(parts) == w.per else {p for p, _ in parts}
            idxs = [source[k * width:(k + 1) * width] for k in range(w.n // width)]
            stores = [(k, self.pick(values, mt, idx)) for k, idx in enumerate(idxs)
                      if max(idx) >= 0]
        for k, chunk in stores:
            p = self.f.fresh("%lchunk")
            self.f.emit(f"{p} = getelementptr i8, ptr {w.start}, i64 {k * width * align}")
            self.vector_store(chunk, p, width, mt, align, self.chunk_mask(w, k, only), md)

    def prefetch(self, w: Window, size: int, write: bool) -> None:
        """Ask for the cache lines this window will cover `prefetch_vectors` vectors of
        threads later (windows move by their own length per vector, backwards when reversed):
        the CPU's out-of-order window does not reach far enough ahead of a long loop body,
        nor do its prefetchers keep a short one's streams fed (docs/performance.md). Once per
        window place; not inside loops, where the window does not move with the vector."""
        if not self.prefetch_vectors or self.loop_depth or w.place in self.prefetched:
            return
        self.prefetched.add(w.place)
        fn = self.intrinsic("prefetch", "p0", "void", "ptr, i32, i32, i32")
        span = w.n * size
        ahead = (-1 if w.reverse else 1) * self.prefetch_vectors * span
        for line in range(0, span, CACHE_LINE):
            p = self.f.fresh("%lpf")
            self.f.emit(f"{p} = getelementptr i8, ptr {w.start}, i64 {ahead + line}")
            self.f.emit(f"call void @{fn}(ptr {p}, i32 {int(write)}, i32 3, i32 1)")

    def not_a_window(self) -> None:
        if self.windows_only:
            raise NotWindows

    def scatter(self, value: str, ptrs: str, mt: str, align: int, md: str = "") -> None:
        """Store W values at ptrs: one vector store where the active lanes' addresses are
        consecutive elements (see `gather`), else a scatter."""
        self.not_a_window()
        self.not_a_window()
        vt, f = self.vty(mt), self.f
        first, straight = self.consecutive(ptrs, mt)
        store, scat, done = f.fresh("lcs"), f.fresh("lsc"), f.fresh("lsd")
        f.emit(f"br i1 {straight}, label %{store}, label %{scat}")
        f.start_block(store)
        self.vector_store(value, first, self.width, mt, align, self.mask, md)
        f.emit(f"br label %{done}")
        f.start_block(scat)
        fn = self.intrinsic("masked.scatter", f"v{self.width}{mangle(mt)}.v{self.width}p0",
                            "void", f"{vt}, {self.vty('ptr')}, {self.vty('i1')}")
        f.emit(f"call void @{fn}({vt} {value}, {self.vty('ptr')} align {align} {ptrs}, "
               f"{self.vty('i1')} {self.full_mask()}){md}")
        f.emit(f"br label %{done}")
        f.start_block(done)

    def intrinsic(self, base: str, suffix: str, ret: str, params: str) -> str:
        """Declare an intrinsic (params: its parameter types, comma-separated)."""
        fn = f"llvm.{base}.{suffix}"
        self.declares.add(f"declare {ret} @{fn}({params})")
        return fn

    def lane_permute(self, s: Op) -> None:
        """W lanes' entries of a permutation (its descriptor the same in every lane:
        passes/lanes.py): one gather, a vector load where the lanes' indices are consecutive
        (`wp.hash_grid_point_id(grid, tid)`); -1 in every lane where there is none."""
        ok, table = self.permutation(s)
        vi, vr = self.vty("i64"), self.vty("i32")
        index = self.f.fresh("%lperm")
        self.f.emit(f"{index} = select i1 {ok}, {vi} {self.va(s, 1)}, {vi} zeroinitializer")
        ptrs = self.f.fresh("%lperm")
        self.f.emit(f"{ptrs} = getelementptr i32, ptr {table}, {vi} {index}")
        got = self.gather(ptrs, "i32", 4)
        self.f.emit(f"{self.vres(s)} = select i1 {ok}, {vr} {got}, {vr} splat (i32 -1)")

    def lane_load(self, s: Op) -> None:
        assert s.result is not None
        self.vnames[s.result.id] = self.lane_read(s, s.result.type)

    def lane_store(self, s: Op) -> None:
        self.lane_write(s, s.args[2].type, self.va(s, 2))

    # -- runs of accesses to the components of one element (a vec3's x, y, z) ---------------

    def run_of(self, ops: list[Op], start: int = 0) -> list[Op]:
        """The ops from ops[start] on that access distinct components of one element through
        one window the same way (stores, or adds into thread-own gradients, or gradient
        takes). An index, not a slice: a block of 16,000 ops would be copied 16,000 times."""
        first = ops[start]
        if first.prim not in _RUN_PRIMS or self.deferred(first):
            return [first]
        run, comps = [first], {int(first.attr or 0)}
        for op in itertools.islice(ops, start + 1, None):
            if (not isinstance(op, Op) or op.prim != first.prim or op.args[:2] != first.args[:2]
                    or int(op.attr or 0) in comps or _value_type(op) != _value_type(first)):
                break
            run.append(op)
            comps.add(int(op.attr or 0))
        return run

    def deferred(self, s: Op) -> bool:
        """An addition into shared memory (logged, done after the vector: defer_add)."""
        return (Effect.ACCUMULATE in PRIMS[s.prim].effects
                and self.root_offset(s.args[0]) in self.private_adds)

    def lane_run(self, run: list[Op]) -> bool:
        """Emit a run of component accesses as one window access; False when they do not
        share a window (the caller emits them one by one)."""
        t = _value_type(run[0])
        windows = [self.window(s, t) for s in run]
        if len(run) < 2 or any(w is None for w in windows):
            return False
        w0 = windows[0]
        assert w0 is not None
        mt, md = mem_type(t), self.scope_of(run[0])
        pos = [w.picks[0] % w.per for w in windows if w is not None]
        if run[0].prim == "store":
            parts = [(p, self.stored_bits(t, self.va(s, 2))) for p, s in zip(pos, run, strict=True)]
        else:
            chunks = self.window_chunks(w0, mt, t.size, md)
            olds = [self.pick(chunks, mt, list(w.picks)) for w in windows if w]
            if run[0].prim == "adj_add":
                parts = [(p, self.fadd(t, old, self.va(s, 2)))
                         for p, old, s in zip(pos, olds, run, strict=True)]
            else:  # adj_take: the values, then zeros
                for s, old in zip(run, olds, strict=True):
                    self.vnames[s.result.id] = old  # type: ignore[union-attr]
                zero = f"splat ({reg_type(t)} {literal(0.0, t)})"
                parts = [(p, zero) for p in pos]
        self.window_store(w0, mt, t.size, parts, md)
        return True

    def fadd(self, t: ScalarType, a: str, b: str) -> str:
        out = self.f.fresh("%lsum")
        self.f.emit(f"{out} = fadd {self.vty(t)} {a}, {b}")
        return out

    # -- read-modify-writes ----------------------------------------------------------------

    def own_rmw(self, s: Op) -> None:
        t = s.args[2].type
        old = self.lane_read(s, t)
        new = self.combine(s, t, old)
        self.lane_write(s, t, new)
        if s.result is not None:
            self.vnames[s.result.id] = old

    def combine(self, s: Op, t: ScalarType, old: str) -> str:
        """The value an atomic leaves in memory, lane by lane."""
        base = "add" if s.prim == "adj_add" else s.prim.removeprefix("atomic_")
        vt, f = self.vty(t), self.f
        v, out = self.va(s, 2), f.fresh("%lrmw")
        if base == "exch":
            return v
        if base == "cas":
            it = self.vty(f"i{t.bits}")
            a, b, same = f.fresh("%lcas"), f.fresh("%lcas"), f.fresh("%lcas")
            f.emit(f"{a} = bitcast {vt} {old} to {it}")
            f.emit(f"{b} = bitcast {vt} {v} to {it}")
            f.emit(f"{same} = icmp eq {it} {a}, {b}")
            f.emit(f"{out} = select {self.vty('i1')} {same}, {vt} {self.va(s, 3)}, {vt} {old}")
            return out
        if base in ("min", "max"):
            if t.is_float:
                name = "minnum" if base == "min" else "maxnum"
                suffix = "f32" if t.bits == 32 else "f64"
            else:
                name = ("u" if t.kind == "u" else "s") + base
                suffix = reg_type(t)
            fn = self.intrinsic(name, f"v{self.width}{suffix}", vt, f"{vt}, {vt}")
            f.emit(f"{out} = call {vt} @{fn}({vt} {old}, {vt} {v})")
            return out
        instr = "fadd" if base == "add" and t.is_float else base
        f.emit(f"{out} = {instr} {vt} {old}, {v}")
        return out

    # -- gradients ------------------------------------------------------------------------

    def lane_adj_read(self, s: Op) -> None:
        assert s.result is not None
        t = s.result.type
        if s.prim == "adj_read" and not (self.is_varying(s.args[0]) or
                                         self.is_varying(s.args[1])):
            # one gradient element every lane reads (a loss's seed): one scalar load for the
            # vector, not a gather (which two vectors per trip cannot take: NotWindows)
            self.emit_scalar_op(s)
            self.vnames[s.result.id] = self.splat(self.names[s.result.id], reg_type(t))
            return
        self.vnames[s.result.id] = self.lane_read(s, t)
        if s.prim == "adj_take":
            self.lane_write(s, t, f"splat ({reg_type(t)} {literal(0.0, t)})")

    # -- the adjoint stack: lane l's slot k at base + (k·W + l)·8 ---------------------------

    def stack_addresses(self, sp: str) -> str:
        f, v64 = self.f, self.vty("i64")
        scaled, idx, ptrs = f.fresh("%lsk"), f.fresh("%lsk"), f.fresh("%lsk")
        f.emit(f"{scaled} = mul {v64} {sp}, splat (i64 {8 * self.width})")
        f.emit(f"{idx} = add {v64} {scaled}, {self.steps('i64', 8)}")
        f.emit(f"{ptrs} = getelementptr i8, ptr %stack.base, {v64} {idx}")
        return ptrs

    def lane_push(self, s: Op) -> None:
        f, v64 = self.f, self.vty("i64")
        t = s.args[0].type
        sp, nsp, over = f.fresh("%lsp"), f.fresh("%lsp"), f.fresh("%lover")
        f.emit(f"{sp} = load {v64}, ptr %lsp, align 64")
        f.emit(f"{nsp} = add {v64} {sp}, splat (i64 1)")
        f.emit(f"{over} = icmp ugt {v64} {nsp}, {self.splat('%lcap', 'i64')}")
        full, ok = f.fresh("lstackfull"), f.fresh("lpushed")
        f.emit(f"br i1 {self.any_lane(self.mask_and(self.mask, over))}, label %{full}, "
               f"label %{ok}, !prof !2")
        f.start_block(full)
        # the error word, and the thread the launch resumes at: the vector's first (the error
        # record's thread word, where the scalar push leaves the thread that found it full)
        failed = f.fresh("%lfail")
        f.emit(f"store i32 {STATUS_STACK_FULL}, ptr %err, align 4")
        f.emit(f"{failed} = getelementptr i8, ptr %err, i64 {STATUS_THREAD}")
        f.emit(f"store i64 {self.tid0()}, ptr {failed}, align 8")
        f.emit("br label %exit")
        f.start_block(ok)
        value = self.va(s, 0)
        if t.kind == "b":
            wide = f.fresh("%lstb")
            f.emit(f"{wide} = zext {self.vty('i1')} {value} to {self.vty('i8')}")
            value = wide
        self.scatter(value, self.stack_addresses(sp), mem_type(t), 8)
        self.store_sp(sp, nsp)

    def store_sp(self, sp: str, nsp: str) -> None:
        v64 = self.vty("i64")
        if self.mask is not None:
            kept = self.f.fresh("%lsp")
            self.f.emit(f"{kept} = select {self.vty('i1')} {self.mask}, {v64} {nsp}, {v64} {sp}")
            nsp = kept
        self.f.emit(f"store {v64} {nsp}, ptr %lsp, align 64")

    def lane_pop(self, s: Op) -> None:
        assert s.result is not None
        f, v64, t = self.f, self.vty("i64"), s.result.type
        sp, nsp = f.fresh("%lsp"), f.fresh("%lsp")
        f.emit(f"{sp} = load {v64}, ptr %lsp, align 64")
        f.emit(f"{nsp} = sub {v64} {sp}, splat (i64 1)")
        raw = self.gather(self.stack_addresses(nsp), mem_type(t), 8)
        if t.kind == "b":
            f.emit(f"{self.vres(s)} = icmp ne {self.vty('i8')} {raw}, zeroinitializer")
        else:
            self.vnames[s.result.id] = raw
        self.store_sp(sp, nsp)


_RUN_PRIMS = frozenset({"store", "adj_add", "adj_take"})


def _value_type(s: Op) -> ScalarType:
    return s.result.type if s.prim == "adj_take" else s.args[2].type  # type: ignore[union-attr]
