"""Random number builtins: a per-thread PCG state, uniform/normal/Poisson draws and samplers."""

from __future__ import annotations
