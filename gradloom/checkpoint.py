"""`gradloom.checkpoint`: checkpointed rollouts on a Tape (runtime/checkpoint.py; docs/autodiff.md)."""

from __future__ import annotations

from .runtime.checkpoint import Rollout, rollout, segment
from .runtime.checkpoint_plan import Schedule, default, fixed, plan

__all__ = ["Rollout", "Schedule", "default", "fixed", "plan", "rollout", "segment"]
