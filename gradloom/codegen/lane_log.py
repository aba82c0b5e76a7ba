"""Memory threads share, in the SIMD thread loop: additions into shared elements are logged per
lane and done after each vector of threads, lane by lane, so every element receives its additions
in thread order (bit for bit the scalar loop's sums), except where every lane adds into one
element: those lanes' values are summed as a tree first (add_reduced); other atomics on shared
elements run lane by lane at once (min, max and bitwise operations do not depend on order). codegen/lane_memory.py
holds the accesses no two lanes share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..ir.nodes import Op
from ..ir.prims import PRIMS, Effect
from ..types import ScalarType, float32
from .lane_memory import LaneMemory
from .llvm_types import literal, mem_type, reg_type


@dataclass(frozen=True)
class LogEntry:
    """One addition into shared memory, logged per lane: its address and value vectors, and
    (under a branch, or for a long log) allocas named by `name`."""

    name: str
    type: ScalarType
    conditional: bool
    ptrs: str
    value: str
    #: the addresses without the component's constant offset, and that offset: the components
    #: of one vector addition share them, so a flush takes each lane's address out once
    element: str = ""
    offset: int = 0


#: a log of at most this many lane additions is flushed by straight-line code (192: the cloth
#: springs' adjoint, 12 components x 16 lanes, 5.8 -> 5.2-5.6 ms against the loop through
#: memory; its compile 0.10 -> 0.13 s)
UNROLLED_FLUSH = 192


class LaneLog(LaneMemory):
    """Logged shared additions and lane-by-lane atomics (a mixin of the CPU kernel emitter)."""

    log: list[LogEntry]
    allocas: list[str]
    depth: int
    #: additions into one element in lane order, not as a tree (config.deterministic)
    ordered: bool
    lane_by_lane: frozenset[int]
    #: argument offset -> how many ops of the kernel add into memory lanes share through it
    shared_add_count: dict[int, int]

    if TYPE_CHECKING:
        def address(self, s: Op) -> str: ...

    def lane_atomic(self, s: Op) -> None:
        root = self.root_offset(s.args[0])
        effects = PRIMS[s.prim].effects
        if Effect.ACCUMULATE in effects and root in self.private_adds:
            self.shared_add(s)
        elif root in self.lane_by_lane:
            self.atomic_lane_by_lane(s)
        else:  # a thread-own element: no two lanes share it
            self.own_rmw(s)

    def atomic_lane_by_lane(self, s: Op) -> None:
        """Atomics on elements lanes may share (min, max, bitwise, integer adds): one lane at a
        time, in lane order, with the scalar instruction."""
        self.not_a_window()  # lanes that share an element: one vector per trip
        t = s.args[2].type
        ty, mt = reg_type(t), mem_type(t)
        base = s.prim.removeprefix("atomic_")
        kind = {"add": "fadd" if t.is_float else "add",
                "min": "fmin" if t.is_float else ("umin" if t.kind == "u" else "min"),
                "max": "fmax" if t.is_float else ("umax" if t.kind == "u" else "max")}.get(base,
                                                                                         base)
        ptrs, vals, out = self.pointers(s), self.va(s, 2), "poison"
        f = self.f
        for lane in range(self.width):
            p, v = self.extract(ptrs, "ptr", lane), self.extract(vals, ty, lane)
            go = done = before = ""
            if self.mask is not None:
                on = self.extract(self.mask, "i1", lane)
                go, done, before = f.fresh("lgo"), f.fresh("ldone"), f.label
                f.emit(f"br i1 {on}, label %{go}, label %{done}")
                f.start_block(go)
            r = f.fresh("%lato")
            f.emit(f"{r} = atomicrmw {kind} ptr {p}, {mt} {v} monotonic, align {t.size}")
            if self.mask is not None:
                f.emit(f"br label %{done}")
                f.start_block(done)
                kept = f.fresh("%lato")
                f.emit(f"{kept} = phi {ty} [{r}, %{go}], [{literal(0, t)}, %{before}]")
                r = kept
            out = self.insert(out, ty, r, lane)
        if s.result is not None:
            self.vnames[s.result.id] = out

    # -- additions into shared memory: thread order, or lane sums --------------------------

    def shared_add(self, s: Op) -> None:
        """An addition into memory lanes may share. The only one into its array: done here,
        lane by lane (nothing else touches that memory), or as one sum where every lane adds
        into one element (add_reduced). Otherwise logged (defer_add). Inside a loop (at an
        address all lanes share: passes/lanes.py): each trip's additions at once, as one
        sum."""
        self.not_a_window()  # lanes that share an element: one vector per trip
        root = self.root_offset(s.args[0])
        if self.loop_depth:
            self.add_reduced(s)
        elif root is None or self.shared_add_count.get(root, 0) > 1:
            self.defer_add(s)
        elif self.is_varying(s.args[0]) or self.is_varying(s.args[1]):
            self.add_lane_by_lane(s)
        else:
            self.add_reduced(s)

    def add_reduced(self, s: Op) -> None:
        """Every lane adds into one element: the lanes' values summed, then added to it (one
        load and one store). The sum is a tree of halves (lanes l and l + W/2, then ...: a
        chain of log2(W) additions, not W), or, when `ordered`, lane after lane into the old
        value (the scalar loop's order). Lanes that are off add -0.0 (or 0): no change."""
        t = s.args[2].type
        ty, vt, mt, f = reg_type(t), self.vty(t), mem_type(t), self.f
        value = self.va(s, 2)
        zero = "-0.0" if t.is_float else "0"
        if self.mask is not None:
            kept = f.fresh("%lred")
            f.emit(f"{kept} = select {self.vty('i1')} {self.mask}, {vt} {value}, "
                   f"{vt} splat ({ty} {zero})")
            value = kept
        p, old, new = self.address(s), f.fresh("%lred"), f.fresh("%lred")
        f.emit(f"{old} = load {mt}, ptr {p}, align {t.size}")
        if t.is_float and self.ordered:
            suffix = f"v{self.width}{'f32' if t == float32 else 'f64'}"
            fn = self.intrinsic("vector.reduce.fadd", suffix, ty, f"{ty}, {vt}")
            f.emit(f"{new} = call {ty} @{fn}({ty} {old}, {vt} {value})")
        else:
            op = "fadd" if t.is_float else "add"
            f.emit(f"{new} = {op} {ty} {old}, {self.halving_sum(ty, value, op)}")
        f.emit(f"store {mt} {new}, ptr {p}, align {t.size}")

    def halving_sum(self, ty: str, value: str, op: str) -> str:
        """The W lanes' sum as a tree: each step adds the upper half of the lanes to the lower
        half, lane by lane (the order is this code's, so the bits are the same everywhere)."""
        n, f = self.width, self.f
        while n > 1:
            half = n // 2
            low = self.shuffle(value, n, ty, list(range(half)))
            high = self.shuffle(value, n, ty, list(range(half, n)))
            value = f.fresh("%lhalf")
            f.emit(f"{value} = {op} <{half} x {ty}> {low}, {high}")
            n = half
        out = f.fresh("%lhalf")
        f.emit(f"{out} = extractelement <1 x {ty}> {value}, i64 0")
        return out

    def add_lane_by_lane(self, s: Op) -> None:
        """Each lane's addition in lane order, at once."""
        t = s.args[2].type
        ptrs, vals = self.pointers(s), self.va(s, 2)
        for lane in range(self.width):
            p, v = self.extract(ptrs, "ptr", lane), self.extract(vals, reg_type(t), lane)
            if self.mask is None:
                self.add_one(t, p, v)
                continue
            f = self.f
            go, done = f.fresh("lgo"), f.fresh("ldone")
            f.emit(f"br i1 {self.extract(self.mask, 'i1', lane)}, label %{go}, label %{done}")
            f.start_block(go)
            self.add_one(t, p, v)
            f.emit(f"br label %{done}")
            f.start_block(done)

    def defer_add(self, s: Op) -> None:
        """Log the lanes' addresses and values; `flush_log` adds them after the vector. An
        addition every lane makes keeps its vectors (they reach the flush); one under a branch
        goes through allocas, with the lanes that ran it."""
        t = s.args[2].type
        name = f"%log{len(self.log)}"
        element, offset = self.element_pointers(s)
        ptrs = element
        if offset:
            ptrs = self.f.fresh("%lptr")
            self.f.emit(f"{ptrs} = getelementptr i8, {self.vty('ptr')} {element}, i64 {offset}")
        entry = LogEntry(name, t, self.depth > 0, ptrs, self.va(s, 2), element, offset)
        self.log.append(entry)
        if entry.conditional:
            self.log_to_memory(entry)
            m = self.f.fresh("%lmb")
            self.f.emit(f"{m} = zext {self.vty('i1')} {self.full_mask()} to {self.vty('i8')}")
            self.f.emit(f"store {self.vty('i8')} {m}, ptr {name}.m, align 64")

    def log_to_memory(self, e: LogEntry) -> None:
        w, ty = self.width, reg_type(e.type)
        self.allocas += [f"{e.name}.a = alloca [{w} x ptr], align 64",
                         f"{e.name}.v = alloca [{w} x {ty}], align 64"]
        if e.conditional:
            self.allocas.append(f"{e.name}.m = alloca [{w} x i8], align 64")
        self.f.emit(f"store {self.vty('ptr')} {e.ptrs}, ptr {e.name}.a, align 64")
        self.f.emit(f"store {self.vty(ty)} {e.value}, ptr {e.name}.v, align 64")

    def clear_log(self) -> None:
        """At the start of each vector of threads: no conditional addition has run."""
        for e in self.log:
            if e.conditional:
                self.f.emit(f"store {self.vty('i8')} zeroinitializer, ptr {e.name}.m, align 64")

    def flush_log(self, label: str) -> None:
        """Lane by lane, each lane's logged additions in program order: every element receives
        its additions in thread order, as in the scalar loop."""
        if not self.log:
            return
        if all(not e.conditional for e in self.log) and \
                len(self.log) * self.width <= UNROLLED_FLUSH:
            for k in range(self.width):
                self.flush_lane(k)
            return
        for e in self.log:
            if not e.conditional:
                self.log_to_memory(e)
        f = self.f
        entry_label = f.label
        f.emit(f"br label %{label}")
        f.start_block(label)
        lane = f.fresh("%llane")
        f.emit(f"{lane} = phi i64 [0, %{entry_label}], [{lane}.next, %{label}.next]")
        for e in self.log:
            self.flush_one(e, lane)
        f.emit(f"br label %{label}.next")
        f.start_block(f"{label}.next")
        f.emit(f"{lane}.next = add nuw nsw i64 {lane}, 1")
        f.emit(f"{lane}.more = icmp ult i64 {lane}.next, {self.width}")
        f.emit(f"br i1 {lane}.more, label %{label}, label %{label}.done")
        f.start_block(f"{label}.done")

    def flush_lane(self, k: int) -> None:
        """Lane k's logged additions in program order, each element's address taken out of
        its vector once (the components of a `vec3` addition: one address, offsets 0, 4, 8)."""
        lane_element: dict[str, str] = {}
        for e in self.log:
            if e.element not in lane_element:
                lane_element[e.element] = self.extract(e.element, "ptr", k)
            p = lane_element[e.element]
            if e.offset:
                moved = self.f.fresh("%lfp")
                self.f.emit(f"{moved} = getelementptr i8, ptr {p}, i64 {e.offset}")
                p = moved
            self.add_one(e.type, p, self.extract(e.value, reg_type(e.type), k))

    def flush_one(self, e: LogEntry, lane: str) -> None:
        f, ty = self.f, reg_type(e.type)
        skip = None
        if e.conditional:
            mp, m, on = f.fresh("%lfm"), f.fresh("%lfm"), f.fresh("%lfm")
            go, skip = f.fresh("lfgo"), f.fresh("lfskip")
            f.emit(f"{mp} = getelementptr i8, ptr {e.name}.m, i64 {lane}")
            f.emit(f"{m} = load i8, ptr {mp}, align 1")
            f.emit(f"{on} = icmp ne i8 {m}, 0")
            f.emit(f"br i1 {on}, label %{go}, label %{skip}")
            f.start_block(go)
        ap, a, vp, v = (f.fresh("%lfa") for _ in range(4))
        f.emit(f"{ap} = getelementptr ptr, ptr {e.name}.a, i64 {lane}")
        f.emit(f"{a} = load ptr, ptr {ap}, align 8")
        f.emit(f"{vp} = getelementptr {ty}, ptr {e.name}.v, i64 {lane}")
        f.emit(f"{v} = load {ty}, ptr {vp}, align {e.type.size}")
        self.add_one(e.type, a, v)
        if skip is not None:
            f.emit(f"br label %{skip}")
            f.start_block(skip)

    def add_one(self, t: ScalarType, p: str, v: str) -> None:
        """*p += v, one lane's logged addition."""
        f, mt = self.f, mem_type(t)
        old, new = f.fresh("%lfo"), f.fresh("%lfn")
        f.emit(f"{old} = load {mt}, ptr {p}, align {t.size}")
        f.emit(f"{new} = {'fadd' if t.is_float else 'add'} {mt} {old}, {v}")
        f.emit(f"store {mt} {new}, ptr {p}, align {t.size}")

    def lane_adj_add(self, s: Op) -> None:
        if self.root_offset(s.args[0]) in self.private_adds:
            self.shared_add(s)
        else:
            self.own_rmw(s)


MEMORY_RULES = {
    "load": LaneMemory.lane_load, "store": LaneMemory.lane_store,
    "permute": LaneMemory.lane_permute,
    **{p: LaneLog.lane_atomic for p in ("atomic_add", "atomic_min", "atomic_max",
                                           "atomic_and", "atomic_or", "atomic_xor",
                                           "atomic_exch", "atomic_cas")},
    "adj_add": LaneLog.lane_adj_add, "adj_read": LaneMemory.lane_adj_read,
    "adj_take": LaneMemory.lane_adj_read, "push": LaneMemory.lane_push,
    "pop": LaneMemory.lane_pop,
}
