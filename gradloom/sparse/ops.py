"""Fills `matrix.OPS`: the functions `BsrMatrix`'s operators stand for (`+`, `-`, `*`, `@`, ...)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .build import bsr_copy, bsr_transposed
from .matrix import OPS
from .products import bsr_axpy, bsr_mm, bsr_mv, bsr_scale

_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "bsr_axpy": bsr_axpy, "bsr_copy": bsr_copy, "bsr_mm": bsr_mm, "bsr_mv": bsr_mv,
    "bsr_scale": bsr_scale, "bsr_transposed": bsr_transposed,
}
OPS.fill(_FUNCTIONS.__getitem__)
