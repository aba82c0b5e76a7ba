"""LLVM emission of the ops that touch more than registers: gradient arrays, the adjoint's
per-thread stack, and the error record a failing thread leaves (the half of OpEmitter that
adjoints and debug-mode checks use)."""

from __future__ import annotations

from collections.abc import Callable

from ..abi import (
    BLOCK_STACK,
    STACK_BASE,
    STACK_CAPACITY,
    STATUS_EXTENT,
    STATUS_INDEX,
    STATUS_STACK_FULL,
    STATUS_THREAD,
    STATUS_WHERE,
)
from ..ir.nodes import Op, Var
from ..types import ScalarType
from .function_text import FunctionText
from .llvm_bf16 import Bf16Emitter, is_bf16
from .llvm_types import literal, mem_type, reg_type


class AdjointEmitter(Bf16Emitter):
    """Gradient reads and adds, push/pop, bounds checks and error reports; OpEmitter supplies
    the value and memory helpers declared here."""

    f: FunctionText
    prefix: str
    grads_known: bool
    #: gradient adds must be atomic (threads run at once and may share an element)
    atomic_grads: bool = False
    #: threads sharing one launch block may fail at once (the GPU): the first to claim the
    #: error word with a compare-and-swap writes the error record (see `report`)
    shared_status: bool = False

    def name(self, v: Var) -> str:
        raise NotImplementedError

    def a(self, s: Op, i: int) -> str:
        raise NotImplementedError

    def res(self, s: Op) -> str:
        raise NotImplementedError

    def address(self, s: Op) -> str:
        raise NotImplementedError

    def root_offset(self, p: Var) -> int | None:
        raise NotImplementedError

    def load_value(self, dest: str, t: ScalarType, p: str, align: int) -> None:
        raise NotImplementedError

    def store_value(self, v: str, t: ScalarType, p: str, align: int) -> None:
        raise NotImplementedError

    def guarded(self, s: Op, body: Callable[[str], str | None], t: ScalarType) -> str | None:
        """Run body(address) only when the gradient pointer is not null; returns the phi of
        body's value and 0 when body yields one."""
        f = self.f
        if self.grads_known:
            return body(self.address(s))
        live, do, done = f.fresh("%gnn"), f.fresh("gdo"), f.fresh("gdone")
        f.emit(f"{live} = icmp ne ptr {self.a(s, 0)}, null")
        before = f.label
        f.emit(f"br i1 {live}, label %{do}, label %{done}")
        f.start_block(do)
        value = body(self.address(s))
        end = f.label
        f.emit(f"br label %{done}")
        f.start_block(done)
        if value is None:
            return None
        out = f.fresh("%gval")
        f.emit(f"{out} = phi {reg_type(t)} [{value}, %{end}], [{literal(0.0, t)}, %{before}]")
        return out

    def adj_add(self, s: Op) -> None:
        t = s.args[2].type
        mt, f = mem_type(t), self.f

        def add(p: str) -> None:
            if is_bf16(t):
                self.bf16_rmw(p, "fadd", self.a(s, 2), atomic=self.atomic_grads)
                return None
            if self.atomic_grads:
                f.emit(f"atomicrmw fadd ptr {p}, {mt} {self.a(s, 2)} monotonic, align {t.size}")
                return None
            old, new = f.fresh("%gold"), f.fresh("%gnew")
            f.emit(f"{old} = load {mt}, ptr {p}, align {t.size}")
            f.emit(f"{new} = fadd {mt} {old}, {self.a(s, 2)}")
            f.emit(f"store {mt} {new}, ptr {p}, align {t.size}")
            return None

        self.guarded(s, add, t)

    def adj_read(self, s: Op) -> None:
        assert s.result is not None
        t = s.result.type
        f = self.f

        def read(p: str) -> str:
            v = f.fresh("%gv")
            self.load_value(v, t, p, t.size)
            if s.prim == "adj_take":
                self.store_value(literal(0.0, t), t, p, t.size)
            return v

        self.names[s.result.id] = self.guarded(s, read, t) or ""

    def stack_setup(self) -> None:
        """%sp (this thread's stack pointer), %stack.base and %stack.cap (bytes per thread):
        the adjoint stack's words of the launch block (abi.BLOCK_STACK)."""
        f = self.f
        f.emit("%sp = alloca i64, align 8")
        for name, at in (("base", STACK_BASE), ("cap", STACK_CAPACITY)):
            ty = "ptr" if name == "base" else "i64"
            f.emit(f"%stack.{name}p = getelementptr i8, ptr %block, i64 {BLOCK_STACK + at}")
            f.emit(f"%stack.{name} = load {ty}, ptr %stack.{name}p, align 8")

    def stack_slot(self, offset: str) -> str:
        """The instruction giving the address of the stack slot at byte offset `offset` of this
        thread's stack (a target may interleave threads' stacks: entry_nvptx.py)."""
        return f"getelementptr i8, ptr %stack.base, i64 {offset}"

    def push(self, s: Op) -> None:
        """Push onto the thread's stack; a full stack records the thread and stops the launch
        (the runtime grows the stack and resumes there)."""
        f = self.f
        t = s.args[0].type
        sp, nsp, fits = f.fresh("%sp"), f.fresh("%sp"), f.fresh("%fits")
        full, ok = f.fresh("stackfull"), f.fresh("pushed")
        f.emit(f"{sp} = load i64, ptr %sp, align 8")
        f.emit(f"{nsp} = add i64 {sp}, 8")
        f.emit(f"{fits} = icmp ule i64 {nsp}, %stack.cap")
        f.emit(f"br i1 {fits}, label %{ok}, label %{full}, !prof !2")
        f.start_block(full)
        self.report(STATUS_STACK_FULL, [(STATUS_THREAD, "i64", f"%{self.prefix}tid")])
        f.start_block(ok)
        slot, v = f.fresh("%slot"), self.a(s, 0)
        f.emit(f"{slot} = {self.stack_slot(sp)}")
        self.store_value(v, t, slot, 8)
        f.emit(f"store i64 {nsp}, ptr %sp, align 8")

    def pop(self, s: Op) -> None:
        assert s.result is not None
        f = self.f
        t = s.result.type
        sp, nsp, slot = f.fresh("%sp"), f.fresh("%sp"), f.fresh("%slot")
        f.emit(f"{sp} = load i64, ptr %sp, align 8")
        f.emit(f"{nsp} = sub i64 {sp}, 8")
        f.emit(f"{slot} = {self.stack_slot(nsp)}")
        self.load_value(self.res(s), t, slot, 8)
        f.emit(f"store i64 {nsp}, ptr %sp, align 8")

    def check_bounds(self, s: Op) -> None:
        """Debug mode: an index outside [0, extent) stops the launch, leaving in the error
        record (abi.STATUS_*) where: the error word (1 + the source location's index), the
        argument-block offset of the extent's word (-1 if it is not an argument), the index,
        the extent and the thread (runtime/launch/checks.py turns them into a message)."""
        f = self.f
        ok, fail, cont = f.fresh("%inb"), f.fresh("oob"), f.fresh("inb")
        index, extent = self.a(s, 0), self.a(s, 1)
        f.emit(f"{ok} = icmp ult i64 {index}, {extent}")
        f.emit(f"br i1 {ok}, label %{cont}, label %{fail}, !prof !2")
        f.start_block(fail)
        where = self.root_offset(s.args[1])
        self.report(int(s.attr) + 1, [
            (STATUS_WHERE, "i32", -1 if where is None else where), (STATUS_INDEX, "i64", index),
            (STATUS_EXTENT, "i64", extent), (STATUS_THREAD, "i64", f"%{self.prefix}tid")])
        f.start_block(cont)

    def report(self, code: int, fields: list[tuple[int, str, object]]) -> None:
        """End this thread's part of the launch (a branch to %exit) with `code` in the error
        word and the error record's fields (offset from abi.BLOCK_STATUS, type, value). Where
        threads share the block (`shared_status`), only the thread whose compare-and-swap
        finds the word still 0 writes the fields, so they all come from one thread."""
        f = self.f
        if self.shared_status:
            old, won, claimed = f.fresh("%claim"), f.fresh("%won"), f.fresh("claimed")
            f.emit(f"{old} = cmpxchg ptr %err, i32 0, i32 {code} monotonic monotonic, align 4")
            f.emit(f"{won} = extractvalue {{ i32, i1 }} {old}, 1")
            f.emit(f"br i1 {won}, label %{claimed}, label %exit")
            f.start_block(claimed)
        else:
            f.emit(f"store i32 {code}, ptr %err, align 4")
        for off, ty, value in fields:
            p = f.fresh("%statusp")
            f.emit(f"{p} = getelementptr i8, ptr %err, i64 {off}")
            f.emit(f"store {ty} {value}, ptr {p}, align {4 if ty == 'i32' else 8}")
        f.emit("br label %exit")
