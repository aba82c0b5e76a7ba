"""LLVM rule of `bxchg`: the threads of a CPU block (`config.enable_cpu_blocks`) exchanging records
of their tile memory (builtins/tile_block.py), and the barrier they wait at.

On the CPU each thread of a block runs in a system thread of its own (runtime/cpu/blocks.py), all
of them at once; the launch block's adjoint-stack word (unused by a forward kernel) points at the
block's shared state: a lock, the count of threads arrived, the barrier's generation and the
count of threads still running (int32 each; waiting threads yield, then sleep on the
generation word, a futex), then two areas of records from byte 64, used by
exchanges in turn (`exchange_bytes`). A thread writes its record into its slot, waits until every running thread has, copies all slots, and waits again
(so no slot is overwritten while another thread still reads it). A thread that finishes leaves
the count of running ones (`depart`, in the entry's exit block), so the others never wait for it.
A broadcast (attr src >= 0) has thread src write the one record all copy. The CUDA entry runs one
thread per block: its own record lands in its slot and nothing waits.
"""

from __future__ import annotations

from typing import Any

from ..abi import BLOCK_SHARED_RECORDS
from ..ir.nodes import Block, Op, walk_ops
from .llvm_types import mem_type

_WAIT = """define internal void @gl_bx_lock(ptr %s) nounwind {
entry:
  br label %try
try:
  %old = atomicrmw xchg ptr %s, i32 1 acquire
  %held = icmp ne i32 %old, 0
  br i1 %held, label %yield, label %got
yield:
  %y = call i32 @sched_yield()
  br label %try
got:
  ret void
}

define internal void @gl_bx_unlock(ptr %s) nounwind {
  store atomic i32 0, ptr %s release, align 4
  ret void
}

define internal void @gl_bx_release(ptr %s) nounwind {
  %cp = getelementptr i8, ptr %s, i64 4
  %gp = getelementptr i8, ptr %s, i64 8
  store i32 0, ptr %cp, align 4
  %g = load i32, ptr %gp, align 4
  %g1 = add i32 %g, 1
  store atomic i32 %g1, ptr %gp release, align 4
  %w = call i64 (i64, ...) @syscall(i64 202, ptr %gp, i64 129, i64 2147483647, ptr null,
                                    ptr null, i64 0)
  ret void
}

define internal void @gl_bx_wait(ptr %s) nounwind {
entry:
  call void @gl_bx_lock(ptr %s)
  %cp = getelementptr i8, ptr %s, i64 4
  %gp = getelementptr i8, ptr %s, i64 8
  %lp = getelementptr i8, ptr %s, i64 12
  %g = load i32, ptr %gp, align 4
  %c0 = load i32, ptr %cp, align 4
  %c = add i32 %c0, 1
  %live = load i32, ptr %lp, align 4
  %all = icmp sge i32 %c, %live
  br i1 %all, label %last, label %arrive
last:
  call void @gl_bx_release(ptr %s)
  call void @gl_bx_unlock(ptr %s)
  ret void
arrive:
  store i32 %c, ptr %cp, align 4
  call void @gl_bx_unlock(ptr %s)
  br label %spin
spin:
  %tries = phi i32 [0, %arrive], [%more, %yield], [0, %sleep]
  %now = load atomic i32, ptr %gp acquire, align 4
  %same = icmp eq i32 %now, %g
  br i1 %same, label %again, label %done
again:
  %more = add i32 %tries, 1
  %long = icmp ugt i32 %more, 64
  br i1 %long, label %sleep, label %yield
yield:
  %y = call i32 @sched_yield()
  br label %spin
sleep:
  %g64 = zext i32 %g to i64
  %z = call i64 (i64, ...) @syscall(i64 202, ptr %gp, i64 128, i64 %g64, ptr null, ptr null,
                                    i64 0)
  br label %spin
done:
  ret void
}

define internal void @gl_bx_depart(ptr %s) nounwind {
entry:
  %none = icmp eq ptr %s, null
  br i1 %none, label %done, label %go
go:
  call void @gl_bx_lock(ptr %s)
  %cp = getelementptr i8, ptr %s, i64 4
  %lp = getelementptr i8, ptr %s, i64 12
  %l0 = load i32, ptr %lp, align 4
  %live = sub i32 %l0, 1
  store i32 %live, ptr %lp, align 4
  %c = load i32, ptr %cp, align 4
  %waiting = icmp sgt i32 %c, 0
  %all = icmp sge i32 %c, %live
  %free = and i1 %waiting, %all
  br i1 %free, label %last, label %out
last:
  call void @gl_bx_release(ptr %s)
  br label %out
out:
  call void @gl_bx_unlock(ptr %s)
  br label %done
done:
  ret void
}

define internal ptr @gl_bx_area(ptr %s, i64 %half) nounwind {
  %gp = getelementptr i8, ptr %s, i64 8
  %g = load atomic i32, ptr %gp acquire, align 4
  %k = lshr i32 %g, 1
  %odd = and i32 %k, 1
  %odd64 = zext i32 %odd to i64
  %skip = mul i64 %odd64, %half
  %base = add i64 %skip, @RECORDS@
  %area = getelementptr i8, ptr %s, i64 %base
  ret ptr %area
}

define internal void @gl_bx(ptr %s, ptr %send, ptr %recv, i64 %size, i32 %lane,
                            i64 %n, i64 %half, i32 %src) nounwind {
entry:
  %data = call ptr @gl_bx_area(ptr %s, i64 %half)
  %bcast = icmp sge i32 %src, 0
  %l = zext i32 %lane to i64
  %mine = mul i64 %l, %size
  %at = select i1 %bcast, i64 0, i64 %mine
  %slot = getelementptr i8, ptr %data, i64 %at
  %source = icmp eq i32 %lane, %src
  %gathers = xor i1 %bcast, true
  %writes = or i1 %gathers, %source
  br i1 %writes, label %write, label %wait1
write:
  call void @llvm.memcpy.p0.p0.i64(ptr %slot, ptr %send, i64 %size, i1 false)
  br label %wait1
wait1:
  call void @gl_bx_wait(ptr %s)
  %gathered = mul i64 %n, %size
  %all = select i1 %bcast, i64 %size, i64 %gathered
  call void @llvm.memmove.p0.p0.i64(ptr %recv, ptr %data, i64 %all, i1 false)
  call void @gl_bx_wait(ptr %s)
  br i1 %gathers, label %clear, label %done
clear:
  store i32 0, ptr %slot, align 4
  br label %done
done:
  ret void
}
"""

_WAIT = _WAIT.replace("@RECORDS@", str(BLOCK_SHARED_RECORDS))
_DECLARES = ("declare i32 @sched_yield()", "declare i64 @syscall(i64, ...)",
             "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)",
             "declare void @llvm.memmove.p0.p0.i64(ptr, ptr, i64, i1)")


def _state(e: Any) -> str:
    """The running block's shared state (the process's `gl_block_state` word)."""
    st = e.f.fresh("%bxs")
    e.declares.add("@gl_block_state = external global ptr")
    e.f.emit(f"{st} = load ptr, ptr @gl_block_state, align 8")
    return st


def bxchg(e: Any, s: Op) -> None:
    """Gather every lane's record (attr: size, block_dim, -1), or broadcast lane src's (attr:
    size, block_dim, src) into every lane's recv."""
    size, n, src = s.attr[:3]
    send, recv = e.f.fresh("%bxsend"), e.f.fresh("%bxrecv")
    e.f.emit(f"{send} = getelementptr i8, ptr {e.a(s, 0)}, i64 {e.a(s, 1)}")
    e.f.emit(f"{recv} = getelementptr i8, ptr {e.a(s, 2)}, i64 {e.a(s, 3)}")
    e.declares.update(_DECLARES[2:])
    if not getattr(e, "block_exchange", False):  # one thread per block: its record, in place
        lane, at, slot = e.f.fresh("%bxl"), e.f.fresh("%bxat"), e.f.fresh("%bxslot")
        e.f.emit(f"{lane} = zext i32 {e.a(s, 4)} to i64")
        e.f.emit(f"{at} = mul i64 {lane}, {size if src < 0 else 0}")
        e.f.emit(f"{slot} = getelementptr i8, ptr {recv}, i64 {at}")
        e.f.emit(f"call void @llvm.memmove.p0.p0.i64(ptr {slot}, ptr {send}, i64 {size}, "
                 "i1 false)")
        return
    e.declares.update((*_DECLARES[:2], _WAIT))
    e.f.emit(f"call void @gl_bx(ptr {_state(e)}, ptr {send}, ptr {recv}, i64 {size}, "
             f"i32 {e.a(s, 4)}, i64 {n}, i64 {exchange_bytes(e.kernel.body)}, i32 {src})")


def exchange_bytes(body: Block) -> int:
    """The bytes one exchange of the kernel may need, its adjoint's included (every thread's
    adjoints of all records: block_dim x block_dim records). The shared state holds two such
    areas, the exchanges taking turns (exchange k's at the barrier generation 2k: a thread still
    clearing its flag in one never meets a thread writing the next)."""
    return max((op.attr[0] * op.attr[1] * (op.attr[1] if op.attr[2] < 0 else 1)
                for op in walk_ops(body) if op.prim in ("bxchg", "bxsum")), default=0)


def bxsum(e: Any, s: Op) -> None:
    """The adjoint of a gather: each thread's adjoints of every lane's record (its recv's adjoint
    half) go to the block; lane l's record adjoint, summed over the threads in lane order
    (those that took part in the gather: their flags in recv), is added into lane l's send
    adjoint; recv's adjoints are then zero. A broadcast's values carry no gradient (its only
    use: tile_atomic_add's returned values), so its adjoint only zeroes them."""
    size, n, src, leaves, send_span, recv_span = s.attr
    send_adj, recv_adj, recv = (e.f.fresh(f"%bx{w}") for w in ("sa", "ra", "rp"))
    e.f.emit(f"{recv} = getelementptr i8, ptr {e.a(s, 2)}, i64 {e.a(s, 3)}")
    e.f.emit(f"{recv_adj} = getelementptr i8, ptr {recv}, i64 {recv_span}")
    e.f.emit(f"{send_adj} = getelementptr i8, ptr {e.a(s, 0)}, i64 {e.a(s, 1)}")
    e.f.emit(f"{send_adj}.h = getelementptr i8, ptr {send_adj}, i64 {send_span}")
    e.declares.add("declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)")
    total = size * (n if src < 0 else 1)
    if src >= 0 or not getattr(e, "block_exchange", False):
        if src < 0:  # one thread per block: its own record's adjoint
            e.f.emit(f"call void @gl_bxsum_{_leaf_key(leaves)}(ptr {recv_adj}, ptr {send_adj}.h, "
                     f"ptr {recv}, i32 {e.a(s, 4)}, i64 {size}, i64 1, i64 0)")
            e.declares.add(_sum_function(leaves))
        e.f.emit(f"call void @llvm.memset.p0.i64(ptr {recv_adj}, i8 0, i64 {total}, i1 false)")
        return
    e.declares.update((*_DECLARES, _WAIT, _sum_function(leaves), _PUT))
    st = _state(e)
    e.f.emit(f"{st}.area = call ptr @gl_bxput(ptr {st}, ptr {recv_adj}, i32 {e.a(s, 4)}, "
             f"i64 {total}, i64 {exchange_bytes(e.kernel.body)})")
    e.f.emit(f"call void @gl_bxsum_{_leaf_key(leaves)}(ptr {st}.area, ptr {send_adj}.h, "
             f"ptr {recv}, i32 {e.a(s, 4)}, i64 {size}, i64 {n}, i64 {total})")
    e.f.emit(f"call void @gl_bx_wait(ptr {st})")
    e.f.emit(f"call void @llvm.memset.p0.i64(ptr {recv_adj}, i8 0, i64 {total}, i1 false)")


def depart(e: Any) -> None:
    """This thread leaves its block (the entry's way out): the others stop waiting for it."""
    e.declares.update((*_DECLARES, _WAIT))
    e.f.emit(f"call void @gl_bx_depart(ptr {_state(e)})")


def gathers(body: Block) -> bool:
    """Whether the kernel's threads exchange values of their own (a broadcast alone, of what lane
    0 computed for the block, does not make a block's threads depend on each other)."""
    return any(op.prim == "bxchg" and op.attr[2] < 0 for op in walk_ops(body))


#: a thread's adjoints of all records into its slot of the current area; waits for the block;
#: returns the area
_PUT = """define internal ptr @gl_bxput(ptr %s, ptr %adj, i32 %lane, i64 %total,
                                   i64 %half) nounwind {
  %area = call ptr @gl_bx_area(ptr %s, i64 %half)
  %l = zext i32 %lane to i64
  %at = mul i64 %l, %total
  %slot = getelementptr i8, ptr %area, i64 %at
  call void @llvm.memcpy.p0.p0.i64(ptr %slot, ptr %adj, i64 %total, i1 false)
  call void @gl_bx_wait(ptr %s)
  ret ptr %area
}""".replace("@RECORDS@", str(BLOCK_SHARED_RECORDS))


def _leaf_key(leaves: tuple[tuple[int, Any], ...]) -> str:
    return "_".join(f"{off}{mem_type(t)}" for off, t in leaves) or "none"


def _sum_function(leaves: tuple[tuple[int, Any], ...]) -> str:
    """@gl_bxsum_<leaves>(area, send adjoint, recv, lane, size, n, total): for r in lane order,
    where record r's flag in recv is set, add the float leaves of area[r * total + lane * size]
    into the send adjoint."""
    adds = []
    for k, (off, st) in enumerate(leaves):
        t = mem_type(st)
        if t not in ("half", "float", "double"):
            continue  # bfloat16 (its 16 bits in memory): not differentiated through a block
        adds.append(f"  %p{k} = getelementptr i8, ptr %rec, i64 {off}\n"
                    f"  %v{k} = load {t}, ptr %p{k}, align 1\n"
                    f"  %q{k} = getelementptr i8, ptr %adj, i64 {off}\n"
                    f"  %o{k} = load {t}, ptr %q{k}, align 1\n"
                    f"  %n{k} = fadd {t} %o{k}, %v{k}\n"
                    f"  store {t} %n{k}, ptr %q{k}, align 1")
    body = "\n".join(adds)
    return f"""define internal void @gl_bxsum_{_leaf_key(leaves)}(ptr %area, ptr %adj, ptr %recv,
    i32 %lane, i64 %size, i64 %n, i64 %total) nounwind {{
entry:
  %l = zext i32 %lane to i64
  %mine = mul i64 %l, %size
  br label %loop
loop:
  %r = phi i64 [0, %entry], [%r1, %next]
  %fa = mul i64 %r, %size
  %fp = getelementptr i8, ptr %recv, i64 %fa
  %flag = load i32, ptr %fp, align 4
  %took = icmp ne i32 %flag, 0
  br i1 %took, label %add, label %next
add:
  %ra = mul i64 %r, %total
  %rb = add i64 %ra, %mine
  %rec = getelementptr i8, ptr %area, i64 %rb
{body}
  br label %next
next:
  %r1 = add i64 %r, 1
  %more = icmp ult i64 %r1, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}}"""
