"""Scalar IR to LLVM IR text, target-neutral: regions, ops and the module around an entry.

Each target subclasses KernelEmitter with its entry function (how a thread finds its index,
where the adjoint stack lives, how loops poll) and its math table (which LLVM intrinsic or
library function computes sin, pow, ...): codegen/entry_cpu.py, codegen/entry_nvptx.py.
"""

from __future__ import annotations

from ..ir.nodes import Block, If, KernelIR, Loop, Op, Var, pointer_root, walk_ops
from ..ir.prims import PRIMS, Effect
from .function_text import FunctionText
from .llvm_ops import OpEmitter
from .llvm_types import reg_type
from .loops import LoopEmitter


class KernelEmitter(OpEmitter, LoopEmitter):
    """Emits one kernel's entry function; OpEmitter provides the per-primitive rules,
    LoopEmitter the loops (strip-mined to poll for interrupts)."""

    #: module-level lines every module of this target starts with (shared globals)
    module_declares: tuple[str, ...] = ()
    #: metadata lines the module ends with
    module_metadata: tuple[str, ...] = ()

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
        self.grad_roots = grad_roots(kernel.body)

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
        """The entry function's text (each target's emitter: codegen/entry_*.py)."""
        raise NotImplementedError

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


def grad_roots(body: Block) -> list[Var]:
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


def emit_module(em: KernelEmitter, triple: str, datalayout: str) -> str:
    """A complete LLVM module holding the entry function em emits."""
    body = em.emit_function()
    lines = [f'target triple = "{triple}"', f'target datalayout = "{datalayout}"', ""]
    lines.extend(em.module_declares)
    lines.extend(sorted(em.declares))
    lines += ["", body, "", '!0 = distinct !{!0, !1}', '!1 = !{!"llvm.loop.mustprogress"}',
              '!2 = !{!"branch_weights", i32 1000, i32 1}', *em.module_metadata]
    return "\n".join(lines) + "\n"
