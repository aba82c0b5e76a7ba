"""Rows for scalar math builtins."""

from __future__ import annotations

import numpy as np
from builtin_table import Row

F1 = "(x: Float) -> Float"

ROWS: list[Row] = [
    Row("sqrt", F1, ("f",), ("f",), sample=("pos",), ref=np.sqrt),
    Row("sin", F1, ("f",), ("f",), ref=np.sin),
    Row("pow", "(x: Float, y: Float) -> Float", ("f", "f"), ("f",), sample=("pos", "any"),
        ref=np.power),
]
