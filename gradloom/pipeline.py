"""A kernel's compile pipeline: source → IR → passes → the CPU entry's LLVM IR text with the facts
a launch needs, or PTX. Imported by kernel.py at a kernel's first compile, not at `import
gradloom`: a process whose kernels all come from the cache never loads the frontend's lowering,
autodiff, the passes or codegen's entry emitters (a fifth of the import time)."""

from __future__ import annotations

import copy
import enum
import functools
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from . import config
from .abi import GRAD_SLOT, arg_offsets
from .autodiff.access import analyze
from .autodiff.forward import tangent_kernel
from .autodiff.reverse import adjoint_kernel
from .codegen import cpu, nvptx
from .codegen.entry_cpu import CONTIGUOUS_MAX_OPS, contiguous_copy, cpu_module
from .codegen.entry_nvptx import nvptx_module
from .errors import CompileError, KernelTypeError
from .frontend.lower import lower_kernel
from .ir.builder import BACKWARD, BLOCK_DIM, DIFFERENTIATED
from .ir.nodes import KernelIR, Op, pointer_root, walk_ops
from .ir.printer import format_kernel
from .ir.verify import verify
from .passes.custom import inline_custom
from .passes.dead import drop_dead
from .passes.fresh_gradients import fresh_ir, zeroed_ir
from .passes.index_signs import drop_proven_wraps
from .passes.invariant import drop_invariant_params
from .passes.lanes import LanePlan, lane_plan
from .passes.threads import ThreadPlan, thread_plan
from .types import ArrayType, MatrixType, ScalarType, VectorType

Access = dict[tuple[int, str | None], frozenset[str]]


class Variant(enum.StrEnum):
    """The entries a kernel compiles to, both with the kernel's arguments (kernel.py names them
    by these strings in cache keys and symbols). A kernel's tangent kernel (forward mode) is a
    kernel of its own (`Kernel.tangent_kernel()`, lowered by `lowered`), with both."""

    FORWARD = "forward"
    #: gradients flow from the outputs' gradient slots into the inputs' (autodiff/reverse.py)
    ADJOINT = "adjoint"
    #: the adjoint, each thread first zeroing its own element of some arrays' gradients
    #: (passes/fresh_gradients.py); named "fresh:i,j" by the positions of those arrays, each
    #: marked "s" where it copies a seed in, "n" where its stores skip the cache (x86)
    FRESH = "fresh"
    #: the forward (a tangent kernel's), each thread first zeroing its own element of some
    #: arrays (passes/fresh_gradients.zeroed_ir): forward mode's tangent buffers, written
    #: there, need no zeroing pass; named "zeroed:i,j" by the positions of those arrays
    ZEROED = "zeroed"


#: the mark (a name's last ":" part) of an adjoint variant whose threads run last first even
#: where the adjoint's thread plan says their order cannot matter (`thread_order`)
REVERSED = "rev"


def reversed_variant(name: str) -> str:
    """The variant `name` with its threads run last first (a launch whose arguments defeat the
    thread plan's proof: runtime/cpu/launch.py)."""
    return f"{name}:{REVERSED}"


def variant_of(adjoint: bool | str) -> Variant:
    """A variant named by its string, or by the older flag (True: the adjoint)."""
    if isinstance(adjoint, str):
        return Variant(adjoint.split(":")[0])
    return Variant.ADJOINT if adjoint else Variant.FORWARD


def fresh_variant(params: tuple[int, ...], seeded: frozenset[int] = frozenset(),
                  streamed: frozenset[int] = frozenset()) -> str:
    """The name of the FRESH variant zeroing the gradients of the arrays at `params`, or
    copying a seed into them for those also in `seeded` (marked "s"); those in `streamed`
    (marked "n": large, written whole) are stored with non-temporal stores, which write a line
    without reading it into the cache first (codegen/lane_memory.py)."""
    return f"{Variant.FRESH.value}:" + ",".join(
        f"{i}{'s' if i in seeded else ''}{'n' if i in streamed else ''}" for i in params)


def _fresh_marks(name: str) -> tuple[tuple[int, ...], frozenset[int], frozenset[int]]:
    """A FRESH variant's positions, and those seeded and streamed (fresh_variant)."""
    marks = name.split(":")[1].split(",")
    params = tuple(int(m.rstrip("sn")) for m in marks)
    return (params, frozenset(p for p, m in zip(params, marks, strict=True) if "s" in m),
            frozenset(p for p, m in zip(params, marks, strict=True) if "n" in m))


def zeroed_variant(kernel: Any, params: frozenset[int]) -> str | None:
    """The name of the ZEROED variant of forward kernel `kernel` zeroing the arrays at `params`
    (1-D float arrays it touches only at each thread's own element), None where it has none."""
    specs = _zeroed_specs(kernel, params)
    if not specs or len(specs) != len(params):
        return None
    try:
        ir, _ = kernel_ir(kernel, Variant.FORWARD)
    except Exception:
        return None
    if zeroed_ir(ir, specs) is None:
        return None
    return f"{Variant.ZEROED.value}:" + ",".join(map(str, sorted(params)))


def _zeroed_specs(kernel: Any, params: Any) -> dict[int, tuple[Any, int, int]]:
    """zeroed_ir's description of the 1-D float arrays among `params`: a tangent's accesses use
    its primal's stride (autodiff/forward.py)."""
    primal_of = {d: k for k, d in getattr(kernel, "dual_pairs", ())}
    offsets, _ = arg_offsets([t for _, t in kernel.params])
    return {off: (scalar, size, offsets[primal_of.get(i, i)])
            for i, (off, (scalar, size, _)) in _fresh_specs(kernel, params,
                                                            frozenset()).items()}


def fresh_candidates(kernel: Any, seeded: bool = False) -> frozenset[int]:
    """Positions of the 1-D float arrays whose gradient the kernel's adjoint touches only at
    each thread's own element: those a FRESH variant may zero (`seeded`: may copy a seed into,
    the adjoint not reading the array's contents); none where the adjoint cannot be built
    (backward then says why)."""
    try:
        ir, _ = kernel_ir(kernel, Variant.ADJOINT)
    except Exception:
        return frozenset()
    specs = _fresh_specs(kernel, range(len(kernel.params)), frozenset())
    return frozenset(i for i, (off, (scalar, size, _)) in specs.items()
                     if fresh_ir(ir, {off: (scalar, size, seeded)}) is not None)


def read_gradients(kernel: Any) -> frozenset[int]:
    """Positions of the arrays whose gradient the kernel's adjoint only reads (`adj_read`,
    through views too) or never touches: a Tape may hand it a seed where the seed is."""
    try:
        ir, _ = kernel_ir(kernel, Variant.ADJOINT)
    except Exception:
        return frozenset()
    defs = {op.result.id: op for op in walk_ops(ir.body) if op.result is not None}
    written: set[int] = set()  # argument offsets of pointers used other than by reads
    for op in walk_ops(ir.body):
        for k, a in enumerate(op.args):
            root = pointer_root(defs, a)
            if root is not None and root.prim == "arg" and \
                    not (k == 0 and op.prim in ("adj_read", "ptr_add")):
                written.add(int(root.attr))
    offsets, _ = arg_offsets([t for _, t in kernel.params])
    return frozenset(i for i, (_, t) in enumerate(kernel.params)
                     if type(t) is ArrayType and offsets[i] + GRAD_SLOT not in written)


def _zeroing(kernel: Any, ir: KernelIR, name: str) -> KernelIR:
    """The FRESH variant `name` of adjoint ir."""
    params, seeded, streamed = _fresh_marks(name)
    specs = _fresh_specs(kernel, params, seeded)
    written = frozenset(specs[i][0] for i in streamed if i in specs)
    zeroing = fresh_ir(ir, dict(specs.values()), written) if len(specs) == len(params) \
        else None
    if zeroing is None:
        raise CompileError(f"kernel '{kernel.key}': no {name} variant (an array's gradient is "
                           "not touched at the thread's own element only)")
    return zeroing


def _zeroed(kernel: Any, ir: KernelIR, name: str) -> KernelIR:
    """The ZEROED variant `name` of forward ir."""
    params = frozenset(int(m) for m in name.split(":")[1].split(","))
    specs = _zeroed_specs(kernel, params)
    zeroed = zeroed_ir(ir, specs) if len(specs) == len(params) else None
    if zeroed is None:
        raise CompileError(f"kernel '{kernel.key}': no {name} variant (an array is not touched "
                           "at the thread's own element only)")
    return zeroed


def _fresh_specs(kernel: Any, params: Any, seeded: frozenset[int]
                 ) -> dict[int, tuple[int, tuple[Any, int, bool]]]:
    """position -> (data pointer's argument offset, (component type, element bytes, seeded))
    of each 1-D float array among `params`."""
    offsets, _ = arg_offsets([t for _, t in kernel.params])
    out = {}
    for i in params:
        t = kernel.params[i][1]
        if type(t) is not ArrayType or t.ndim != 1:
            continue
        scalar = t.dtype if isinstance(t.dtype, ScalarType) else getattr(t.dtype, "dtype", None)
        if isinstance(scalar, ScalarType) and scalar.is_float:
            out[i] = (offsets[i], (scalar, int(t.dtype.size), i in seeded))
    return out


def lowered(kernel: Any, differentiated: bool = False) -> KernelIR:
    """The kernel's IR as the frontend lowers it (its `locs` name the user's source lines); for
    a tangent kernel (`dual_of`: the kernel it is the tangent of), that kernel's tangent IR.
    `differentiated`: the IR is for an adjoint (ir/builder.DIFFERENTIATED)."""
    printing = getattr(kernel, "printing_of", None)
    if printing is not None:  # its parameters come first: the same IR
        return lowered(printing, differentiated)
    primal = getattr(kernel, "dual_of", None)
    block = BLOCK_DIM.set(getattr(primal or kernel, "cpu_block_dim", 1))
    backward = BACKWARD.set(getattr(primal or kernel, "enable_backward", None) is not False)
    try:
        if primal is None:
            token = DIFFERENTIATED.set(differentiated)
            try:
                return lower_kernel(kernel.info, list(kernel.params))
            finally:
                DIFFERENTIATED.reset(token)
        token = DIFFERENTIATED.set(True)
        try:
            ir = drop_proven_wraps(drop_invariant_params(lower_kernel(primal.info,
                                                                      list(primal.params))))
        finally:
            DIFFERENTIATED.reset(token)
    finally:
        BLOCK_DIM.reset(block)
        BACKWARD.reset(backward)
    verify(ir)
    return tangent_kernel(ir, tangent_offsets(kernel))


def tangent_offsets(dual: Any) -> Callable[[int], int | None]:
    """For a tangent kernel: the argument offset of the tangent of the array whose data pointer
    is at offset `off` (the same place in the parameter's tangent argument; None: none)."""
    offsets, _ = arg_offsets([t for _, t in dual.params])
    n = len(dual.dual_of.params)
    tangent_start = {offsets[k]: offsets[d] for k, d in dual.dual_pairs}

    def tangent_of(off: int) -> int | None:
        start = max(o for o in offsets[:n] if o <= off)
        at = tangent_start.get(start)
        return None if at is None else at + off - start

    return tangent_of


def kernel_ir(kernel: Any, adjoint: bool | str) -> tuple[KernelIR, Access | None]:
    """The IR of the forward kernel or its adjoint (a `Variant`'s name, or True for the
    adjoint), verified, and the access facts."""
    variant_name = adjoint
    if getattr(kernel, "is_generic", False):
        raise KernelTypeError(f"kernel '{kernel.key}' is generic: compile one of its overloads "
                              f"(wp.overload) instead", kernel.info.loc(kernel.info.tree))
    variant = variant_of(adjoint)
    fresh = variant is Variant.FRESH and isinstance(adjoint, str)
    adjoint = variant not in (Variant.FORWARD, Variant.ZEROED)
    ir = drop_proven_wraps(drop_invariant_params(lowered(kernel, adjoint)))
    verify(ir)
    kernel._locs = ir.locs
    access = access_facts(kernel, ir)
    # access analysis above also sees each @wp.func_grad region's adjoint; the adjoint kernel
    # replaces regions itself, the forward kernel runs their bodies inline
    ir = drop_dead(adjoint_kernel(ir, _given_adjoints(kernel)) if adjoint else inline_custom(ir))
    if fresh:
        ir = _zeroing(kernel, ir, str(variant_name))
    elif variant is Variant.ZEROED:
        ir = _zeroed(kernel, ir, str(variant_name))
    verify(ir)
    return ir, access


def printing_kernel(kernel: Any) -> Any:
    """What an explicit adjoint launch (`wp.launch(..., adjoint=True)`) of a kernel that prints
    runs, as Warp's does: its adjoint replays the prints, and each wp.print prints its values'
    adjoints ("adj: ..."), for a parameter's value with the adjoint the launch gives for it.
    A kernel of its own: the kernel's parameters, then one per scalar, vector or matrix
    parameter for its given adjoint. None where the kernel prints nothing: the plain adjoint
    (a Tape's backward runs that one, which prints nothing: docs/differences.md)."""
    known = kernel.__dict__.get("_gl_printing", False)
    if known is not False:
        return known
    ir = lowered(kernel)
    loud = None
    if any(op.prim == "print" for op in walk_ops(ir.body)):
        loud = copy.copy(kernel)
        loud.__dict__ = {k: v for k, v in kernel.__dict__.items() if not k.startswith("_gl_")}
        given = [k for k, (_, t) in enumerate(kernel.params) if _by_value(t)]
        loud._params = (*kernel.params, *((f"adj_{kernel.params[k][0]}", kernel.params[k][1])
                                          for k in given))
        loud.printing_of, loud.printing_pairs = kernel, tuple(
            (k, len(kernel.params) + i) for i, k in enumerate(given))
        loud.given_adjoints = functools.partial(_given_values, tuple(
            (k, _zero(kernel.params[k][1])) for k in given))
        loud.key, loud.overloads = f"{kernel.key}_printing", {}
        loud._compiled = loud._adjoint = loud._locs = None
    kernel._gl_printing = loud
    return loud


def _given_values(zeros: tuple[tuple[int, Any], ...], adj: list[Any]) -> list[Any]:
    """A printing kernel's arguments after the kernel's: the adjoint the launch gives for each
    by-value parameter (`adj`: one per parameter), zero where it gives None (as Warp's)."""
    return [zero if adj[k] is None else adj[k] for k, zero in zeros]


def _zero(t: Any) -> Any:
    """A zero value of scalar, vector or matrix type t (a transform's too: all components)."""
    n = getattr(t, "_length_", None)
    return t(0) if n is None else t(*([0] * n))


def _by_value(t: Any) -> bool:
    """A parameter type whose adjoint Warp's adjoint launch takes by value (and print prints)."""
    return isinstance(t, (ScalarType, VectorType, MatrixType))


def _given_adjoints(kernel: Any) -> dict[int, int] | None:
    """For a printing kernel: each of its parameters' argument bytes' offset -> that of the
    same byte of the adjoint given for it (adjoint_kernel's `prints`); None for others."""
    pairs = getattr(kernel, "printing_pairs", None)
    if pairs is None:
        return None
    offsets, _ = arg_offsets([t for _, t in kernel.params])
    return {offsets[k] + b: offsets[a] + b for k, a in pairs
            for b in range(int(kernel.params[k][1].size))}


def cpu_codegen(kernel: Any, symbol: str, adjoint: bool | str) -> tuple[str, dict[str, Any]]:
    """LLVM IR text of the CPU entry, and the facts a launch needs about it."""
    ir, access = kernel_ir(kernel, adjoint)
    target = cpu.host_target()
    plan = thread_plan(ir, permutations=True)  # each launch checks plan.conditions
    ir, reverse = thread_order(ir, plan, adjoint)
    arrays = kernel.array_layouts()
    ordered = kernel.module.deterministic
    verdict = lane_plan(ir, plan, frozenset(arrays), ordered=ordered)
    lanes = verdict if cpu.lane_width() else None
    text = cpu_module(ir, symbol, target.triple, target.datalayout, plan.scatter, lanes,
                      cpu.lane_width(), arrays, _streamed(kernel, ir, adjoint, target.triple))
    in_lanes = verdict.reason is None and contiguous_copy(ir)
    if config.print_ir:
        print(format_kernel(ir), file=sys.stderr)
        print(text, file=sys.stderr)
    return text, {"launch_ndim": ir.launch_ndim, "access": access,
                  "uses_stack": any(op.prim == "push" for op in walk_ops(ir.body)),
                  "reverse_threads": ir.reverse_threads, "reversed": reverse,
                  "launch_check": ir.launch_check, "ordered": ordered,
                  "threads": (plan.serial, plan.scatter, plan.float_atomics,
                              plan.loops, plan.work, in_lanes, plan.conditions,
                              plan.limits),
                  "lanes": lane_reason(ir, lanes)}


def thread_order(ir: KernelIR, plan: ThreadPlan, variant: bool | str
                 ) -> tuple[KernelIR, str | None]:
    """An adjoint whose threads' order cannot matter, run in launch order, and the name of the
    variant that keeps the reverse order (None where the order is unchanged).

    An adjoint runs threads last first where a gradient may pass between threads through
    memory (autodiff/reverse.py); one whose thread plan lets it be split across workers (not
    serial, relying on no launch condition or limit) has threads that touch only their own
    elements or only add, whose order cannot matter. Launch order reads memory front to back,
    which the hardware prefetchers follow better (the neo-Hookean benchmark's adjoint: 2.9-3.1
    -> 2.5-2.6 ms, benchmarks/README.md). A variant named with `reversed_variant` keeps the
    reverse order: a launch whose zero-stride view defeats the plan's proof runs that one
    (runtime/cpu/launch.py)."""
    name = variant if isinstance(variant, str) else variant_of(variant).value
    if name.rsplit(":", 1)[-1] == REVERSED or not ir.reverse_threads or \
            plan.serial is not None or plan.conditions or plan.limits:
        return ir, None
    return replace(ir, reverse_threads=False), reversed_variant(name)


def _streamed(kernel: Any, ir: KernelIR, variant: bool | str, triple: str) -> frozenset[int]:
    """Argument offsets of the gradient pointers a FRESH variant stores non-temporally: those
    marked so whose every use is a top-level store (fresh_ir turned their adds into one store
    per component: a line read back after it was streamed would come from memory); x86 only,
    whose `sfence` orders such stores (codegen/entry_cpu.py)."""
    if not isinstance(variant, str) or variant_of(variant) is not Variant.FRESH or \
            not triple.startswith("x86_64"):
        return frozenset()
    offsets, _ = arg_offsets([t for _, t in kernel.params])
    top = {id(s) for s in ir.body.stmts}
    out = set()
    for off in (offsets[i] + GRAD_SLOT for i in _fresh_marks(variant)[2]):
        ptrs = {op.result.id for op in ir.body.stmts if isinstance(op, Op) and
                op.prim == "arg" and op.attr == off and op.result is not None}
        uses = [op for op in walk_ops(ir.body) if any(a.id in ptrs for a in op.args)]
        if uses and all(op.prim == "store" and id(op) in top for op in uses):
            out.add(off)
    return frozenset(out)


def access_facts(kernel: Any, ir: KernelIR) -> Access | None:
    """How the kernel touches each array argument (what a Tape must keep for backward)."""
    try:
        arrays = analyze(ir).arrays
    except CompileError:
        return None
    where = kernel.array_offsets()
    return {where[off]: acc.flags for off, acc in arrays.items() if off in where}


def lane_reason(ir: KernelIR, lanes: LanePlan | None) -> str | None:
    """Why the entry's thread loop runs one thread at a time (None: it runs in SIMD lanes, or
    SIMD is off)."""
    if lanes is None:
        return None
    if lanes.reason is None and not contiguous_copy(ir):
        return f"more than {CONTIGUOUS_MAX_OPS} operations (one thread loop only)"
    return lanes.reason


def ptx(kernel: Any, arch: str, adjoint: bool | str) -> str:
    """The PTX of a kernel or its adjoint for one GPU architecture (wp.codegen_ptx)."""
    ir, _ = kernel_ir(kernel, adjoint)
    symbol = "gl_" + "".join(c if c.isalnum() else "_" for c in ir.name)
    return nvptx.compile_to_ptx(nvptx_module(ir, symbol), (symbol,), arch, config.opt_level)
