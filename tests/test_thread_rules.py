"""The host rules over every thread (ir/thread_rules.py) agree with the scalar host rules
(ir/hostops.py) element by element, and every primitive that computes integers from integers
has one (the launch-time overlap check evaluates addresses with them)."""

import numpy as np
import pytest

from gradloom.ir.prims import PRIMS, Effect
from gradloom.types import bool_, int32, int64, uint8, uint32

INT_TYPES = (int32, int64, uint32, uint8)


def _takes_integers(name: str) -> bool:
    """Whether the primitive's type rule accepts integer operands and gives an integer/bool."""
    prim = PRIMS[name]
    try:
        result = prim.type_rule((int32,) * prim.arity, int64)
    except TypeError:
        return False
    return result is not None and result.kind in "iub"


def test_every_integer_primitive_has_a_rule_over_threads():
    missing = [name for name, prim in PRIMS.items()
               if prim.effects == Effect.NONE and _takes_integers(name)
               and prim.host_threads is None]
    assert missing == []


def _values(t, rng, n):
    """Edge values of the type (0, ±1, its limits) and random ones."""
    info = np.iinfo(t.np_dtype)
    edges = [0, 1, 2, info.max, info.min, info.max - 1, 7, 3]
    if info.min < 0:
        edges += [-1, -2, -7, info.min + 1]
    rand = rng.integers(info.min, info.max, n - len(edges), dtype=t.np_dtype, endpoint=True)
    return np.concatenate([np.array(edges, dtype=t.np_dtype), rand])


CASES = [(name, t) for name, prim in PRIMS.items() if prim.host_threads is not None
         and name not in ("const", "cast", "select", "bitcast") for t in INT_TYPES
         if prim.arity in (1, 2)]


@pytest.mark.parametrize("name,t", CASES, ids=[f"{n}-{t.name}" for n, t in CASES])
def test_rule_matches_the_scalar_rule(name, t):
    prim = PRIMS[name]
    rng = np.random.default_rng(abs(hash((name, t.name))) % 2**32)
    xs = [_values(t, rng, 64) for _ in range(prim.arity)]
    if prim.arity == 2:  # every pair of edge values too
        xs = [np.repeat(xs[0], 64), np.tile(xs[1], 64)]
    rtype = prim.type_rule((t,) * prim.arity, None)
    got = prim.host_threads(list(xs), rtype, None)
    want = [prim.host([x[k] for x in xs], rtype, None) for k in range(len(xs[0]))]
    assert got.dtype == rtype.np_dtype
    np.testing.assert_array_equal(got, np.array(want, dtype=rtype.np_dtype))


@pytest.mark.parametrize("src", [*INT_TYPES, bool_], ids=lambda t: t.name)
@pytest.mark.parametrize("dst", [*INT_TYPES, bool_], ids=lambda t: t.name)
def test_cast_matches_the_scalar_rule(src, dst):
    rng = np.random.default_rng(5)
    xs = np.array([True, False] * 8) if src is bool_ else _values(src, rng, 40)
    got = PRIMS["cast"].host_threads([xs], dst, None)
    want = [PRIMS["cast"].host([x], dst, None) for x in xs]
    np.testing.assert_array_equal(got, np.array(want, dtype=dst.np_dtype))


@pytest.mark.parametrize("t", INT_TYPES, ids=lambda t: t.name)
def test_const_and_select_match_the_scalar_rules(t):
    for value in (0, 1, -1, 2**40 + 3, -(2**31), 255):
        got = PRIMS["const"].host_threads([], t, value)
        assert got == PRIMS["const"].host([], t, value)
    c = np.array([True, False, True])
    a, b = np.array([1, 2, 3], dtype=t.np_dtype), np.array([7, 8, 9], dtype=t.np_dtype)
    got = PRIMS["select"].host_threads([c, a, b], t, None)
    want = [PRIMS["select"].host([c[k], a[k], b[k]], t, None) for k in range(3)]
    np.testing.assert_array_equal(got, np.array(want, dtype=t.np_dtype))
