"""Scalar IR to LLVM IR text: one entry function that loops over a range of thread indices."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.nodes import Block, If, KernelIR, Loop, Op, Var, pointer_root, walk_ops
from ..ir.prims import PRIMS, Effect
from ..types import BLOCK_ARGS, BLOCK_DIMS, BLOCK_END, BLOCK_START, BLOCK_STATUS
from .llvm_ops import OpEmitter
from .llvm_types import reg_type

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


class KernelEmitter(OpEmitter):
    """Emits one kernel's entry function; OpEmitter provides the per-primitive rules."""

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
        f.start_block("exit")
        f.emit("ret void")
        head = f"define void @{self.symbol}(ptr noalias nocapture %block) nounwind {{"
        return "\n".join([head, *f.lines, "}"])

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
        """One copy of the loop over thread indices, its SSA names and labels prefixed."""
        f = self.f
        self.prefix, self.names = prefix, names
        self.grads_known = prefix == "c."
        f.start_block(f"{prefix}pre")
        f.emit(f"br label %{prefix}thread")
        f.start_block(f"{prefix}thread")
        f.emit(f"%{prefix}t = phi i64 [%start, %{prefix}pre], [%{prefix}t.next, %{prefix}latch]")
        if self.kernel.reverse_threads:
            f.emit(f"%{prefix}tid = sub i64 %last.thread, %{prefix}t")
        else:
            f.emit(f"%{prefix}tid = add i64 %{prefix}t, 0")
        if self.uses_stack:
            f.emit("store i64 0, ptr %sp, align 8")
        self.block(self.kernel.body)
        f.emit(f"br label %{prefix}latch")
        f.start_block(f"{prefix}latch")
        f.emit(f"%{prefix}t.next = add nuw nsw i64 %{prefix}t, 1")
        f.emit(f"%{prefix}more = icmp slt i64 %{prefix}t.next, %end")
        f.emit(f"br i1 %{prefix}more, label %{prefix}thread, label %exit, !llvm.loop !0")

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

    def emit_loop(self, s: Loop) -> None:
        f = self.f
        head_l, body_l, exit_l = f.fresh("loop"), f.fresh("body"), f.fresh("endloop")
        pre = f.label
        f.emit(f"br label %{head_l}")
        f.start_block(head_l)
        phi_at = len(f.lines)
        for p in s.params:
            self.define(p)
        self.block(s.cond)
        f.emit(f"br i1 {self.name(s.cond.yields[0])}, label %{body_l}, label %{exit_l}")
        f.start_block(body_l)
        self.block(s.body)
        back = f.label
        f.emit(f"br label %{head_l}")
        phis = [f"  {self.name(p)} = phi {reg_type(p.type)} [{self.name(i)}, %{pre}], "
                f"[{self.name(y)}, %{back}]"
                for p, i, y in zip(s.params, s.inits, s.body.yields, strict=True)]
        f.lines[phi_at:phi_at] = phis
        f.start_block(exit_l)
        for r, p in zip(s.results, s.params, strict=True):
            self.names[r.id] = self.name(p)


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
    lines.extend(sorted(em.declares))
    lines += ["", body, "", '!0 = distinct !{!0, !1}', '!1 = !{!"llvm.loop.mustprogress"}',
              '!2 = !{!"branch_weights", i32 1000, i32 1}']
    return "\n".join(lines) + "\n"

