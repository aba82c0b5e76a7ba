"""Operator builtins with Warp names: floordiv, bit_and, lshift, invert, ...."""

from __future__ import annotations
