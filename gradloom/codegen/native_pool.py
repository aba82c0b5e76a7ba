"""LLVM IR of the native worker loop that runs the slices of split launches (x86-64 Linux).

Waking a Python thread through a lock costs ~30 µs per wake-up on a virtual machine, so a split
launch spent ~60 µs just dispatching. Here each worker thread enters `gl_pool_worker` once,
through ctypes (which releases the GIL for good), and then lives in native code: it spins on its
control word for a while after each job, so back-to-back launches reach it in well under a
microsecond, and sleeps on a futex when idle. `gl_pool_run` posts one job per worker, runs the
caller's own slice, and waits for the rest — one ctypes call per split launch.

Control block of one worker (64 bytes, one cache line): i32 sequence number of the last posted
job at 0, i32 sequence number of the last finished job at 4, i32 "sleeping" flag at 8, the job's
entry function at 16 and its argument (a launch block) at 24.
"""

from __future__ import annotations

CONTROL_BYTES = 64
_FUTEX = 202  # SYS_futex on x86-64 Linux
_WAIT, _WAKE = 128, 129  # FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE
# spins (each a `pause`, ~65 cycles on AMD Zen, ~140 on recent Intel) before a worker sleeps
# (~0.2-0.4 ms: long enough for back-to-back launches, short enough not to burn a core that
# something else needs), and before a waiting caller starts yielding its core
_WORKER_SPINS = 1 << 13
_CALLER_SPINS = 1 << 14

_WORKER = f"""
define void @gl_pool_worker(ptr %ctl) nounwind {{
entry:
  %donep = getelementptr i8, ptr %ctl, i64 4
  %sleepp = getelementptr i8, ptr %ctl, i64 8
  %fnp = getelementptr i8, ptr %ctl, i64 16
  %argp = getelementptr i8, ptr %ctl, i64 24
  %first = load atomic i32, ptr %donep acquire, align 4
  br label %wait
wait:
  %last = phi i32 [%first, %entry], [%last, %woke], [%seq, %run]
  br label %spin
spin:
  %k = phi i32 [0, %wait], [%k1, %pause]
  %seq = load atomic i32, ptr %ctl acquire, align 4
  %posted = icmp ne i32 %seq, %last
  br i1 %posted, label %run, label %pause
pause:
  call void @llvm.x86.sse2.pause()
  %k1 = add i32 %k, 1
  %more = icmp ult i32 %k1, {_WORKER_SPINS}
  br i1 %more, label %spin, label %sleep
sleep:
  store atomic i32 1, ptr %sleepp seq_cst, align 4
  %again = load atomic i32, ptr %ctl seq_cst, align 4
  %missed = icmp ne i32 %again, %last
  br i1 %missed, label %woke, label %futex
futex:
  %expect = zext i32 %last to i64
  %r = call i64 (i64, ...) @syscall(i64 {_FUTEX}, ptr %ctl, i64 {_WAIT}, i64 %expect, ptr null,
                                    ptr null, i64 0)
  br label %woke
woke:
  store atomic i32 0, ptr %sleepp seq_cst, align 4
  br label %wait
run:
  %fn = load ptr, ptr %fnp, align 8
  %arg = load ptr, ptr %argp, align 8
  call void %fn(ptr %arg)
  store atomic i32 %seq, ptr %donep release, align 4
  br label %wait
}}
"""

_RUN = f"""
define void @gl_pool_run(ptr %ctls, i64 %n, ptr %fn, ptr %args) nounwind {{
entry:
  br label %post
post:
  %k = phi i64 [1, %entry], [%k1, %posted]
  %more = icmp ult i64 %k, %n
  br i1 %more, label %post.one, label %own
post.one:
  %worker = sub i64 %k, 1
  %cc = getelementptr [{CONTROL_BYTES} x i8], ptr %ctls, i64 %worker
  %fnp = getelementptr i8, ptr %cc, i64 16
  store ptr %fn, ptr %fnp, align 8
  %ap = getelementptr ptr, ptr %args, i64 %k
  %a = load ptr, ptr %ap, align 8
  %argp = getelementptr i8, ptr %cc, i64 24
  store ptr %a, ptr %argp, align 8
  %old = atomicrmw add ptr %cc, i32 1 seq_cst, align 4
  %sleepp = getelementptr i8, ptr %cc, i64 8
  %sleeping = load atomic i32, ptr %sleepp seq_cst, align 4
  %asleep = icmp ne i32 %sleeping, 0
  br i1 %asleep, label %wake, label %posted
wake:
  %r = call i64 (i64, ...) @syscall(i64 {_FUTEX}, ptr %cc, i64 {_WAKE}, i64 1, ptr null, ptr null,
                                    i64 0)
  br label %posted
posted:
  %k1 = add i64 %k, 1
  br label %post
own:
  %a0 = load ptr, ptr %args, align 8
  call void %fn(ptr %a0)
  br label %join
join:
  %j = phi i64 [1, %own], [%j1, %joined]
  %left = icmp ult i64 %j, %n
  br i1 %left, label %join.one, label %exit
join.one:
  %jworker = sub i64 %j, 1
  %jc = getelementptr [{CONTROL_BYTES} x i8], ptr %ctls, i64 %jworker
  %want = load atomic i32, ptr %jc monotonic, align 4
  %jdonep = getelementptr i8, ptr %jc, i64 4
  br label %spin
spin:
  %s = phi i32 [0, %join.one], [%s1, %relax], [%s1, %yield]
  %done = load atomic i32, ptr %jdonep acquire, align 4
  %finished = icmp eq i32 %done, %want
  br i1 %finished, label %joined, label %idle
idle:
  %s1 = add i32 %s, 1
  %patient = icmp ult i32 %s1, {_CALLER_SPINS}
  br i1 %patient, label %relax, label %yield
relax:
  call void @llvm.x86.sse2.pause()
  br label %spin
yield:
  %y = call i32 @sched_yield()
  br label %spin
joined:
  %j1 = add i64 %j, 1
  br label %join
exit:
  ret void
}}
"""


def pool_module(triple: str, datalayout: str) -> str:
    """The LLVM module with `gl_pool_worker(ctl)` and `gl_pool_run(ctls, n, fn, args)`."""
    lines = [f'target triple = "{triple}"', f'target datalayout = "{datalayout}"', "",
             "declare i64 @syscall(i64, ...)", "declare i32 @sched_yield()",
             "declare void @llvm.x86.sse2.pause()", _WORKER, _RUN]
    return "\n".join(lines) + "\n"


def supported(triple: str) -> bool:
    """The native pool needs x86-64 Linux (its futex syscall number and `pause`)."""
    return triple.startswith("x86_64") and "linux" in triple
