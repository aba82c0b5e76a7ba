"""Rows for the atomic builtins (gradloom/builtins/atomics.py).

Gradient rows update the output array r0 atomically and then `return`, so the harness's final
`r0[i] = y0` is never run: r0 holds what the atomic left there (atomic_min/max may not be
differentiated on an array the kernel also stores into). r0 starts at zero, so min/max values
are kept below/above zero to make the atomic's value the one that stays.
The bitwise/exchange rows (no gradient) first store x1 into r0, apply the atomic, and read back.
"""

from __future__ import annotations

import numpy as np
from builtin_table import Row

SCALAR = "(arr: Array, i: Int, value: Scalar) -> Scalar"
VECTOR = "(arr: Array, i: Int, value: Vector) -> Vector"
INT = "(arr: Array, i: Int, value: Int) -> Int"
CAS = "(arr: Array, i: Int, compare: Scalar, value: Scalar) -> Scalar"


def _i32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(np.int32)


def _few(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Values from {-1, 0, 1}: compare and current value are often equal."""
    return rng.integers(-1, 2, shape).astype(np.float64)


def _sq_scaled(x: np.ndarray) -> np.ndarray:
    """x * x[1] for a batch of vectors."""
    return x * x[:, 1:2]


# y0 is defined only because Warp compiles the unreachable `r0[i] = y0` after the return
_RETURN = "y0 = x0\nreturn"


def _gradient_rows(name: str, sign: float, scalar_value: str, vector_value: str,
                   scalar_ref: object, vector_sample: str = "any") -> list[Row]:
    return [
        Row(name, SCALAR, ("f",), ("f",), body=f"wp.{name}(r0, i, {scalar_value})\n{_RETURN}",
            ref=scalar_ref),
        Row(name, VECTOR, ("v3",), ("v3",), body=f"wp.{name}(r0, i, {vector_value})\n{_RETURN}",
            sample=(vector_sample,), ref=lambda x: sign * _sq_scaled(x)),
    ]


def _bitwise_row(name: str, fn: np.ufunc) -> Row:
    body = f"r0[i] = x1\ny1 = wp.{name}(r0, i, x0)\ny0 = r0[i]"
    return Row(name, INT, ("i", "i"), ("i", "i"), body=body, grad=False,
               ref=lambda a, b: (fn(_i32(b), _i32(a)), b))


_CAS_BODY = "r0[i] = x1\ny1 = wp.atomic_cas(r0, i, x2, x0)\ny0 = r0[i]"


def _cas_ref(value: np.ndarray, current: np.ndarray, compare: np.ndarray) -> tuple[object, ...]:
    return np.where(current == compare, value, current), current


# a vector is swapped only when all of it equals compare: even threads compare with the
# current value itself, odd ones with a random vector of zeros and ones
_CAS_VECTOR_BODY = """
r0[i] = x1
c = x2
if i % 2 == 0:
    c = x1
y1 = wp.atomic_cas(r0, i, c, x0)
y0 = r0[i]
"""


def _binary(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(0, 2, shape).astype(np.float64)


def _cas_vector_ref(value: np.ndarray, current: np.ndarray, compare: np.ndarray
                    ) -> tuple[object, ...]:
    even = (np.arange(len(value)) % 2 == 0)
    swap = even | np.all(current == compare, axis=1)
    return np.where(swap[:, None], value, current), current


ROWS: list[Row] = [
    *_gradient_rows("atomic_add", 1.0, "x0 * x0", "x0 * x0[1]", lambda x: x * x),
    *_gradient_rows("atomic_sub", -1.0, "x0 * x0", "x0 * x0[1]", lambda x: -x * x),
    *_gradient_rows("atomic_min", -1.0, "x0 * x0 - F(2.0)", "-(x0 * x0[1])",
                    lambda x: x * x - 2.0, vector_sample="pos"),
    *_gradient_rows("atomic_max", 1.0, "x0 * x0 + F(0.5)", "x0 * x0[1]",
                    lambda x: x * x + 0.5, vector_sample="pos"),
    _bitwise_row("atomic_and", np.bitwise_and),
    _bitwise_row("atomic_or", np.bitwise_or),
    _bitwise_row("atomic_xor", np.bitwise_xor),
    Row("atomic_exch", SCALAR, ("i", "i"), ("i", "i"), grad=False,
        body="r0[i] = x1\ny1 = wp.atomic_exch(r0, i, x0)\ny0 = r0[i]", ref=lambda a, b: (a, b)),
    Row("atomic_exch", SCALAR, ("f", "f"), ("f", "f"), grad=False,
        body="r0[i] = x1\ny1 = wp.atomic_exch(r0, i, x0)\ny0 = r0[i]", ref=lambda a, b: (a, b)),
    Row("atomic_exch", VECTOR, ("v3", "v3"), ("v3", "v3"), grad=False,
        body="r0[i] = x1\ny1 = wp.atomic_exch(r0, i, x0)\ny0 = r0[i]", ref=lambda a, b: (a, b)),
    Row("atomic_cas", CAS, ("i", "i", "i"), ("i", "i"), sample=("int", _few, _few), grad=False,
        body=_CAS_BODY, ref=_cas_ref),
    Row("atomic_cas", CAS, ("f", "f", "f"), ("f", "f"), sample=("any", _few, _few), grad=False,
        body=_CAS_BODY, ref=_cas_ref),
    Row("atomic_cas", "(arr: Array, i: Int, compare: Vector, value: Vector) -> Vector",
        ("v3", "v3", "v3"), ("v3", "v3"), sample=("any", _binary, _binary), grad=False,
        body=_CAS_VECTOR_BODY, ref=_cas_vector_ref),
]
