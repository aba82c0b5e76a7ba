"""Rows for the operator builtins with Warp's names (floordiv, bit_and, ..., unot, pos), for cast
(bit reinterpretation) and for lower_bound (gradloom/builtins/operators.py and search.py)."""

from __future__ import annotations

import numpy as np
from builtin_table import Row

INT2 = "(a: Int, b: Int) -> Int"
IVEC2 = "(a: IntVector, b: IntVector) -> IntVector"
CAST = "(a: Any, dtype: Type) -> Any"
LB = "(arr: Array, value: Scalar) -> Int"
LB_RANGE = "(arr: Array, arr_begin: Int, arr_end: Int, value: Scalar) -> Int"


def _i32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(np.int32)


def _u32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(np.uint32)


def _nonzero_ints(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(1, 9, shape) * rng.choice([-1, 1], shape)


def _away_from_zero(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(0.3, 1.0, shape) * rng.choice([-1.0, 1.0], shape)


def _shifts(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(0, 9, shape)


def _sorted(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """One sorted array over the sample axis (the kernel searches a0 as a whole)."""
    return np.sort(rng.uniform(-1.0, 1.0, shape), axis=0)


def _sorted_ints(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return np.sort(rng.integers(-6, 7, shape), axis=0)


def _float_bits(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """int32 patterns of ordinary float32 numbers (0.5 .. 4 and their negatives' magnitudes)."""
    return rng.integers(0x3F000000, 0x40800000, shape)


def _bitwise_rows(name: str, fn: np.ufunc, shift: bool = False) -> list[Row]:
    sample = ("int", _shifts) if shift else ()
    return [
        Row(name, INT2, ("i", "i"), ("i",), sample=sample, grad=False,
            ref=lambda a, b: fn(_i32(a), _i32(b))),
        Row(name, INT2, ("u", "u"), ("u",), sample=sample, grad=False,
            ref=lambda a, b: fn(_u32(a), _u32(b))),
        Row(name, IVEC2, ("i", "i"), ("i", "i"), label="vec2i", sample=sample, grad=False,
            body=f"v = wp.{name}(wp.vec2i(x0, x0 + 1), wp.vec2i(x1, x1))\ny0 = v[0]\ny1 = v[1]",
            ref=lambda a, b: (fn(_i32(a), _i32(b)), fn(_i32(a) + 1, _i32(b)))),
    ]


def _lower_bound(a: np.ndarray, v: np.ndarray, lo: int = 0, hi: int | None = None) -> np.ndarray:
    return lo + np.searchsorted(a[lo:hi], v, side="left")


ROWS: list[Row] = [
    Row("floordiv", "(a: Scalar, b: Scalar) -> Scalar", ("i", "i"), ("i",), label="int",
        sample=("int", _nonzero_ints), grad=False,
        ref=lambda a, b: np.floor_divide(_i32(a), _i32(b))),
    Row("floordiv", "(a: Scalar, b: Scalar) -> Scalar", ("f", "f"), ("f",), label="float",
        sample=("any", _away_from_zero), grad=False, ref=lambda a, b: np.floor(a / b)),
    *_bitwise_rows("bit_and", np.bitwise_and),
    *_bitwise_rows("bit_or", np.bitwise_or),
    *_bitwise_rows("bit_xor", np.bitwise_xor),
    *_bitwise_rows("lshift", np.left_shift, shift=True),
    *_bitwise_rows("rshift", np.right_shift, shift=True),
    Row("invert", "(a: Int) -> Int", ("i",), ("i",), grad=False,
        ref=lambda a: np.invert(_i32(a))),
    Row("invert", "(a: Int) -> Int", ("u",), ("u",), grad=False,
        ref=lambda a: np.invert(_u32(a))),
    Row("invert", "(a: IntVector) -> IntVector", ("i",), ("i", "i"), label="vec2i", grad=False,
        body="v = wp.invert(wp.vec2i(x0, 3))\ny0 = v[0]\ny1 = v[1]",
        ref=lambda a: (np.invert(_i32(a)), np.full(len(a), ~3))),
    Row("unot", "(a: Bool) -> Bool", ("b",), ("b",), grad=False, ref=np.logical_not),
    Row("unot", "(a: Int) -> Bool", ("i",), ("b",), grad=False, ref=lambda a: a == 0),
    Row("unot", "(a: Array) -> Bool", ("f",), ("b",), label="array", grad=False,
        body="y0 = wp.unot(a0)", ref=lambda a: np.zeros(len(a), dtype=bool)),
    Row("pos", "(x: Scalar) -> Scalar", ("f",), ("f",), ref=lambda x: x),
    Row("pos", "(x: Scalar) -> Scalar", ("i",), ("i",), grad=False, ref=lambda x: x),
    Row("pos", "(x: Vector) -> Vector", ("v3",), ("v3",), ref=lambda x: x),
    Row("pos", "(x: Matrix) -> Matrix", ("m33",), ("m33",), ref=lambda x: x),
    # cast reinterprets bits: references view the same bytes with numpy
    Row("cast", CAST, ("f",), ("i",), label="float32_to_int32", grad=False,
        body="y0 = wp.cast(wp.float32(x0), wp.int32)",
        ref=lambda x: np.asarray(x, dtype=np.float32).view(np.int32)),
    Row("cast", CAST, ("i",), ("f",), label="int32_to_float32", grad=False,
        sample=(_float_bits,), body="y0 = F(wp.cast(x0, wp.float32))",
        ref=lambda x: _i32(x).view(np.float32)),
    Row("cast", CAST, ("i",), ("u",), label="int32_to_uint32", grad=False,
        body="y0 = wp.cast(x0, wp.uint32)", ref=lambda x: _i32(x).view(np.uint32)),
    # values above the last element give the range's end (warp-lang gives end - 1; see
    # docs/differences.md), so the [i,i] and [range] rows fail on GL_TEST_BACKEND=warp
    Row("lower_bound", LB, ("f", "f"), ("i",), sample=(_sorted, "unit"), grad=False,
        body="y0 = wp.lower_bound(a0, x1)", ref=_lower_bound),
    Row("lower_bound", LB, ("i", "i"), ("i",), sample=(_sorted_ints, "int"), grad=False,
        body="y0 = wp.lower_bound(a0, x1)", ref=_lower_bound),
    Row("lower_bound", LB_RANGE, ("f", "f"), ("i",), label="range", sample=(_sorted, "unit"),
        grad=False,
        body="y0 = wp.lower_bound(a0, 3, 11, x1)",
        ref=lambda a, v: _lower_bound(a, v, 3, 11)),
]
