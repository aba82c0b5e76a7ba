"""LLVM IR of the native worker pool that runs chunked launches (x86-64 Linux).

A chunked launch cuts its thread range into chunks (a job: abi.JOB). The calling thread and
the pool's workers claim chunks one at a time from one atomic counter, so a worker that is late or
descheduled leaves its chunks to the caller instead of holding it up, and each chunk adds into
its own row of pointers (runtime/cpu/parallel.py: chunk 0 into the real arrays, chunk c > 0 into
private zeroed buffers), whichever thread runs it. After the last chunk the caller puts its
own block's pointers back, sums the private buffers into the arrays in chunk order — and zeroes
them for the next launch — so the result depends on the chunks, never on which thread ran
which (the sums, which visit only the pages the kernel wrote: codegen/native_sums.py).

Each worker thread enters `gl_pool_worker` once, through ctypes (which releases the GIL for good),
and lives in native code (in the idle scheduling class: runtime/pool.py): after a job it spins
for a while (yielding its core to anything else that wants it), then sleeps on a futex. `gl_pool_run(ctl, job)` is one ctypes call per launch:
it posts the job (or, without JOB.WAKE, runs every chunk itself on a counter of its own), runs
chunks, waits for the workers' last chunks (spinning briefly, then sleeping on a futex), sums.

Control memory of a pool (types.POOL_CONTROL_BYTES, each word on its own cache line): the claim
word (i64: chunks << 32 | next chunk) at 0; the count of finished chunks (i32) at 64 and the
caller's "sleeping" flag at 68; the posted-job sequence number (i32, the workers' futex word) at
128 and the count of sleeping workers at 132; the current job's address at 192. A worker that
claims a chunk reads the job's fields only after its claim succeeded, so a worker woken late can
only ever take part in the job that is running.
"""

from __future__ import annotations

from ..abi import (
    BLOCK_ARGS,
    BLOCK_DIMS,
    BLOCK_END,
    BLOCK_START,
    BLOCK_STATUS,
    JOB,
    MAX_DIMS,
    STATUS_BYTES,
    STATUS_THREAD,
)
from . import native_sums

CTL_CLAIM, CTL_DONE, CTL_WAITING, CTL_POSTED, CTL_SLEEPERS, CTL_JOB = 0, 64, 68, 128, 132, 192
#: a caller-only job counts on words of its own, after the job's public fields
JOB_OWN_CLAIM, JOB_OWN_DONE, JOB_OWN_WAITING = 144, 152, 156
_FUTEX = 202  # SYS_futex on x86-64 Linux
_WAIT, _WAKE = 128, 129  # FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE
#: how long an idle worker spins for the next job before it sleeps (back-to-back launches find
#: it awake); it yields its core every _YIELD_EVERY pauses, so a busy machine loses little
WORKER_SPIN_NS = 300_000
_YIELD_EVERY = 64
_HELPERS = f"""
@gl.timeout = private constant {{i64, i64}} {{i64 0, i64 10000000}}

define internal i64 @gl_now() nounwind {{
  %ts = alloca {{i64, i64}}, align 8
  %r = call i32 @clock_gettime(i32 1, ptr %ts)
  %s = load i64, ptr %ts, align 8
  %nsp = getelementptr i8, ptr %ts, i64 8
  %ns = load i64, ptr %nsp, align 8
  %t = mul i64 %s, 1000000000
  %now = add i64 %t, %ns
  ret i64 %now
}}

define internal void @gl_futex(ptr %word, i64 %op, i64 %value, ptr %timeout) nounwind {{
  %r = call i64 (i64, ...) @syscall(i64 {_FUTEX}, ptr %word, i64 %op, i64 %value, ptr %timeout,
                                    ptr null, i64 0)
  ret void
}}
"""


def _field(name: str, offset: int, ty: str = "i64", base: str = "%job") -> str:
    return (f"%{name}.p = getelementptr i8, ptr {base}, i64 {offset}\n"
            f"  %{name} = load {ty}, ptr %{name}.p, align 8")


# gl_chunks(jobpp, claimp, donep, waitp, w, stats): claim chunks until none is left and run each
# on thread w's launch block; stats (the caller's) gets chunks, threads and nanoseconds
_CHUNKS = f"""
define internal void @gl_chunks(ptr %jobpp, ptr %claimp, ptr %donep, ptr %waitp, i64 %w,
                                ptr %stats) nounwind {{
entry:
  %timed = icmp ne ptr %stats, null
  br label %claim
claim:
  %old = atomicrmw add ptr %claimp, i64 1 acq_rel, align 8
  %k = lshr i64 %old, 32
  %c = and i64 %old, 4294967295
  %have = icmp ult i64 %c, %k
  br i1 %have, label %run, label %out
run:
  %job = load ptr, ptr %jobpp, align 8
  {_field("fn", JOB.FN, "ptr")}
  {_field("total", JOB.TOTAL)}
  {_field("blocks", JOB.BLOCKS, "ptr")}
  %bp = getelementptr ptr, ptr %blocks, i64 %w
  %b = load ptr, ptr %bp, align 8
  %q = udiv i64 %total, %k
  %r = urem i64 %total, %k
  %cq = mul i64 %c, %q
  %early = icmp ult i64 %c, %r
  %cr = select i1 %early, i64 %c, i64 %r
  %lo = add i64 %cq, %cr
  %plus = zext i1 %early to i64
  %len = add i64 %q, %plus
  %hi = add i64 %lo, %len
  %startp = getelementptr i8, ptr %b, i64 {BLOCK_START}
  store i64 %lo, ptr %startp, align 8
  %endp = getelementptr i8, ptr %b, i64 {BLOCK_END}
  store i64 %hi, ptr %endp, align 8
  {_field("ns", JOB.NSCATTER)}
  {_field("offs", JOB.OFFSETS, "ptr")}
  {_field("ptrs", JOB.PTRS, "ptr")}
  %row = mul i64 %c, %ns
  br label %patch
patch:
  %s = phi i64 [0, %run], [%s1, %patch.one]
  %pmore = icmp ult i64 %s, %ns
  br i1 %pmore, label %patch.one, label %call
patch.one:
  %offp = getelementptr i64, ptr %offs, i64 %s
  %off = load i64, ptr %offp, align 8
  %idx = add i64 %row, %s
  %pp = getelementptr i64, ptr %ptrs, i64 %idx
  %pv = load i64, ptr %pp, align 8
  %slot = getelementptr i8, ptr %b, i64 %off
  store i64 %pv, ptr %slot, align 8
  %s1 = add i64 %s, 1
  br label %patch
call:
  %status = getelementptr i8, ptr %b, i64 {BLOCK_STATUS}
  br i1 %timed, label %clock0, label %go
clock0:
  %t0c = call i64 @gl_now()
  br label %go
go:
  %t0 = phi i64 [0, %call], [%t0c, %clock0]
  call void %fn(ptr %b)
  br i1 %timed, label %clock1, label %check
clock1:
  %t1 = call i64 @gl_now()
  %dt = sub i64 %t1, %t0
  %st.nsp = getelementptr i8, ptr %stats, i64 {JOB.CALLER_NS - JOB.CALLER_CHUNKS}
  %st.ns = load i64, ptr %st.nsp, align 8
  %st.ns1 = add i64 %st.ns, %dt
  store i64 %st.ns1, ptr %st.nsp, align 8
  %st.n = load i64, ptr %stats, align 8
  %st.n1 = add i64 %st.n, 1
  store i64 %st.n1, ptr %stats, align 8
  %st.thp = getelementptr i8, ptr %stats, i64 {JOB.CALLER_THREADS - JOB.CALLER_CHUNKS}
  %st.th = load i64, ptr %st.thp, align 8
  %st.th1 = add i64 %st.th, %len
  store i64 %st.th1, ptr %st.thp, align 8
  br label %check
check:
  %err = load i32, ptr %status, align 4
  %bad = icmp ne i32 %err, 0
  br i1 %bad, label %record, label %finish
record:
  {_field("records", JOB.RECORDS, "ptr")}
  %roff = mul i64 %c, {JOB.RECORD}
  %rec = getelementptr i8, ptr %records, i64 %roff
  call void @llvm.memcpy.p0.p0.i64(ptr %rec, ptr %status, i64 {STATUS_BYTES}, i1 false)
  %recw = getelementptr i8, ptr %rec, i64 {STATUS_BYTES}
  store i64 %w, ptr %recw, align 8
  store i64 0, ptr %status, align 8
  %failp = getelementptr i8, ptr %status, i64 {STATUS_THREAD}
  store i64 0, ptr %failp, align 8
  %stoppedp = getelementptr i8, ptr %job, i64 {JOB.STOPPED}
  %st = atomicrmw add ptr %stoppedp, i64 1 seq_cst, align 8
  br label %finish
finish:
  %d = atomicrmw add ptr %donep, i32 1 seq_cst, align 4
  %d1 = add i32 %d, 1
  %k32 = trunc i64 %k to i32
  %last = icmp eq i32 %d1, %k32
  br i1 %last, label %checkwait, label %claim
checkwait:
  %waiting = load atomic i32, ptr %waitp seq_cst, align 4
  %asleep = icmp ne i32 %waiting, 0
  br i1 %asleep, label %wake, label %claim
wake:
  call void @gl_futex(ptr %donep, i64 {_WAKE}, i64 1, ptr null)
  br label %claim
out:
  ret void
}}
"""

_WORKER = f"""
define void @gl_pool_worker(ptr %arg) nounwind {{
entry:
  %ctl = load ptr, ptr %arg, align 8
  %wp = getelementptr i8, ptr %arg, i64 8
  %w = load i64, ptr %wp, align 8
  %claimp = getelementptr i8, ptr %ctl, i64 {CTL_CLAIM}
  %donep = getelementptr i8, ptr %ctl, i64 {CTL_DONE}
  %waitp = getelementptr i8, ptr %ctl, i64 {CTL_WAITING}
  %postedp = getelementptr i8, ptr %ctl, i64 {CTL_POSTED}
  %sleepersp = getelementptr i8, ptr %ctl, i64 {CTL_SLEEPERS}
  %jobpp = getelementptr i8, ptr %ctl, i64 {CTL_JOB}
  %first = load atomic i32, ptr %postedp acquire, align 4
  br label %wait
wait:
  %last = phi i32 [%first, %entry], [%last, %woke], [%seq, %work]
  %since = call i64 @gl_now()
  br label %spin
spin:
  %k = phi i32 [0, %wait], [%k1, %more]
  %seq = load atomic i32, ptr %postedp acquire, align 4
  %posted = icmp ne i32 %seq, %last
  br i1 %posted, label %work, label %pause
pause:
  call void @llvm.x86.sse2.pause()
  %k1 = add i32 %k, 1
  %round = and i32 %k1, {_YIELD_EVERY - 1}
  %yieldnow = icmp eq i32 %round, 0
  br i1 %yieldnow, label %yield, label %more
yield:
  %y = call i32 @sched_yield()
  %now = call i64 @gl_now()
  %spent = sub i64 %now, %since
  %patient = icmp slt i64 %spent, {WORKER_SPIN_NS}
  br i1 %patient, label %more, label %sleep
more:
  br label %spin
sleep:
  %in = atomicrmw add ptr %sleepersp, i32 1 seq_cst, align 4
  %again = load atomic i32, ptr %postedp seq_cst, align 4
  %missed = icmp ne i32 %again, %last
  br i1 %missed, label %woke, label %futex
futex:
  %expect = zext i32 %last to i64
  call void @gl_futex(ptr %postedp, i64 {_WAIT}, i64 %expect, ptr null)
  br label %woke
woke:
  %out = atomicrmw sub ptr %sleepersp, i32 1 seq_cst, align 4
  br label %wait
work:
  call void @gl_chunks(ptr %jobpp, ptr %claimp, ptr %donep, ptr %waitp, i64 %w, ptr null)
  br label %wait
}}
"""

_RUN = f"""
define i64 @gl_pool_run(ptr %ctl, ptr %job) nounwind {{
entry:
  %jobpp = alloca ptr, align 8
  store ptr %job, ptr %jobpp, align 8
  {_field("flags", JOB.FLAGS)}
  {_field("k", JOB.CHUNKS)}
  {_field("blocks", JOB.BLOCKS, "ptr")}
  {_field("ns", JOB.NSCATTER)}
  {_field("offs", JOB.OFFSETS, "ptr")}
  {_field("ptrs", JOB.PTRS, "ptr")}
  %b0 = load ptr, ptr %blocks, align 8
  %runs = and i64 %flags, {JOB.RUN}
  %running = icmp ne i64 %runs, 0
  br i1 %running, label %row0, label %sums
row0:
  %s = phi i64 [0, %entry], [%s1, %row0.one]
  %rmore = icmp ult i64 %s, %ns
  br i1 %rmore, label %row0.one, label %prepared
row0.one:
  %offp = getelementptr i64, ptr %offs, i64 %s
  %off = load i64, ptr %offp, align 8
  %slot = getelementptr i8, ptr %b0, i64 %off
  %pv = load i64, ptr %slot, align 8
  %pp = getelementptr i64, ptr %ptrs, i64 %s
  store i64 %pv, ptr %pp, align 8
  %s1 = add i64 %s, 1
  br label %row0
prepared:
  %stats = getelementptr i8, ptr %job, i64 {JOB.CALLER_CHUNKS}
  call void @llvm.memset.p0.i64(ptr %stats, i8 0, i64 32, i1 false)
  %word = shl i64 %k, 32
  %wakes = and i64 %flags, {JOB.WAKE}
  %waking = icmp ne i64 %wakes, 0
  br i1 %waking, label %copy, label %own
copy:
  {_field("n", JOB.THREADS)}
  {_field("bytes", JOB.BLOCK_BYTES)}
  %argbytes = sub i64 %bytes, {BLOCK_ARGS}
  %b0args = getelementptr i8, ptr %b0, i64 {BLOCK_ARGS}
  br label %copy.loop
copy.loop:
  %t = phi i64 [1, %copy], [%t1, %copy.one]
  %cmore = icmp ult i64 %t, %n
  br i1 %cmore, label %copy.one, label %post
copy.one:
  %btp = getelementptr ptr, ptr %blocks, i64 %t
  %bt = load ptr, ptr %btp, align 8
  %btdims = getelementptr i8, ptr %bt, i64 {BLOCK_DIMS}
  %b0dims = getelementptr i8, ptr %b0, i64 {BLOCK_DIMS}
  call void @llvm.memcpy.p0.p0.i64(ptr %btdims, ptr %b0dims, i64 {8 * MAX_DIMS}, i1 false)
  %btargs = getelementptr i8, ptr %bt, i64 {BLOCK_ARGS}
  call void @llvm.memcpy.p0.p0.i64(ptr %btargs, ptr %b0args, i64 %argbytes, i1 false)
  %t1 = add i64 %t, 1
  br label %copy.loop
post:
  %cdone = getelementptr i8, ptr %ctl, i64 {CTL_DONE}
  store atomic i32 0, ptr %cdone monotonic, align 4
  %cwait = getelementptr i8, ptr %ctl, i64 {CTL_WAITING}
  store atomic i32 0, ptr %cwait monotonic, align 4
  %cjob = getelementptr i8, ptr %ctl, i64 {CTL_JOB}
  store atomic ptr %job, ptr %cjob monotonic, align 8
  %cclaim = getelementptr i8, ptr %ctl, i64 {CTL_CLAIM}
  store atomic i64 %word, ptr %cclaim seq_cst, align 8
  %postedp = getelementptr i8, ptr %ctl, i64 {CTL_POSTED}
  %seq = atomicrmw add ptr %postedp, i32 1 seq_cst, align 4
  %sleepersp = getelementptr i8, ptr %ctl, i64 {CTL_SLEEPERS}
  %sleepers = load atomic i32, ptr %sleepersp seq_cst, align 4
  %asleep = icmp ne i32 %sleepers, 0
  br i1 %asleep, label %wake, label %go
wake:
  %wanted = sub i64 %k, 1
  call void @gl_futex(ptr %postedp, i64 {_WAKE}, i64 %wanted, ptr null)
  br label %go
own:
  %oclaim = getelementptr i8, ptr %job, i64 {JOB_OWN_CLAIM}
  store i64 %word, ptr %oclaim, align 8
  %odone = getelementptr i8, ptr %job, i64 {JOB_OWN_DONE}
  store i32 0, ptr %odone, align 4
  %owait = getelementptr i8, ptr %job, i64 {JOB_OWN_WAITING}
  store i32 0, ptr %owait, align 4
  br label %go
go:
  %claimp = phi ptr [%cclaim, %post], [%cclaim, %wake], [%oclaim, %own]
  %donep = phi ptr [%cdone, %post], [%cdone, %wake], [%odone, %own]
  %waitp = phi ptr [%cwait, %post], [%cwait, %wake], [%owait, %own]
  call void @gl_chunks(ptr %jobpp, ptr %claimp, ptr %donep, ptr %waitp, i64 0, ptr %stats)
  {_field("spin", JOB.SPIN_NS)}
  %k32 = trunc i64 %k to i32
  %since = call i64 @gl_now()
  br label %check
check:
  %i = phi i32 [0, %go], [%i1, %spin.more], [0, %woke]
  %d = load atomic i32, ptr %donep acquire, align 4
  %finished = icmp eq i32 %d, %k32
  br i1 %finished, label %restore, label %spin.pause
spin.pause:
  call void @llvm.x86.sse2.pause()
  %i1 = add i32 %i, 1
  %round = and i32 %i1, 63
  %look = icmp eq i32 %round, 0
  br i1 %look, label %spin.clock, label %spin.more
spin.clock:
  %now = call i64 @gl_now()
  %spent = sub i64 %now, %since
  %patient = icmp slt i64 %spent, %spin
  br i1 %patient, label %spin.more, label %sleep
spin.more:
  br label %check
sleep:
  store atomic i32 1, ptr %waitp seq_cst, align 4
  %d2 = load atomic i32, ptr %donep seq_cst, align 4
  %left = icmp ne i32 %d2, %k32
  br i1 %left, label %futex, label %woke
futex:
  %expect = zext i32 %d2 to i64
  call void @gl_futex(ptr %donep, i64 {_WAIT}, i64 %expect, ptr @gl.timeout)
  br label %woke
woke:
  store atomic i32 0, ptr %waitp seq_cst, align 4
  br label %check
restore:
  %rs = phi i64 [0, %check], [%rs1, %restore.one]
  %rsmore = icmp ult i64 %rs, %ns
  br i1 %rsmore, label %restore.one, label %sums
restore.one:
  %roffp = getelementptr i64, ptr %offs, i64 %rs
  %roff = load i64, ptr %roffp, align 8
  %rslot = getelementptr i8, ptr %b0, i64 %roff
  %rpp = getelementptr i64, ptr %ptrs, i64 %rs
  %rpv = load i64, ptr %rpp, align 8
  store i64 %rpv, ptr %rslot, align 8
  %rs1 = add i64 %rs, 1
  br label %restore
sums:
  %stoppedp = getelementptr i8, ptr %job, i64 {JOB.STOPPED}
  %stopped = load atomic i64, ptr %stoppedp seq_cst, align 8
  %sumflag = and i64 %flags, {JOB.SUM}
  %wantsum = icmp ne i64 %sumflag, 0
  %clean = icmp eq i64 %stopped, 0
  %dosum = and i1 %wantsum, %clean
  br i1 %dosum, label %sum.start, label %exit
sum.start:
  call void @gl_sum_all(ptr %job)
  br label %exit
exit:
  ret i64 %stopped
}}

define internal void @gl_sum_all(ptr %job) nounwind {{
entry:
  {_field("k", JOB.CHUNKS)}
  {_field("ns", JOB.NSCATTER)}
  {_field("ptrs", JOB.PTRS, "ptr")}
  {_field("nr", JOB.NREDUCE)}
  {_field("table", JOB.REDUCE, "ptr")}
  {_field("pagemap", JOB.PAGEMAP)}
  %tally = getelementptr i8, ptr %job, i64 {JOB.PAGES_LOOKED_UP}
  br label %entries
entries:
  %r = phi i64 [0, %entry], [%r1, %next]
  %rmore = icmp ult i64 %r, %nr
  br i1 %rmore, label %one, label %exit
one:
  %ep = getelementptr [3 x i64], ptr %table, i64 %r
  %slot = load i64, ptr %ep, align 8
  %cp = getelementptr i64, ptr %ep, i64 1
  %count = load i64, ptr %cp, align 8
  %kp = getelementptr i64, ptr %ep, i64 2
  %code = load i64, ptr %kp, align 8
  %dstp = getelementptr i64, ptr %ptrs, i64 %slot
  %dst = load ptr, ptr %dstp, align 8
  %nodst = icmp eq ptr %dst, null
  br i1 %nodst, label %next, label %chunks
chunks:
  %c = phi i64 [1, %one], [%c1, %chunk.next]
  %cmore = icmp ult i64 %c, %k
  br i1 %cmore, label %chunk, label %next
chunk:
  %row = mul i64 %c, %ns
  %idx = add i64 %row, %slot
  %srcp = getelementptr i64, ptr %ptrs, i64 %idx
  %src = load ptr, ptr %srcp, align 8
  %nosrc = icmp eq ptr %src, null
  br i1 %nosrc, label %chunk.next, label %dispatch
dispatch:
  call void @gl_sum_paged(i64 %code, ptr %dst, ptr %src, i64 %count, i64 %pagemap,
                          ptr %tally)
  br label %chunk.next
chunk.next:
  %c1 = add i64 %c, 1
  br label %chunks
next:
  %r1 = add i64 %r, 1
  br label %entries
exit:
  ret void
}}
"""


def pool_module(triple: str, datalayout: str) -> str:
    """The LLVM module with `gl_pool_worker(arg)` (arg: the pool's control memory, then the
    worker's index) and `gl_pool_run(ctl, job) -> chunks stopped early`."""
    lines = [f'target triple = "{triple}"', f'target datalayout = "{datalayout}"', "",
             "declare i64 @syscall(i64, ...)", "declare i32 @sched_yield()",
             "declare i32 @clock_gettime(i32, ptr)", "declare void @llvm.x86.sse2.pause()",
             "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)",
             "declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)", *native_sums.DECLARATIONS,
             _HELPERS, native_sums.SUMS, _CHUNKS, _WORKER, _RUN]
    return "\n".join(lines) + "\n"


def supported(triple: str) -> bool:
    """The native pool needs x86-64 Linux (its futex syscall number and `pause`)."""
    return triple.startswith("x86_64") and "linux" in triple
