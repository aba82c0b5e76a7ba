"""The NVPTX (CUDA) target's entry function: a grid-stride loop over the launch's threads.

The kernel takes the same launch block as the CPU entry (abi.py: dims, the error record, the
stack's words, start, end, then the arguments), in device memory. Every thread of the grid
shares it: a failing thread claims the error word with a compare-and-swap before it writes the
record's fields, and the stack's words lie outside the record. Thread indices are 64-bit (`ctaid * ntid + tid`,
each widened before the arithmetic); a grid-stride loop covers `[start, end)` whatever the grid.
The adjoint stack is one global buffer laid out slot-major (slot k of every thread in flight is
contiguous), so pushes and pops of a warp coalesce. Gradient adds are atomic (threads run at
once). Math that NVPTX cannot select is a libdevice `__nv_*` call (codegen/nvptx.py links it).
"""

from __future__ import annotations

from ..abi import BLOCK_ARGS, BLOCK_DIMS, BLOCK_END, BLOCK_START, BLOCK_STATUS
from ..ir.nodes import KernelIR, Op, walk_ops
from .llvm import KernelEmitter, emit_module
from .llvm_ops import MathCall, string_global
from .nvptx import TRIPLE, datalayout

#: NVPTX selects these itself (native instructions); the rest go to libdevice
_NATIVE = ("sqrt", "floor", "ceil", "round", "rint", "trunc")
_LIBDEVICE = ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp",
              "exp2", "log", "log2", "log10", "cbrt", "erf", "erfc", "pow", "atan2")
NVPTX_MATH: dict[str, MathCall] = {
    **{n: ("intrinsic", n) for n in _NATIVE},
    **{n: ("libdevice", n) for n in _LIBDEVICE},
}

_SREG = "llvm.nvvm.read.ptx.sreg"


class NvptxKernelEmitter(KernelEmitter):
    """The CUDA entry: `ptx_kernel void entry(ptr block)`, a grid-stride loop."""

    math = NVPTX_MATH
    atomic_grads = True
    shared_status = True  # every thread of the grid reads and may fail into one block
    tile_vectors = False  # tile products in scalar loops (codegen/tile_gemm.py)
    module_declares = tuple(f"declare i32 @{_SREG}.{r}.x()" for r in ("tid", "ctaid", "ntid",
                                                                      "nctaid"))
    module_metadata = ('!3 = !{i32 4, !"nvvm-reflect-ftz", i32 0}', "!llvm.module.flags = !{!3}")

    def __init__(self, kernel: KernelIR, symbol: str) -> None:
        # no private adds: every add into shared memory is an atomic on the GPU
        super().__init__(kernel, symbol, ())

    def emit_function(self) -> str:
        f = self.f
        f.start_block("entry")
        for name, at in (("dims", BLOCK_DIMS), ("err", BLOCK_STATUS), ("args", BLOCK_ARGS),
                         ("startp", BLOCK_START), ("endp", BLOCK_END)):
            f.emit(f"%{name} = getelementptr i8, ptr %block, i64 {at}")
        f.emit("%start = load i64, ptr %startp, align 8")
        f.emit("%end = load i64, ptr %endp, align 8")
        self.hoist_args(self.kernel.body)
        for k in range(4):
            f.emit(f"%dimp{k} = getelementptr i64, ptr %dims, i64 {k}")
            f.emit(f"%dim{k} = load i64, ptr %dimp{k}, align 8")
        self.grid_index()
        self.uses_stack = any(op.prim == "push" for op in walk_ops(self.kernel.body))
        if self.uses_stack:
            self.stack_setup()
        self.thread_loop()
        f.start_block("exit")
        f.emit("ret void")
        head = f"define ptx_kernel void @{self.symbol}(ptr %block) {{"
        return "\n".join([head, *f.lines, "}"])

    def grid_index(self) -> None:
        """%lane: this thread's index in the grid; %nthreads: the grid's size (both i64)."""
        f = self.f
        for r in ("tid", "ctaid", "ntid", "nctaid"):
            f.emit(f"%{r}.x32 = call i32 @{_SREG}.{r}.x()")
            f.emit(f"%{r}.x = zext i32 %{r}.x32 to i64")
        f.emit("%block.base = mul i64 %ctaid.x, %ntid.x")
        f.emit("%lane = add i64 %block.base, %tid.x")
        f.emit("%nthreads = mul i64 %nctaid.x, %ntid.x")

    def stack_slot(self, offset: str) -> str:
        """Slot-major: the buffer (abi.BLOCK_STACK) holds capacity/8 slots for each of the
        grid's threads, slot k of every thread contiguous."""
        f = self.f
        slot, row, at = f.fresh("%slotk"), f.fresh("%slotrow"), f.fresh("%slotat")
        f.emit(f"{slot} = lshr i64 {offset}, 3")
        f.emit(f"{row} = mul i64 {slot}, %nthreads")
        f.emit(f"{at} = add i64 {row}, %lane")
        return f"getelementptr i64, ptr %stack.base, i64 {at}"

    def thread_loop(self) -> None:
        f = self.f
        self.prefix, self.grads_known = "", False
        f.emit("%first = add i64 %start, %lane")
        f.emit("%any = icmp slt i64 %first, %end")
        f.emit("br i1 %any, label %thread, label %exit")
        f.start_block("thread")
        f.emit("%t = phi i64 [%first, %entry], [%t.next, %latch]")
        f.emit("%tid = add i64 %t, 0")
        if self.uses_stack:
            f.emit("store i64 0, ptr %sp, align 8")
        self.block(self.kernel.body)
        f.emit("br label %latch")
        f.start_block("latch")
        f.emit("%t.next = add nuw nsw i64 %t, %nthreads")
        f.emit("%more = icmp slt i64 %t.next, %end")
        f.emit("br i1 %more, label %thread, label %exit")

    def poll(self, go_on: str) -> None:
        """No Ctrl-C polling on the device: the host stops waiting instead."""
        self.f.emit(f"br label %{go_on}")

    def emit_print(self, s: Op) -> None:
        """CUDA's vprintf(format, packed arguments) when the condition holds."""
        f = self.f
        fmt = string_global(self.declares, str(s.attr))
        args = [self.vararg(v) for v in s.args[1:]]
        go, done = f.fresh("print"), f.fresh("printed")
        f.emit(f"br i1 {self.a(s, 0)}, label %{go}, label %{done}")
        f.start_block(go)
        self.declares.add("declare i32 @vprintf(ptr, ptr)")
        buf = "null"
        if args:
            fields = ", ".join(a.split(" ", 1)[0] for a in args)
            buf = f.fresh("%pargs")
            f.emit(f"{buf} = alloca {{ {fields} }}, align 8")
            for k, a in enumerate(args):
                ty, value = a.split(" ", 1)
                slot = f.fresh("%parg")
                f.emit(f"{slot} = getelementptr {{ {fields} }}, ptr {buf}, i32 0, i32 {k}")
                f.emit(f"store {ty} {value}, ptr {slot}, align 8")
        f.emit(f"call i32 @vprintf(ptr {fmt}, ptr {buf})")
        f.emit(f"br label %{done}")
        f.start_block(done)


def nvptx_module(kernel: KernelIR, symbol: str) -> str:
    """The LLVM module of a kernel's CUDA entry (compile it with nvptx.compile_to_ptx)."""
    return emit_module(NvptxKernelEmitter(kernel, symbol), TRIPLE, datalayout())
