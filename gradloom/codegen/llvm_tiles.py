"""LLVM rules of the thread-local memory primitives tiles live in (local, lload, lstore, ladd,
ltake): one buffer per `local` op, allocated once in the entry block, zeroed per thread.

On the CPU the buffer is stack memory of the worker running the entry; in the CUDA entry it is
the thread's local memory. (A block-shared lowering, where the threads of one block share a
tile in shared memory, replaces these rules and the loops of builtins/tile_loops.py's
callers' element loop; the IR above does not change.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ir.nodes import Op, walk_ops
from ..ir.prims import PRIMS, Effect
from .llvm_bf16 import is_bf16
from .llvm_blocks import bxchg, bxsum
from .llvm_types import literal, mem_type, reg_type
from .tile_gemm import lgemm

#: a comment line in every module with a tile buffer: codegen/cpu.py compiles such modules at
#: most at O2 and without the loop vectoriser (measured: O3's unrolling of the nested
#: constant-trip loops of a 32x8 tile_reduce's adjoint took 11 s to optimise, O2 0.7 s; LLVM
#: 22's loop vectoriser failed an assertion, ending the process, on a kernel of four tile
#: reductions: "VPlan cost model and legacy cost model disagreed")
MARK = "; gradloom: tile buffers"

#: the largest buffer one `local` op may ask for (data and adjoint halves together); stacks of
#: worker threads are a few MiB, and Warp's CPU tiles live on the stack too
MAX_LOCAL_BYTES = 1 << 20


def _entry_alloca(e: Any, s: Op) -> str:
    """The name of s's buffer, its alloca placed at the top of the entry block once (the two
    copies of the thread loop share it: only one of them runs in a call)."""
    allocas: dict[int, str] = e.__dict__.setdefault("_tile_allocas", {})
    assert s.result is not None
    name = allocas.get(s.result.id)
    if name is None:
        name = allocas[s.result.id] = f"%tile{s.result.id}"
        size = 2 * int(s.attr)
        e.f.lines.insert(1, f"  {name} = alloca [{size} x i8], align 64")
        e.declares.add("declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)")
        e.declares.add(MARK)
    return name


def local(e: Any, s: Op) -> None:
    """The buffer, zeroed: every thread starts with zero data and zero adjoints (the adjoint
    half only where the kernel reads it: adjoints; forward kernels never touch it)."""
    buf = _entry_alloca(e, s)
    e.f.emit(f"{e.res(s)} = getelementptr i8, ptr {buf}, i64 0")
    size = int(s.attr) * (2 if _uses_adjoints(e) else 1)
    e.f.emit(f"call void @llvm.memset.p0.i64(ptr {buf}, i8 0, i64 {size}, i1 false)")


def _uses_adjoints(e: Any) -> bool:
    """Whether the kernel being emitted may read tile adjoints: it moves adjoints through tile
    buffers (ladd / ltake) or gradients through arrays (made by autodiff for adjoints only)."""
    known = e.__dict__.get("_tile_adjoints")
    if known is None:
        known = e.__dict__["_tile_adjoints"] = any(
            RULES.get(op.prim) in (ladd, ltake) or PRIMS[op.prim].has(Effect.GRAD)
            for op in walk_ops(e.kernel.body))
    return bool(known)


def _at(e: Any, s: Op) -> str:
    p = e.f.fresh("%laddr")
    e.f.emit(f"{p} = getelementptr i8, ptr {e.a(s, 0)}, i64 {e.a(s, 1)}")
    return p


def lload(e: Any, s: Op) -> None:
    assert s.result is not None
    e.load_value(e.res(s), s.result.type, _at(e, s), s.result.type.size)


def lstore(e: Any, s: Op) -> None:
    t = s.args[2].type
    e.store_value(e.a(s, 2), t, _at(e, s), t.size)


def ladd(e: Any, s: Op) -> None:
    t = s.args[2].type
    p, old = _at(e, s), e.f.fresh("%lold")
    e.load_value(old, t, p, t.size)
    add = "fadd" if t.is_float else "add"
    e.f.emit(f"{e.res(s)} = {add} {reg_type(t)} {old}, {e.a(s, 2)}")
    e.store_value(e.res(s), t, p, t.size)


def ltake(e: Any, s: Op) -> None:
    assert s.result is not None
    t = s.result.type
    p = _at(e, s)
    e.load_value(e.res(s), t, p, t.size)
    zero = "0" if is_bf16(t) else literal(0.0 if t.is_float else 0, t)  # bfloat16: its i16 bits
    e.f.emit(f"store {mem_type(t)} {zero}, ptr {p}, align {t.size}")


RULES: dict[str, Callable[[Any, Op], None]] = {
    "local": local, "lload": lload, "lstore": lstore, "ladd": ladd, "ltake": ltake,
    "lgemm": lgemm, "bxchg": bxchg, "bxsum": bxsum,
}
