"""`gradloom.checkpoint`: checkpointed rollouts on a Tape (runtime/tape/checkpoint.py; docs/autodiff.md)."""

from __future__ import annotations

from .runtime.tape.checkpoint import Rollout, rollout, segment
from .runtime.tape.checkpoint_plan import Schedule, default, fixed, plan

__all__ = ["Rollout", "Schedule", "default", "fixed", "plan", "rollout", "segment"]
