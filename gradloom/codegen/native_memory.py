"""LLVM IR of the streaming fill and copy behind large host copies (runtime/memops.py).

Each store writes one 64-byte line with `!nontemporal`: the line goes to memory without being
read into the cache first, which a plain store does (and what a large fill mostly waits on).
Measured on the development VM, 64 MiB right after other work had dirtied the caches: a fill
takes 6.9 ms with glibc's memset on one thread, 3.9 on two, 1.7 streamed on two; a copy 5.3 ms
with memcpy on two threads, 4.1 streamed. Streamed lines also leave the cache, so
runtime/memops.py keeps plain stores for arrays small enough to be read again from it.
"""

from __future__ import annotations

from ..abi import STREAM_LINE

# one store writes STREAM_LINE bytes as <16 x i32>
assert STREAM_LINE == 64

_FILL = """
define void @gl_stream_fill(ptr %dst, i64 %n, ptr %pattern, i64 %plen) nounwind {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %done, label %loop
loop:
  %off = phi i64 [ 0, %entry ], [ %next, %loop ]
  %phase = phi i64 [ 0, %entry ], [ %phase.next, %loop ]
  %from = getelementptr i8, ptr %pattern, i64 %phase
  %line = load <16 x i32>, ptr %from, align 1
  %to = getelementptr i8, ptr %dst, i64 %off
  store <16 x i32> %line, ptr %to, align 64, !nontemporal !0
  %next = add i64 %off, 64
  %phase.1 = add i64 %phase, 64
  %wrap = icmp eq i64 %phase.1, %plen
  %phase.next = select i1 %wrap, i64 0, i64 %phase.1
  %more = icmp ult i64 %next, %n
  br i1 %more, label %loop, label %done
done:
  FENCE
  ret void
}
"""

_COPY = """
define void @gl_stream_copy(ptr %dst, ptr %src, i64 %n) nounwind {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %done, label %loop
loop:
  %off = phi i64 [ 0, %entry ], [ %next, %loop ]
  %from = getelementptr i8, ptr %src, i64 %off
  %line = load <16 x i32>, ptr %from, align 1
  %to = getelementptr i8, ptr %dst, i64 %off
  store <16 x i32> %line, ptr %to, align 64, !nontemporal !0
  %next = add i64 %off, 64
  %more = icmp ult i64 %next, %n
  br i1 %more, label %loop, label %done
done:
  FENCE
  ret void
}
"""

#: the functions the module defines: `gl_stream_fill(dst, n, pattern, plen)` writes n bytes
#: (a multiple of STREAM_LINE, dst aligned to it) repeating the plen-byte pattern (a multiple
#: of STREAM_LINE); `gl_stream_copy(dst, src, n)` copies n bytes (src at any alignment). Both
#: end with a fence, so the lines are in memory before the call returns.
FUNCTIONS = ("gl_stream_fill", "gl_stream_copy")


def memory_module(triple: str, datalayout: str) -> str:
    """The module of FUNCTIONS for one target. On x86 the closing fence is `sfence`, the one
    the architecture documents for ordering streamed stores (LLVM lowers `fence seq_cst` to a
    locked instruction there)."""
    x86 = triple.startswith(("x86_64", "i686", "i386"))
    fence = "call void @llvm.x86.sse.sfence()\n  fence seq_cst" if x86 else "fence seq_cst"
    declare = "declare void @llvm.x86.sse.sfence()\n" if x86 else ""
    body = (_FILL + _COPY).replace("FENCE", fence)
    return (f'target triple = "{triple}"\ntarget datalayout = "{datalayout}"\n'
            f"{declare}{body}\n!0 = !{{i32 1}}\n")
