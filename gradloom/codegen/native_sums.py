"""LLVM IR of the sums of a chunked launch's private buffers into their arrays (x86-64 Linux):
`gl_sum_paged(code, dst, src, n, pagemap, tally)` adds a buffer of n elements into its array
and zeroes it, and visits only the pages the kernel may have written (adding the pages it
looked up and those in use to the two words at `tally`).

A private buffer (runtime/cpu/chunking.py) starts as fresh anonymous memory, so a page that no
thread of its chunk added into was never written: the page table has no page for it. Reading
such pages is not free (22 µs per MiB, each a TLB miss onto the shared zero page) and a launch
whose threads add into a few elements of a large array paid it for the whole array at every
launch. So a buffer of PAGED_SUM_BYTES or more is summed page by page, after reading its entries
in /proc/self/pagemap (`pagemap`: an open descriptor, or -1 where there is none): a page that is
neither present nor swapped out holds only zeros and is skipped; each run of pages in use is
summed in one call (the page after a group's last counts as not in use, which ends its run).
Smaller buffers, and any group of pages whose entries cannot be read, are summed whole.
"""

from __future__ import annotations

from ..abi import JOB, PAGED_SUM_BYTES

#: x86-64 Linux's base page: 4 KiB
_PAGE_SHIFT = 12
#: pagemap entries read by one pread (on the stack: 4 KiB)
_GROUP = 512
#: a pagemap entry's bits 63 (present) and 62 (swapped out)
_IN_USE = 3 << 62

#: the block a private buffer's sum skips when its source is all zero (one AVX-512 vector)
_SUM_BYTES = 64


def _sum_function(name: str, ty: str, add: str, zero: str, skip_zero: bool) -> str:
    """dst[i] += src[i]; src[i] = 0 for i < n: one private buffer summed into its array and
    cleared. Float adds skip zeros, so an element no thread of the chunk touched keeps its
    exact value (a -0.0 stays -0.0). A block of _SUM_BYTES whose source is all zero is skipped
    whole, stores included: a private buffer is mostly zero, and a masked store with no lane
    active into a page never written (the kernel's shared zero page, as `wp.zeros` leaves a
    large array) costs a microcode assist at every launch (measured: neo-Hookean's 1M threads
    adding into one element of a 100k-element `wp.zeros` array, 8 chunks run by the caller:
    11.7 ms, against 3.8 ms serial and 2.5 ms once the array's pages had been written)."""
    size = 8 if ty in ("double", "i64") else 4
    cmp = "fcmp une" if skip_zero else "icmp ne"
    return (f"\ndefine internal void @{name}(ptr noalias %dst, ptr noalias %src, i64 %n) "
            f"nounwind {{\nentry:\n  %nb = and i64 %n, -{_SUM_BYTES // size}\n"
            f"  br label %block\n{_sum_blocks(ty, add, cmp, size, skip_zero)}"
            f"{_sum_tail(ty, add, cmp, zero, size)}exit:\n  ret void\n}}\n")


def _sum_blocks(ty: str, add: str, cmp: str, size: int, skip_zero: bool) -> str:
    """The sum's loop over whole blocks: a block whose source is all zero is skipped."""
    lanes = _SUM_BYTES // size
    vt = f"<{lanes} x {ty}>"
    combine = f"%c = {add} {vt} %a, %b"
    if skip_zero:  # lanes whose source is zero keep the destination's value
        combine = (f"%s = {add} {vt} %a, %b\n"
                   f"  %c = select <{lanes} x i1> %nz, {vt} %s, {vt} %a")
    return f"""block:
  %i = phi i64 [0, %entry], [%i1, %block.next]
  %bmore = icmp ult i64 %i, %nb
  br i1 %bmore, label %block.load, label %tail
block.load:
  %sp = getelementptr {ty}, ptr %src, i64 %i
  %b = load {vt}, ptr %sp, align {size}
  %nz = {cmp} {vt} %b, zeroinitializer
  %bits = bitcast <{lanes} x i1> %nz to i{lanes}
  %touched = icmp ne i{lanes} %bits, 0
  br i1 %touched, label %block.add, label %block.next
block.add:
  %dp = getelementptr {ty}, ptr %dst, i64 %i
  %a = load {vt}, ptr %dp, align {size}
  {combine}
  store {vt} %c, ptr %dp, align {size}
  store {vt} zeroinitializer, ptr %sp, align {size}
  br label %block.next
block.next:
  %i1 = add nuw i64 %i, {lanes}
  br label %block
"""


def _sum_tail(ty: str, add: str, cmp: str, zero: str, size: int) -> str:
    """The sum's last elements, after the whole blocks, one at a time (zeros skipped)."""
    return f"""tail:
  %j = phi i64 [%nb, %block], [%j1, %tail.next]
  %tmore = icmp ult i64 %j, %n
  br i1 %tmore, label %tail.load, label %exit
tail.load:
  %tsp = getelementptr {ty}, ptr %src, i64 %j
  %tb = load {ty}, ptr %tsp, align {size}
  %tnz = {cmp} {ty} %tb, {zero}
  br i1 %tnz, label %tail.add, label %tail.next
tail.add:
  %tdp = getelementptr {ty}, ptr %dst, i64 %j
  %ta = load {ty}, ptr %tdp, align {size}
  %tc = {add} {ty} %ta, %tb
  store {ty} %tc, ptr %tdp, align {size}
  store {ty} {zero}, ptr %tsp, align {size}
  br label %tail.next
tail.next:
  %j1 = add nuw i64 %j, 1
  br label %tail
"""


#: per sum code: the name's suffix, the element type, its add, its zero, whether zeros are skipped
_KINDS = ((JOB.SUM_F32, "f32", "float", "fadd", "0.0", True),
          (JOB.SUM_F64, "f64", "double", "fadd", "0.0", True),
          (JOB.SUM_I32, "i32", "i32", "add", "0", False),
          (JOB.SUM_I64, "i64", "i64", "add", "0", False))
_ELEMENT_SUMS = "".join(_sum_function(f"gl_sum_{name}", ty, add, zero, skip)
                        for _, name, ty, add, zero, skip in _KINDS)
_CASES = "\n".join(f"    i64 {code}, label %{name}" for code, name, *_ in _KINDS)
_CALLS = "".join(f"{name}:\n  call void @gl_sum_{name}(ptr %dst, ptr %src, i64 %n)\n"
                 f"  br label %exit\n" for _, name, *_ in _KINDS)

_DISPATCH = f"""
define internal void @gl_sum_code(i64 %code, ptr %dst, ptr %src, i64 %n) nounwind {{
entry:
  switch i64 %code, label %exit [
{_CASES}
  ]
{_CALLS}exit:
  ret void
}}

; the elements in pages [first, last) of the buffer at addresses [%s, %e)
define internal void @gl_sum_pages(i64 %code, ptr %dst, ptr %src, i64 %s, i64 %e, i64 %size,
                                   i64 %first, i64 %last) nounwind {{
entry:
  %lo = shl i64 %first, {_PAGE_SHIFT}
  %hi = shl i64 %last, {_PAGE_SHIFT}
  %a = call i64 @llvm.umax.i64(i64 %lo, i64 %s)
  %b = call i64 @llvm.umin.i64(i64 %hi, i64 %e)
  %off = sub i64 %a, %s
  %len = sub i64 %b, %a
  %n = udiv i64 %len, %size
  %d = getelementptr i8, ptr %dst, i64 %off
  %p = getelementptr i8, ptr %src, i64 %off
  call void @gl_sum_code(i64 %code, ptr %d, ptr %p, i64 %n)
  ret void
}}
"""

_PAGED = f"""
define internal void @gl_sum_paged(i64 %code, ptr %dst, ptr %src, i64 %n, i64 %fd,
                                   ptr %tally) nounwind {{
entry:
  %wide = icmp eq i64 %code, {JOB.SUM_F64}
  %wide2 = icmp eq i64 %code, {JOB.SUM_I64}
  %w = or i1 %wide, %wide2
  %size = select i1 %w, i64 8, i64 4
  %bytes = mul i64 %n, %size
  %small = icmp ult i64 %bytes, {PAGED_SUM_BYTES}
  %nofd = icmp slt i64 %fd, 0
  %whole = or i1 %small, %nofd
  br i1 %whole, label %all, label %walk
all:
  call void @gl_sum_code(i64 %code, ptr %dst, ptr %src, i64 %n)
  ret void
walk:
  %entries = alloca [{_GROUP} x i64], align 8
  %fd32 = trunc i64 %fd to i32
  %s = ptrtoint ptr %src to i64
  %e = add i64 %s, %bytes
  %first = lshr i64 %s, {_PAGE_SHIFT}
  %e1 = sub i64 %e, 1
  %last = lshr i64 %e1, {_PAGE_SHIFT}
  br label %group
group:
  %g = phi i64 [%first, %walk], [%g1, %group.next]
  %more = icmp ule i64 %g, %last
  br i1 %more, label %read, label %done
read:
  %left = sub i64 %last, %g
  %left1 = add i64 %left, 1
  %cnt = call i64 @llvm.umin.i64(i64 %left1, i64 {_GROUP})
  %len = shl i64 %cnt, 3
  %at = shl i64 %g, 3
  %got = call i64 @pread(i32 %fd32, ptr %entries, i64 %len, i64 %at)
  %ok = icmp eq i64 %got, %len
  br i1 %ok, label %page, label %unread
unread:
  %gend = add i64 %g, %cnt
  call void @gl_sum_pages(i64 %code, ptr %dst, ptr %src, i64 %s, i64 %e, i64 %size,
                          i64 %g, i64 %gend)
  br label %group.next
page:
  %p = phi i64 [0, %read], [%p1, %page.next]
  %run = phi i64 [-1, %read], [%run1, %page.next]
  %nused = phi i64 [0, %read], [%nused1, %page.next]
  %pmore = icmp ule i64 %p, %cnt
  br i1 %pmore, label %page.look, label %group.end
page.look:
  %inrun = icmp sge i64 %run, 0
  %inside = icmp ult i64 %p, %cnt
  br i1 %inside, label %page.read, label %page.unused
page.read:
  %ep = getelementptr i64, ptr %entries, i64 %p
  %pme = load i64, ptr %ep, align 8
  %flags = and i64 %pme, {_IN_USE}
  %used = icmp ne i64 %flags, 0
  br i1 %used, label %page.used, label %page.unused
page.used:
  %started = select i1 %inrun, i64 %run, i64 %p
  br label %page.next
page.unused:
  br i1 %inrun, label %page.flush, label %page.next
page.flush:
  %rlo = add i64 %g, %run
  %rhi = add i64 %g, %p
  call void @gl_sum_pages(i64 %code, ptr %dst, ptr %src, i64 %s, i64 %e, i64 %size,
                          i64 %rlo, i64 %rhi)
  br label %page.next
page.next:
  %run1 = phi i64 [%started, %page.used], [-1, %page.unused], [-1, %page.flush]
  %one = phi i64 [1, %page.used], [0, %page.unused], [0, %page.flush]
  %nused1 = add i64 %nused, %one
  %p1 = add i64 %p, 1
  br label %page
group.end:
  %walked0 = load i64, ptr %tally, align 8
  %walked = add i64 %walked0, %cnt
  store i64 %walked, ptr %tally, align 8
  %usedp = getelementptr i64, ptr %tally, i64 1
  %inuse0 = load i64, ptr %usedp, align 8
  %inuse = add i64 %inuse0, %nused
  store i64 %inuse, ptr %usedp, align 8
  br label %group.next
group.next:
  %g1 = add i64 %g, %cnt
  br label %group
done:
  ret void
}}
"""

#: the declarations the sums need, and their IR
DECLARATIONS = ("declare i64 @pread(i32, ptr, i64, i64)", "declare i64 @llvm.umin.i64(i64, i64)",
                "declare i64 @llvm.umax.i64(i64, i64)")
SUMS = _ELEMENT_SUMS + _DISPATCH + _PAGED
