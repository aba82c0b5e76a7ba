"""Warp 1.19 compatibility runner: Warp's own tests and examples, run on gradloom and on warp-lang.

Run from the repository root: ``python -m tools.warp_compat`` (see docs/compat.md).
"""
