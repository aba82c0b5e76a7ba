"""Debugging builtins: print, printf, expect_eq, expect_neq, expect_near."""

from __future__ import annotations
