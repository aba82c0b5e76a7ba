"""Negative-index wraps (Warp: a[-1] is the last element) dropped only where the index is
provably >= 0 (passes/index_signs.py): results equal numpy's indexing either way, and the loops
whose indices are proven keep their wrap-free, vectorisable form."""

from __future__ import annotations

import numpy as np

import gradloom as wp
from gradloom import pipeline
from gradloom.ir.nodes import Block, Custom, If, Loop, Op


@wp.kernel
def rows(a: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    for k in range(n):
        out[i * n + k] = a[i * n + k] * 2.0


@wp.kernel
def down_to_negative(a: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(0.0)
    for k in range(n, -3, -1):  # k reaches -1 and -2: a[-1], a[-2] are the last elements
        s += a[k] * float(k + 3)
    out[i] = s


@wp.kernel
def shifted(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i - 1]  # thread 0 reads the last element


def _wraps(b: Block) -> int:
    """How many `select(lt(x, 0), extent, 0)` wraps the block's code still computes."""
    n = 0
    for s in b.stmts:
        if isinstance(s, Op) and s.prim == "select":
            n += 1
        elif isinstance(s, If):
            n += _wraps(s.then) + _wraps(s.orelse)
        elif isinstance(s, Loop):
            n += _wraps(s.cond) + _wraps(s.body)
        elif isinstance(s, Custom):
            n += _wraps(s.body)
    return n


def test_counter_and_bound_prove_the_row_index() -> None:
    ir, _ = pipeline.kernel_ir(rows, False)
    assert _wraps(ir.body) == 0
    a = np.arange(12, dtype=np.float32)
    out = wp.zeros(12, dtype=float)
    wp.launch(rows, 3, [wp.array(a), out, 4])
    np.testing.assert_array_equal(out.numpy(), 2.0 * a)


def test_a_counter_that_goes_negative_keeps_its_wrap() -> None:
    ir, _ = pipeline.kernel_ir(down_to_negative, False)
    assert _wraps(ir.body) >= 1
    a = np.arange(1.0, 9.0, dtype=np.float32)
    out = wp.zeros(1, dtype=float)
    wp.launch(down_to_negative, 1, [wp.array(a), out, 5])
    expected = sum(a[k] * (k + 3) for k in range(5, -3, -1))  # numpy's a[-1] is Warp's too
    np.testing.assert_allclose(out.numpy()[0], expected, rtol=1e-6)


def test_a_difference_keeps_its_wrap() -> None:
    a = np.arange(1.0, 6.0, dtype=np.float32)
    out = wp.zeros(5, dtype=float)
    wp.launch(shifted, 5, [wp.array(a), out])
    np.testing.assert_array_equal(out.numpy(), a[np.arange(5) - 1])
