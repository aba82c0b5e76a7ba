"""Rows of the builtin table (tests/builtin_table.py), one module per builtin family.

Each module defines ``ROWS: list[Row]``; tests/test_builtin_grads.py collects all of them.
"""

from __future__ import annotations

import importlib
import pkgutil

from builtin_table import Row


def all_rows() -> list[Row]:
    rows: list[Row] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        rows.extend(module.ROWS)
    return rows
