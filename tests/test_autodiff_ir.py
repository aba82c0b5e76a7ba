"""Reverse mode at the IR level: rule totality, every primitive's rule against FD, golden adjoints.

* Totality: every primitive either has a reverse-mode rule, is a memory primitive (autodiff
  handles those itself), or can never produce a float result according to its own type rule.
  The few that produce floats without a rule are listed with the reason.
* Every primitive with a rule is exercised by a real kernel (compiled forward and adjoint, both
  through `wp` builtins) and checked against float64 central differences. A table maps each such
  primitive to its kernels, and the table must cover all of them. `exp2` has a rule but no
  builtin reaches it, so its kernel is the `exp` kernel with the primitive swapped in the IR.
* Golden printouts of the adjoint IR of three small kernels, plus structural facts (what a loop
  pushes, that the verifier accepts every adjoint).
"""

# Kernel bodies write explicit float64 casts the way Warp code must.
# ruff: noqa: UP018

from __future__ import annotations

import importlib
import itertools
import textwrap
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import Any

import numpy as np
import pytest
from gradfd import arr, check_kernel
from wpcompat import BACKEND

if BACKEND != "gradloom":
    pytest.skip("gradloom IR tests", allow_module_level=True)

import gradloom as wp
from gradloom.autodiff.reverse import adjoint_kernel
from gradloom.frontend.lower import lower_kernel
from gradloom.ir.builder import BLOCK_DIM
from gradloom.ir.nodes import Block, If, KernelIR, Loop, Op, walk_ops
from gradloom.ir.prims import PRIMS, result_type
from gradloom.ir.printer import format_kernel
from gradloom.ir.verify import verify
from gradloom.passes.index_signs import drop_proven_wraps
from gradloom.passes.invariant import drop_invariant_params
from gradloom.runtime.cpu.launch import prepared_adjoint
from gradloom.types import SCALAR_TYPES, ptr

pipeline = importlib.import_module("gradloom.pipeline")  # lowers kernels at their first compile

f64 = wp.float64
F64 = wp.array(dtype=wp.float64)
F32 = wp.array(dtype=wp.float32)


def primal_ir(k: Any) -> KernelIR:
    """The IR a kernel's adjoint is built from (the pipeline of gradloom/pipeline.py; a CPU
    block variant lowered for its block's width, as the pipeline does)."""
    block = BLOCK_DIM.set(getattr(k, "cpu_block_dim", 1))
    try:
        return drop_proven_wraps(drop_invariant_params(lower_kernel(k.info, list(k.params))))
    finally:
        BLOCK_DIM.reset(block)


def adjoint_ir(k: Any) -> KernelIR:
    return adjoint_kernel(primal_ir(k))


def all_ops(b: Block):
    return list(walk_ops(b))


# =============================================================================================
# totality: a float result always has a rule

#: primitives that produce float values but take no rule, and why
FLOAT_WITHOUT_RULE = {
    "const": "a constant: no gradient",
    "arg": "a kernel parameter leaf: gradients of scalar arguments are not computed",
    "pop": "adjoint-only: restores a primal value",
    "adj_read": "adjoint-only: reads a gradient array",
    "adj_take": "adjoint-only: reads and zeroes a gradient array",
    "bitcast": "reinterprets bits (wp.cast): no derivative",
    "ladd": "adjoint-only: adds into a tile buffer's gradient half",
    "ltake": "adjoint-only: reads and zeroes a tile buffer's gradient half",
}

ALL_TYPES = (*SCALAR_TYPES, ptr)


def _can_give_float(name: str) -> bool:
    """Whether the type rule of `name` accepts some operand types and gives a float result."""
    prim = PRIMS[name]
    for operands in itertools.product(ALL_TYPES, repeat=prim.arity):
        for given in (None, *ALL_TYPES):
            try:
                rt = result_type(name, operands, given)
            except TypeError:
                continue
            if rt is not None and rt.is_float:
                return True
    return False


def test_every_float_primitive_has_a_rule():
    missing = [name for name, p in PRIMS.items()
               if p.vjp is None and not p.memory and name not in FLOAT_WITHOUT_RULE
               and _can_give_float(name)]
    assert missing == [], f"primitives that give floats but have no vjp rule: {missing}"


def test_the_exception_list_is_exact():
    for name in FLOAT_WITHOUT_RULE:
        assert name in PRIMS, name
        p = PRIMS[name]
        assert p.vjp is None and not p.memory, name
        assert _can_give_float(name), f"{name} never gives a float: drop it from the list"


def test_memory_primitives_are_the_array_accesses():
    memory = {n for n, p in PRIMS.items() if p.memory}
    assert memory == {"load", "store", "atomic_add", "atomic_min", "atomic_max", "atomic_and",
                      "atomic_or", "atomic_xor", "atomic_exch", "atomic_cas"}
    assert all(PRIMS[n].vjp is None for n in memory)


def test_float_result_check_is_not_vacuous():
    # these give floats, and these never do
    assert _can_give_float("add") and _can_give_float("select") and _can_give_float("cast")
    for name in ("eq", "lt", "and", "not", "shl", "isnan", "tid", "ptr_add", "check_bounds",
                 "push", "adj_add", "print"):
        assert not _can_give_float(name), name


# =============================================================================================
# per-primitive rules, each through a real kernel, against central differences


@wp.kernel
def k_neg(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = -a[i] * b[i]


@wp.kernel
def k_abs(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.abs(a[i]) * b[i]


@wp.kernel
def k_sqrt(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.sqrt(a[i]) * b[i]


@wp.kernel
def k_cbrt(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.cbrt(a[i]) * b[i]


@wp.kernel
def k_sin(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.sin(a[i]) * b[i]


@wp.kernel
def k_cos(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.cos(a[i]) * b[i]


@wp.kernel
def k_tan(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.tan(a[i]) * b[i]


@wp.kernel
def k_asin(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.asin(a[i]) * b[i]


@wp.kernel
def k_acos(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.acos(a[i]) * b[i]


@wp.kernel
def k_atan(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.atan(a[i]) * b[i]


@wp.kernel
def k_sinh(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.sinh(a[i]) * b[i]


@wp.kernel
def k_cosh(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.cosh(a[i]) * b[i]


@wp.kernel
def k_tanh(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.tanh(a[i]) * b[i]


@wp.kernel
def k_exp(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.exp(a[i]) * b[i]


@wp.kernel
def k_exp_for_exp2(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.exp(a[i]) * b[i]  # `exp` becomes `exp2` in the IR (no builtin emits exp2)


@wp.kernel
def k_log(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.log(a[i]) * b[i]


@wp.kernel
def k_log2(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.log2(a[i]) * b[i]


@wp.kernel
def k_log10(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.log10(a[i]) * b[i]


@wp.kernel
def k_erf(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.erf(a[i]) * b[i]


@wp.kernel
def k_erfc(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.erfc(a[i]) * b[i]


@wp.kernel
def k_copysign(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.copysign(a[i], b[i]) * (b[i] + a[i])


@wp.kernel
def k_floor(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.floor(a[i]) * b[i]


@wp.kernel
def k_ceil(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.ceil(a[i]) * b[i]


@wp.kernel
def k_round(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.round(a[i]) * b[i]


@wp.kernel
def k_rint(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.rint(a[i]) * b[i]


@wp.kernel
def k_trunc(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.trunc(a[i]) * b[i]


@wp.kernel
def k_add(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = a[i] + b[i]


@wp.kernel
def k_sub(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = a[i] - b[i]


@wp.kernel
def k_mul(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = a[i] * b[i]


@wp.kernel
def k_div(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = a[i] / b[i]


@wp.kernel
def k_mod(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = a[i] % b[i]


@wp.kernel
def k_min(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.min(a[i], b[i])


@wp.kernel
def k_max(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.max(a[i], b[i])


@wp.kernel
def k_pow(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.pow(a[i], b[i])


@wp.kernel
def k_pow_operator(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = a[i] ** b[i]


@wp.kernel
def k_atan2(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.atan2(a[i], b[i])


@wp.kernel
def k_where(c: F64, a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.where(c[i] > f64(0.0), a[i], b[i])


@wp.kernel
def k_select(c: F64, a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.select(c[i] > f64(0.0), a[i], b[i])  # Warp's old order: value if false first


@wp.kernel
def k_cast_f32_to_f64(a: F32, b: F64, y: F64):
    i = wp.tid()
    v = wp.float64(a[i])
    y[i] = v * v * b[i]


@wp.kernel
def k_cast_f64_to_f32(a: F64, b: F32, y: F32):
    i = wp.tid()
    v = wp.float32(a[i])
    y[i] = v * v * b[i]


@wp.kernel
def k_cast_through_int(a: F64, b: F64, y: F64):
    i = wp.tid()
    y[i] = wp.float64(wp.int32(a[i] * f64(3.0))) * b[i] + a[i] * b[i]


@wp.kernel
def k_tile_buffer(a: F64, b: F64, y: F64):
    # one-element tiles per thread: tile_load writes the thread's buffer (lstore), tile_map and
    # tile_store read it back (lload)
    i = wp.tid()
    t = wp.tile_load(a, shape=1, offset=i)
    u = wp.tile_map(wp.mul, t, wp.tile_load(b, shape=1, offset=i))
    wp.tile_store(y, wp.tile_map(wp.add, u, t), offset=i)


@wp.kernel(module="unique")
def _k_block_exchange(a: F64, b: F64, y: F64):
    # in a CPU block of 3 threads each thread's value joins the block's tile (bxchg); every
    # thread reads the block's sum: y[i] = a[i] * sum over its block of a[j] * b[j]
    i = wp.tid()
    s = wp.tile_sum(wp.tile(a[i] * b[i]))
    y[i] = s[0] * a[i]


#: the kernel as a CPU launch with blocks of 3 threads runs it (Kernel.block_variant)
k_block_exchange = _k_block_exchange.block_variant(3)


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def uniform(lo: float, hi: float, seed: int, n: int = 6) -> np.ndarray:
    return _rng(seed).uniform(lo, hi, n)


def away_from_zero(lo: float, hi: float, seed: int, n: int = 6) -> np.ndarray:
    """Magnitudes in [lo, hi), random signs."""
    r = _rng(seed)
    return r.uniform(lo, hi, n) * r.choice([-1.0, 1.0], n)


def off_steps(seed: int, n: int = 6) -> np.ndarray:
    """Values at least 0.1 from every integer and half-integer (floor/round/... are flat there)."""
    r = _rng(seed)
    frac = r.choice([0.2, 0.3, 0.7, 0.8], n) + r.uniform(-0.08, 0.08, n)
    return r.integers(-3, 3, n) + frac


def mod_operands(seed: int, n: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """a, b with a / b at least 0.15 from an integer (fmod jumps there), both signs."""
    b = away_from_zero(0.6, 1.5, seed, n)
    q = off_steps(seed + 1, n) * 1.3
    q = np.where(np.abs(q - np.round(q)) < 0.15, q + 0.3, q)
    return q * b, b


def distinct_pair(seed: int, n: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """a, b at least 0.1 apart (min/max switch where they tie)."""
    a = uniform(-2, 2, seed, n)
    return a, a + away_from_zero(0.1, 1.0, seed + 1, n)


def annulus(seed: int, n: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """(y, x) away from the origin and from atan2's cut along the negative x axis."""
    r = uniform(0.5, 2.0, seed, n)
    theta = uniform(-2.8, 2.8, seed + 1, n)
    return r * np.sin(theta), r * np.cos(theta)


B6 = np.array([0.8, -1.3, 0.45, 1.7, -0.6, 1.1])
C6 = np.array([0.5, -0.4, 1.2, -2.0, 0.3, -0.9])  # the where/select condition (not wrt)


@dataclass
class RuleCase:
    id: str
    prim: str
    kernel: Any
    args: list[Any]
    wrt: list[int]
    opts: dict[str, Any] = field(default_factory=dict)

    @property
    def output(self) -> int:
        return len(self.args) - 1


class _SwapPrimKernel(wp.Kernel):
    """A kernel whose lowered IR has one primitive replaced by another of the same type rule
    (for primitives that have a rule but no builtin). Cached under its own key."""

    def __init__(self, base: Any, old: str, new: str) -> None:
        super().__init__(base.func)
        self.key = f"{base.key}[{old}->{new}]"
        self.swap = (old, new)

    def cache_key(self, variant: str = "forward") -> str:
        return super().cache_key(f"{variant}|swap {self.swap[0]}->{self.swap[1]}")

    def _codegen(self, symbol: str, adjoint: bool) -> tuple[str, dict[str, Any]]:
        original = pipeline.lower_kernel

        def lower(info: Any, params: Any) -> KernelIR:
            ir = original(info, params)
            return dc_replace(ir, body=_swap_block(ir.body, *self.swap))

        pipeline.lower_kernel = lower
        try:
            return super()._codegen(symbol, adjoint)
        finally:
            pipeline.lower_kernel = original

    def lowered(self) -> KernelIR:
        ir = primal_ir(self)
        return dc_replace(ir, body=_swap_block(ir.body, *self.swap))


def _swap_block(b: Block, old: str, new: str) -> Block:
    out: list[Any] = []
    for s in b.stmts:
        if isinstance(s, Op):
            out.append(dc_replace(s, prim=new) if s.prim == old else s)
        elif isinstance(s, If):
            out.append(dc_replace(s, then=_swap_block(s.then, old, new),
                                  orelse=_swap_block(s.orelse, old, new)))
        else:
            assert isinstance(s, Loop)
            out.append(dc_replace(s, cond=_swap_block(s.cond, old, new),
                                  body=_swap_block(s.body, old, new)))
    return Block(tuple(out), b.yields)


k_exp2 = _SwapPrimKernel(k_exp_for_exp2, "exp", "exp2")

_UNARY: dict[str, tuple[Any, np.ndarray]] = {
    "neg": (k_neg, uniform(-2, 2, 1)),
    "abs": (k_abs, away_from_zero(0.2, 2, 2)),
    "sqrt": (k_sqrt, uniform(0.2, 3, 3)),
    "cbrt": (k_cbrt, away_from_zero(0.3, 3, 4)),
    "sin": (k_sin, uniform(-3, 3, 5)),
    "cos": (k_cos, uniform(-3, 3, 6)),
    "tan": (k_tan, uniform(-1.2, 1.2, 7)),
    "asin": (k_asin, uniform(-0.9, 0.9, 8)),
    "acos": (k_acos, uniform(-0.9, 0.9, 9)),
    "atan": (k_atan, uniform(-3, 3, 10)),
    "sinh": (k_sinh, uniform(-2, 2, 11)),
    "cosh": (k_cosh, uniform(-2, 2, 12)),
    "tanh": (k_tanh, uniform(-2, 2, 13)),
    "exp": (k_exp, uniform(-2, 2, 14)),
    "exp2": (k_exp2, uniform(-2, 2, 15)),
    "log": (k_log, uniform(0.2, 4, 16)),
    "log2": (k_log2, uniform(0.2, 4, 17)),
    "log10": (k_log10, uniform(0.2, 4, 18)),
    "erf": (k_erf, uniform(-2, 2, 19)),
    "erfc": (k_erfc, uniform(-2, 2, 25)),
    "floor": (k_floor, off_steps(20)),
    "ceil": (k_ceil, off_steps(21)),
    "round": (k_round, off_steps(22)),
    "rint": (k_rint, off_steps(23)),
    "trunc": (k_trunc, off_steps(24)),
}

_BINARY: dict[str, tuple[Any, tuple[np.ndarray, np.ndarray]]] = {
    "add": (k_add, (uniform(-2, 2, 30), uniform(-2, 2, 31))),
    "sub": (k_sub, (uniform(-2, 2, 32), uniform(-2, 2, 33))),
    "mul": (k_mul, (uniform(-2, 2, 34), uniform(-2, 2, 35))),
    "div": (k_div, (uniform(-2, 2, 36), away_from_zero(0.3, 2, 37))),
    "mod": (k_mod, mod_operands(38)),
    "min": (k_min, distinct_pair(40)),
    "max": (k_max, distinct_pair(42)),
    "pow": (k_pow, (uniform(0.3, 2.5, 44), uniform(-2, 2, 45))),
    "atan2": (k_atan2, annulus(46)),
    "copysign": (k_copysign, (away_from_zero(0.3, 2, 47), away_from_zero(0.3, 2, 48))),
}

# float32 outputs: the harness compares its float32 seed array with the float64 weights, so
# the weights must be exact in float32
W6_F32 = np.array([0.75, -1.25, 0.5, 1.5, -0.875, 1.0])
_F32_FD = {"eps": 1e-3, "rtol": 2e-3, "atol": 1e-5}  # float32 values: a coarser step

RULE_CASES = [
    *(RuleCase(name, name, k, [arr(a), arr(B6), arr(np.zeros(6))], [0, 1])
      for name, (k, a) in _UNARY.items()),
    *(RuleCase(name, name, k, [arr(a), arr(b), arr(np.zeros(6))], [0, 1])
      for name, (k, (a, b)) in _BINARY.items()),
    RuleCase("pow_operator", "pow", k_pow_operator,
             [arr(uniform(0.3, 2.5, 50)), arr(uniform(-2, 2, 51)), arr(np.zeros(6))], [0, 1]),
    RuleCase("pow_negative_base", "pow", k_pow,
             [arr(away_from_zero(0.3, 2, 52) - 2.5), arr([2.0, 3.0, -1.0, 2.0, 4.0, -2.0]),
              arr(np.zeros(6))], [0]),
    RuleCase("select_where", "select", k_where,
             [arr(C6, requires_grad=False), arr(uniform(-2, 2, 53)), arr(uniform(-2, 2, 54)),
              arr(np.zeros(6))], [1, 2]),
    RuleCase("select_old_order", "select", k_select,
             [arr(C6, requires_grad=False), arr(uniform(-2, 2, 55)), arr(uniform(-2, 2, 56)),
              arr(np.zeros(6))], [1, 2]),
    RuleCase("cast_f32_to_f64", "cast", k_cast_f32_to_f64,
             [arr(uniform(-2, 2, 57), wp.float32), arr(B6), arr(np.zeros(6))], [0, 1], _F32_FD),
    RuleCase("cast_f64_to_f32", "cast", k_cast_f64_to_f32,
             [arr(uniform(-2, 2, 58)), arr(B6, wp.float32), arr(np.zeros(6), wp.float32)],
             [0, 1], {**_F32_FD, "weights": [W6_F32]}),
    RuleCase("cast_through_int", "cast", k_cast_through_int,
             [arr(off_steps(59) / 3.0), arr(B6), arr(np.zeros(6))], [0, 1]),
    *(RuleCase(f"tile_buffer_{p}", p, k_tile_buffer,
               [arr(uniform(-2, 2, 60)), arr(B6), arr(np.zeros(6))], [0, 1])
      for p in ("lload", "lstore")),
    RuleCase("block_exchange", "bxchg", k_block_exchange,
             [arr(uniform(-2, 2, 61)), arr(B6), arr(np.zeros(6))], [0, 1]),
]


def _ir_of(case: RuleCase) -> KernelIR:
    k = case.kernel
    return k.lowered() if isinstance(k, _SwapPrimKernel) else primal_ir(k)


def test_rule_table_covers_every_primitive_with_a_rule():
    with_rule = {name for name, p in PRIMS.items() if p.vjp is not None}
    covered = {c.prim for c in RULE_CASES}
    assert covered == with_rule, (f"no kernel for {sorted(with_rule - covered)}; "
                                  f"not a primitive with a rule: {sorted(covered - with_rule)}")
    assert len({c.id for c in RULE_CASES}) == len(RULE_CASES)


@pytest.mark.parametrize("case", RULE_CASES, ids=lambda c: c.id)
def test_kernel_exercises_its_primitive(case):
    prims = {op.prim for op in all_ops(_ir_of(case).body)}
    assert case.prim in prims, f"{case.id}: {case.prim} not in {sorted(prims)}"
    if isinstance(case.kernel, _SwapPrimKernel):
        assert case.kernel.swap[0] not in prims


@pytest.mark.parametrize("case", RULE_CASES, ids=lambda c: c.id)
def test_rule_matches_central_differences(case):
    check_kernel(case.kernel, 6, case.args, wrt=case.wrt, outputs=[case.output],
                 name=case.id, **case.opts)


def test_rule_analytic_spot_values():
    """A few rules against closed forms, independent of the FD harness."""
    x = np.array([0.3, 1.7, 2.5])
    one = np.ones(3)
    for case_id, want in (("exp2", np.log(2) * 2.0 ** x), ("log10", 1 / (x * np.log(10))),
                          ("cbrt", x ** (-2 / 3) / 3), ("erf", 2 / np.sqrt(np.pi) * np.exp(-x * x)),
                          ("floor", np.zeros(3)), ("abs", one)):
        case = next(c for c in RULE_CASES if c.id == case_id)
        xa = wp.array(x, dtype=f64, requires_grad=True)
        b = wp.array(one, dtype=f64, requires_grad=True)
        y = wp.zeros(3, dtype=f64, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(case.kernel, 3, inputs=[xa, b, y])
        tape.backward(grads={y: one})
        np.testing.assert_allclose(xa.grad.numpy(), want, rtol=1e-14, err_msg=case_id)


def test_exp2_kernel_forward_is_two_to_the_x():
    x = wp.array(np.array([0.5, -1.0, 3.0]), dtype=f64)
    b = wp.array(np.ones(3), dtype=f64)
    y = wp.zeros(3, dtype=f64)
    wp.launch(k_exp2, 3, inputs=[x, b, y])
    np.testing.assert_allclose(y.numpy(), 2.0 ** np.array([0.5, -1.0, 3.0]), rtol=1e-15)


# =============================================================================================
# golden adjoint IR


@wp.kernel
def golden_straight(x: F64, y: F64):
    i = wp.tid()
    v = x[i]
    y[i] = wp.sin(v) * v


@wp.kernel
def golden_product(x: F64, n: int, y: F64):
    i = wp.tid()
    p = f64(1.0)
    for k in range(n):
        p = p * x[k]
    y[i] = p


@wp.kernel
def golden_branch(x: F64, y: F64):
    i = wp.tid()
    v = x[i]
    if v > f64(0.0):
        r = v * v
    else:
        r = -v
    y[i] = r


# y = sin(v) * v: adj(v) = g * v * cos(v) + g * sin(v); y is only written, so its store is
# dropped from the forward sweep and its gradient taken (read and zeroed).
GOLDEN_STRAIGHT = """
kernel golden_straight_adjoint (launch ndim 1):
  %1:ptr = arg() [0]
  %2:ptr = arg() [8]
  %3:int64 = arg() [16]
  %4:int64 = arg() [24]
  %5:ptr = arg() [32]
  %6:ptr = arg() [40]
  %7:int64 = arg() [48]
  %8:int64 = arg() [56]
  %9:int32 = tid() [(0, 1)]
  %10:int64 = cast(%9)
  %11:int64 = mul(%10, %4)
  %12:float64 = load(%1, %11) [0]
  %13:float64 = sin(%12)
  %14:float64 = mul(%13, %12)
  %15:int64 = cast(%9)
  %16:int64 = mul(%15, %8)
  %17:float64 = adj_take(%6, %16) [0]
  %18:float64 = mul(%17, %12)
  %19:float64 = mul(%17, %13)
  %20:float64 = cos(%12)
  %21:float64 = mul(%18, %20)
  %22:float64 = add(%19, %21)
  adj_add(%2, %11, %22) [0]
"""

# p = p * x[k]: the forward loop counts its trips (%31) and pushes p (%15) once per trip; x[k]
# needs no negative-index wrap (k counts up from 0: passes/index_signs.py; the forward's unused
# wrap, %19-%22, goes with dead code later); the
# reverse loop runs the trips backwards, pops p, recomputes k = 0 + iteration * 1 and the load
# of x[k] (x is never written), and passes g * p to x.grad[k] and g * x[k] on to the previous p.
GOLDEN_PRODUCT = """
kernel golden_product_adjoint (launch ndim 1):
  %1:ptr = arg() [0]
  %2:ptr = arg() [8]
  %3:int64 = arg() [16]
  %4:int64 = arg() [24]
  %5:int32 = arg() [32]
  %6:ptr = arg() [40]
  %7:ptr = arg() [48]
  %8:int64 = arg() [56]
  %9:int64 = arg() [64]
  %10:int32 = tid() [(0, 1)]
  %11:float64 = const() [1.0]
  %12:int32 = const() [0]
  %13:int32 = const() [1]
  %30:int64 = const() [0]
  %26:int32, %27:float64, %34:int64 = loop (%14:int32, %15:float64, %31:int64) from (%12:int32, %11:float64, %30:int64):
   while:
    %16:bool = lt(%14, %5)
    yield %16
   do:
    %17:int32 = add(%14, %13)
    %18:int64 = cast(%14)
    %19:int64 = const() [0]
    %20:bool = lt(%18, %19)
    %21:int64 = select(%20, %3, %19)
    %22:int64 = add(%18, %21)
    %23:int64 = mul(%18, %4)
    %24:float64 = load(%1, %23) [0]
    %25:float64 = mul(%15, %24)
    %32:int64 = const() [1]
    %33:int64 = add(%31, %32)
    push(%15)
    yield %17, %25, %33
  %28:int64 = cast(%10)
  %29:int64 = mul(%28, %9)
  %35:float64 = adj_take(%7, %29) [0]
  %52:int64, %53:float64 = loop (%36:int64, %39:float64) from (%34:int64, %35:float64):
   while:
    %50:int64 = const() [0]
    %51:bool = gt(%36, %50)
    yield %51
   do:
    %37:int64 = const() [1]
    %38:int64 = sub(%36, %37)
    %46:float64 = pop()
    %40:int32 = cast(%38)
    %41:int32 = mul(%40, %13)
    %42:int32 = add(%12, %41)
    %43:int64 = cast(%42)
    %44:int64 = mul(%43, %4)
    %45:float64 = load(%1, %44) [0]
    %47:float64 = mul(%46, %45)
    %48:float64 = mul(%39, %45)
    %49:float64 = mul(%39, %46)
    adj_add(%2, %44, %49) [0]
    yield %38, %48
"""

# The forward `if` also yields each branch's values (zero on the other branch); the reverse `if`
# on the same condition applies d(v*v) = 2 g v (as g v + g v) or d(-v) = -g.
GOLDEN_BRANCH = """
kernel golden_branch_adjoint (launch ndim 1):
  %1:ptr = arg() [0]
  %2:ptr = arg() [8]
  %3:int64 = arg() [16]
  %4:int64 = arg() [24]
  %5:ptr = arg() [32]
  %6:ptr = arg() [40]
  %7:int64 = arg() [48]
  %8:int64 = arg() [56]
  %9:int32 = tid() [(0, 1)]
  %10:int64 = cast(%9)
  %11:int64 = mul(%10, %4)
  %12:float64 = load(%1, %11) [0]
  %13:float64 = const() [0.0]
  %14:bool = gt(%12, %13)
  %17:float64, %21:float64, %23:float64 = if %14:
    %15:float64 = mul(%12, %12)
    %22:float64 = const() [0]
    yield %15, %15, %22
  else:
    %16:float64 = neg(%12)
    %20:float64 = const() [0]
    yield %16, %20, %16
  %18:int64 = cast(%9)
  %19:int64 = mul(%18, %8)
  %24:float64 = adj_take(%6, %19) [0]
  %29:float64 = const() [0.0]
  %30:float64 = if %14:
    %25:float64 = mul(%24, %12)
    %26:float64 = mul(%24, %12)
    %27:float64 = add(%25, %26)
    yield %27
  else:
    %28:float64 = neg(%24)
    yield %28
  adj_add(%2, %11, %30) [0]
"""


@pytest.mark.parametrize("kernel,golden", [(golden_straight, GOLDEN_STRAIGHT),
                                           (golden_product, GOLDEN_PRODUCT),
                                           (golden_branch, GOLDEN_BRANCH)],
                         ids=["straight", "product_loop", "if_else"])
def test_golden_adjoint_ir(kernel, golden):
    assert format_kernel(adjoint_ir(kernel)) == textwrap.dedent(golden).strip("\n")


@pytest.mark.parametrize("kernel,want", [(golden_straight, lambda x: np.sin(x) + x * np.cos(x)),
                                         (golden_branch, lambda x: np.where(x > 0, 2 * x, -1.0))],
                         ids=["straight", "if_else"])
def test_golden_kernels_gradients(kernel, want):
    xv = np.array([0.7, -1.3, 0.2, 2.1])
    check_kernel(kernel, 4, [arr(xv), arr(np.zeros(4))], wrt=[0], outputs=[1], weights=[1.0],
                 expected={0: want(xv)})


def test_golden_product_gradient():
    xv = np.array([0.9, 1.2, -0.7, 1.1, 0.8])
    n = 4  # x[4] is not part of the product
    others = np.array([np.prod(np.delete(xv[:n], k)) for k in range(n)] + [0.0])
    check_kernel(golden_product, 3, [arr(xv), n, arr(np.zeros(3))], wrt=[0], outputs=[2],
                 weights=[[1.0, 2.0, -1.0]], expected={0: 2.0 * others})


# =============================================================================================
# structural facts


@wp.kernel
def sum_loop(x: F64, n: int, y: F64):
    i = wp.tid()
    s = f64(0.0)
    for k in range(n):
        s += x[k]
    y[i] = s


@wp.kernel
def weighted_sum_loop(x: F64, w: F64, n: int, y: F64):
    i = wp.tid()
    s = f64(0.0)
    for k in range(n):
        s += w[k] * x[k]
    y[i] = s


@wp.kernel
def product_loop_stack(x: F64, n: int, y: F64):
    i = wp.tid()
    p = f64(1.0)
    for k in range(n):
        p = p * x[k]
    y[i] = p


@wp.kernel
def scale_in_place(t: F64, x: F64):
    i = wp.tid()
    x[i] = wp.cos(t[i]) * x[i]


@wp.kernel
def nested_product(x: wp.array2d(dtype=f64), n: int, m: int, y: F64):
    i = wp.tid()
    p = f64(1.0)
    for a in range(n):
        q = f64(0.0)
        for b in range(m):
            q = q + x[a, b] * p
        p = p * q
    y[i] = p


def _loops(b: Block) -> list[Loop]:
    out: list[Loop] = []
    for s in b.stmts:
        if isinstance(s, Loop):
            out.append(s)
            out.extend(_loops(s.body))
        elif isinstance(s, If):
            out.extend(_loops(s.then) + _loops(s.orelse))
    return out


def _direct_prims(b: Block) -> list[str]:
    return [s.prim for s in b.stmts if isinstance(s, Op)]


@pytest.mark.parametrize("kernel", [sum_loop, weighted_sum_loop], ids=["sum", "weighted_sum"])
def test_sum_loop_pushes_nothing(kernel):
    adj = adjoint_ir(kernel)
    prims = [op.prim for op in all_ops(adj.body)]
    assert "push" not in prims and "pop" not in prims
    assert "push(" not in format_kernel(adj)
    assert kernel.adjoint_compiled().uses_stack is False


def test_product_loop_pushes_one_value_per_iteration():
    adj = adjoint_ir(product_loop_stack)
    forward_loop, reverse_loop = _loops(adj.body)
    assert _direct_prims(forward_loop.body).count("push") == 1
    assert _direct_prims(reverse_loop.body).count("pop") == 1
    assert [op.prim for op in all_ops(adj.body)].count("push") == 1
    assert product_loop_stack.adjoint_compiled().uses_stack is True


def test_product_loop_stack_use_is_eight_bytes_per_iteration():
    """Fits in the initial 64 KiB at 8000 trips (64000 bytes), needs it doubled at 8300."""
    vars(product_loop_stack).pop("_gl_adjoint_prepared", None)  # a fresh, unused stack
    prepared = prepared_adjoint(product_loop_stack)
    assert prepared.stack.size == 1 << 16
    for n, size in ((8000, 1 << 16), (8300, 1 << 17)):
        xv = 1.0 + 0.001 * np.cos(np.arange(n))
        x = wp.array(xv, dtype=f64, requires_grad=True)
        y = wp.zeros(2, dtype=f64, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(product_loop_stack, 2, inputs=[x, n, y])
        tape.backward(grads={y: np.array([1.0, 0.5])})
        assert prepared.stack.size == size, n
        np.testing.assert_allclose(x.grad.numpy(), 1.5 * np.prod(xv) / xv, rtol=1e-12)


def test_nested_loops_push_per_inner_and_outer_trip():
    adj = adjoint_ir(nested_product)
    pushes = [op for op in all_ops(adj.body) if op.prim == "push"]
    pops = [op for op in all_ops(adj.body) if op.prim == "pop"]
    assert len(pushes) == len(pops) >= 1
    xv = np.array([[0.9, 1.2, -0.4], [0.7, 0.5, 1.1]])
    check_kernel(nested_product, 2, [arr(xv), 2, 3, arr(np.zeros(2))], wrt=[0], outputs=[3])


def test_stores_are_replayed_only_into_arrays_the_kernel_reads():
    straight = [op.prim for op in all_ops(adjoint_ir(golden_straight).body)]
    assert "store" not in straight and straight.count("adj_take") == 1
    in_place = [op.prim for op in all_ops(adjoint_ir(scale_in_place).body)]
    assert in_place.count("store") == 1 and in_place.count("adj_take") == 1


def _definitions(b: Block) -> list[Any]:
    """Every variable a block defines: op results, if results, loop params and results."""
    out: list[Any] = []
    for s in b.stmts:
        if isinstance(s, Op):
            out.extend([s.result] if s.result is not None else [])
        elif isinstance(s, If):
            out.extend([*_definitions(s.then), *_definitions(s.orelse), *s.results])
        else:
            out.extend([*s.params, *_definitions(s.cond), *_definitions(s.body), *s.results])
    return out


@pytest.mark.parametrize("kernel", [golden_straight, golden_product, golden_branch,
                                    nested_product, scale_in_place],
                         ids=lambda k: k.key)
def test_adjoint_is_ssa_and_new_ids_follow_the_primal_ones(kernel):
    primal = primal_ir(kernel)
    primal_vars = set(map(id, _definitions(primal.body)))
    top = max(v.id for v in _definitions(primal.body))
    defs = _definitions(adjoint_kernel(primal).body)
    ids = [v.id for v in defs]
    assert len(ids) == len(set(ids)), "a variable id is defined twice"
    assert all(v.id > top for v in defs if id(v) not in primal_vars)


def _module_kernels() -> list[Any]:
    return [v for v in globals().values() if isinstance(v, wp.Kernel)]


@pytest.mark.parametrize("kernel", _module_kernels(), ids=lambda k: k.key)
def test_verifier_accepts_every_adjoint(kernel):
    ir = kernel.lowered() if isinstance(kernel, _SwapPrimKernel) else primal_ir(kernel)
    verify(ir)
    verify(adjoint_kernel(ir))
