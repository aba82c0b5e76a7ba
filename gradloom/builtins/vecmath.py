"""Vector and matrix helpers: norms, diagonals, skew, argmin/argmax."""

from __future__ import annotations
