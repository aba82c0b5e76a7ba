"""Spatial vector and matrix builtins (Featherstone)."""

from __future__ import annotations
