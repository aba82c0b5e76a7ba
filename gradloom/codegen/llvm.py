"""Scalar IR to LLVM IR text: one entry function that loops over a range of thread indices."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.nodes import Block, If, KernelIR, Loop, Op, Var, pointer_root, walk_ops
from ..ir.prims import PRIMS, Effect
from ..types import (
    BLOCK_ARGS,
    BLOCK_DIMS,
    BLOCK_END,
    BLOCK_START,
    BLOCK_STATUS,
    STATUS_INTERRUPTED,
)
from .llvm_ops import OpEmitter, string_global
from .llvm_types import reg_type
from .loops import LoopEmitter
from .signals import KERNEL_DECLARES, POLL_THREADS

#: The entry takes one pointer, to a launch block (layout: types.BLOCK_*; runtime/launch.py
#: fills it): one ctypes argument keeps a launch's foreign call cheap, and each worker thread
#: gets its own block.
ENTRY_SIGNATURE = "(ptr block)"


@dataclass
class FunctionText:
    """Lines of one LLVM function under construction, and the label being appended to."""

    lines: list[str] = field(default_factory=list)
    label: str = "entry"
    counter: int = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, line: str) -> None:
        self.lines.append("  " + line)

    def start_block(self, label: str) -> None:
        self.lines.append(f"{label}:")
        self.label = label


class KernelEmitter(OpEmitter, LoopEmitter):
    """Emits one kernel's entry function; OpEmitter provides the per-primitive rules,
    LoopEmitter the loops (strip-mined to poll for interrupts)."""

    def __init__(self, kernel: KernelIR, symbol: str, private_adds: tuple[int, ...] = ()) -> None:
        self.kernel = kernel
        #: argument offsets of pointers whose memory no two threads add into at once (each
        #: worker of a split launch gets a private copy: passes/threads.py), so adds into it
        #: need no atomic instruction
        self.private_adds = frozenset(private_adds)
        self.defs = {op.result.id: op for op in walk_ops(kernel.body) if op.result is not None}
        self.symbol = symbol
        self.f = FunctionText()
        self.names: dict[int, str] = {}
        self.declares: set[str] = set()
        self.prefix = ""  # distinguishes the SSA names of the two thread-loop copies
        self.uses_stack = False
        # in the fast thread-loop copy every gradient pointer is known non-null (checked once)
        self.grads_known = False
        self.grad_roots = _grad_roots(kernel.body)

    def name(self, v: Var) -> str:
        return self.names[v.id]

    def root_offset(self, p: Var) -> int | None:
        """The argument offset pointer p derives from (None: not an argument)."""
        d = pointer_root(self.defs, p)
        return int(d.attr) if d is not None and d.prim == "arg" else None

    def define(self, v: Var) -> str:
        n = f"%{self.prefix}v{v.id}"
        self.names[v.id] = n
        return n

    def emit_function(self) -> str:
        f = self.f
        f.start_block("entry")
        f.emit("%dims = getelementptr i8, ptr %block, i64 " + str(BLOCK_DIMS))
        f.emit("%err = getelementptr i8, ptr %block, i64 " + str(BLOCK_STATUS))
        f.emit("%args = getelementptr i8, ptr %block, i64 " + str(BLOCK_ARGS))
        f.emit("%startp = getelementptr i8, ptr %block, i64 " + str(BLOCK_START))
        f.emit("%start = load i64, ptr %startp, align 8")
        f.emit("%endp = getelementptr i8, ptr %block, i64 " + str(BLOCK_END))
        f.emit("%end = load i64, ptr %endp, align 8")
        self.enter()
        self.hoist_args(self.kernel.body)
        for k in range(4):
            f.emit(f"%dimp{k} = getelementptr i64, ptr %dims, i64 {k}")
            f.emit(f"%dim{k} = load i64, ptr %dimp{k}, align 8")
        self.uses_stack = any(op.prim == "push" for op in walk_ops(self.kernel.body))
        if self.uses_stack:
            self.stack_setup()
        f.emit("%ends = add i64 %start, %end")
        f.emit("%last.thread = sub i64 %ends, 1")
        f.emit("%nonempty = icmp slt i64 %start, %end")
        f.emit("br i1 %nonempty, label %dispatch, label %exit")
        f.start_block("dispatch")
        arg_names = dict(self.names)
        if self.kernel.unit_strides:
            f.emit(f"br i1 {self.all_contiguous()}, label %c.pre, label %s.pre")
            self.thread_loop("c.", {**arg_names, **{v.id: str(size) for v, size in
                                                     self.kernel.unit_strides}})
        else:
            f.emit("br label %s.pre")
        self.thread_loop("s.", arg_names)
        f.start_block("interrupted")
        f.emit(f"store i32 {STATUS_INTERRUPTED}, ptr %err, align 4")
        f.emit("br label %exit")
        f.start_block("exit")
        f.emit("store atomic ptr null, ptr @gl_running monotonic, align 8")
        f.emit("ret void")
        head = f"define void @{self.symbol}(ptr noalias nocapture %block) nounwind {{"
        return "\n".join([head, *f.lines, "}"])

    def enter(self) -> None:
        """Note the interrupt count (codegen/signals.py) and which kernel runs; every way out
        of the entry goes through the `exit` block, which clears the second."""
        name = string_global(self.declares, f"'{self.kernel.name}'")
        self.f.emit("%interrupts = load atomic i64, ptr @gl_interrupts monotonic, align 8")
        self.f.emit(f"store atomic ptr {name}, ptr @gl_running monotonic, align 8")

    def stack_setup(self) -> None:
        """The adjoint stack: its base and capacity follow the error word in the status block."""
        f = self.f
        f.emit("%sp = alloca i64, align 8")
        f.emit("%stack.basep = getelementptr i8, ptr %err, i64 8")
        f.emit("%stack.base = load ptr, ptr %stack.basep, align 8")
        f.emit("%stack.capp = getelementptr i8, ptr %err, i64 16")
        f.emit("%stack.cap = load i64, ptr %stack.capp, align 8")
        f.emit("%failed.thread = getelementptr i8, ptr %err, i64 24")

    def all_contiguous(self) -> str:
        """An i1 that is true when every array's innermost stride is its element size (and, in
        an adjoint, every gradient pointer it uses is non-null)."""
        acc = "true"
        for v in self.grad_roots:
            live, both = self.f.fresh("%glive"), self.f.fresh("%unit")
            self.f.emit(f"{live} = icmp ne ptr {self.name(v)}, null")
            self.f.emit(f"{both} = and i1 {acc}, {live}")
            acc = both
        for v, size in self.kernel.unit_strides:
            eq, both = self.f.fresh("%unit"), self.f.fresh("%unit")
            self.f.emit(f"{eq} = icmp eq i64 {self.name(v)}, {size}")
            self.f.emit(f"{both} = and i1 {acc}, {eq}")
            acc = both
        return acc

    def thread_loop(self, prefix: str, names: dict[int, str]) -> None:
        """One copy of the loop over thread indices, its SSA names and labels prefixed: chunks
        of POLL_THREADS threads, with an interrupt poll between chunks (the inner loop stays
        free of it, so it still vectorises)."""
        f = self.f
        p = prefix
        self.prefix, self.names = prefix, names
        self.grads_known = prefix == "c."
        f.start_block(f"{p}pre")
        f.emit(f"br label %{p}chunk")
        f.start_block(f"{p}chunk")
        f.emit(f"%{p}c = phi i64 [%start, %{p}pre], [%{p}cend, %{p}polled]")
        f.emit(f"%{p}cnext = add nuw nsw i64 %{p}c, {POLL_THREADS}")
        f.emit(f"%{p}cless = icmp slt i64 %{p}cnext, %end")
        f.emit(f"%{p}cend = select i1 %{p}cless, i64 %{p}cnext, i64 %end")
        f.emit(f"br label %{p}thread")
        f.start_block(f"{p}thread")
        f.emit(f"%{p}t = phi i64 [%{p}c, %{p}chunk], [%{p}t.next, %{p}latch]")
        if self.kernel.reverse_threads:
            f.emit(f"%{p}tid = sub i64 %last.thread, %{p}t")
        else:
            f.emit(f"%{p}tid = add i64 %{p}t, 0")
        if self.uses_stack:
            f.emit("store i64 0, ptr %sp, align 8")
        self.block(self.kernel.body)
        f.emit(f"br label %{p}latch")
        f.start_block(f"{p}latch")
        f.emit(f"%{p}t.next = add nuw nsw i64 %{p}t, 1")
        f.emit(f"%{p}more = icmp slt i64 %{p}t.next, %{p}cend")
        f.emit(f"br i1 %{p}more, label %{p}thread, label %{p}chunk.end, !llvm.loop !0")
        f.start_block(f"{p}chunk.end")
        f.emit(f"%{p}cmore = icmp slt i64 %{p}cend, %end")
        f.emit(f"br i1 %{p}cmore, label %{p}poll, label %exit")
        f.start_block(f"{p}poll")
        self.poll(f"{p}polled")
        f.start_block(f"{p}polled")
        f.emit(f"br label %{p}chunk")

    def hoist_args(self, body: Block) -> None:
        """Kernel arguments are loop-invariant: load them once, before the thread loop."""
        for s in body.stmts:
            if isinstance(s, Op) and s.prim == "arg":
                assert s.result is not None
                self.load_arg(s.result, int(s.attr))

    def load_arg(self, v: Var, offset: int) -> None:
        f = self.f
        ptr = f.fresh("%argp")
        f.emit(f"{ptr} = getelementptr i8, ptr %args, i64 {offset}")
        self.load_value(self.define(v), v.type, ptr, min(v.type.size, 8))

    def block(self, b: Block) -> None:
        for s in b.stmts:
            if isinstance(s, Op):
                if s.prim != "arg":
                    self.op(s)
            elif isinstance(s, If):
                self.emit_if(s)
            elif isinstance(s, Loop):
                self.emit_loop(s)
            else:  # kernel.py inlines @wp.func_grad regions before codegen
                raise AssertionError("codegen got an un-inlined custom-gradient region")

    def emit_if(self, s: If) -> None:
        f = self.f
        then_l, else_l, merge_l = f.fresh("then"), f.fresh("else"), f.fresh("endif")
        f.emit(f"br i1 {self.name(s.cond)}, label %{then_l}, label %{else_l}")
        ends = []
        for label, blk in ((then_l, s.then), (else_l, s.orelse)):
            f.start_block(label)
            self.block(blk)
            ends.append((f.label, [self.name(y) for y in blk.yields]))
            f.emit(f"br label %{merge_l}")
        f.start_block(merge_l)
        for i, r in enumerate(s.results):
            incoming = ", ".join(f"[{vals[i]}, %{lab}]" for lab, vals in ends)
            f.emit(f"{self.define(r)} = phi {reg_type(r.type)} {incoming}")

def _grad_roots(body: Block) -> list[Var]:
    """The kernel arguments that gradient accesses (adj_add/read/take) point into."""
    ops = list(walk_ops(body))
    defs = {op.result.id: op for op in ops if op.result is not None}
    roots: dict[int, Var] = {}
    for op in ops:
        if Effect.GRAD in PRIMS[op.prim].effects:
            d = pointer_root(defs, op.args[0])
            p = d.result if d is not None and d.result is not None else op.args[0]
            roots[p.id] = p
    return list(roots.values())


def emit_module(kernel: KernelIR, symbol: str, triple: str, datalayout: str,
                private_adds: tuple[int, ...] = ()) -> str:
    """A complete LLVM module holding the kernel's entry function."""
    em = KernelEmitter(kernel, symbol, private_adds)
    body = em.emit_function()
    lines = [f'target triple = "{triple}"', f'target datalayout = "{datalayout}"', ""]
    lines.extend(KERNEL_DECLARES)
    lines.extend(sorted(em.declares))
    lines += ["", body, "", '!0 = distinct !{!0, !1}', '!1 = !{!"llvm.loop.mustprogress"}',
              '!2 = !{!"branch_weights", i32 1000, i32 1}']
    return "\n".join(lines) + "\n"

