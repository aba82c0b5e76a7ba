"""Schedules of checkpointed rollouts: segment length, checkpoint slots, sweeps (binomial).

A rollout of `steps` steps is cut into segments of `segment` steps. Its backward pass keeps the
state at some segment starts (checkpoints, `slots` of them at most besides the rollout's input)
and records one segment at a time on a tape, re-running forward from the nearest checkpoint.
With `s` slots and `t` sweeps (each segment run forward at most `t` times while going
backwards) a backward pass covers at most C(s + t, s) segments (Griewank's binomial bound,
which `split` attains); `t = 1` is the √N scheme: a checkpoint at every segment start.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass


def capacity(slots: int, sweeps: int) -> int:
    """How many segments `slots` checkpoints and `sweeps` forward runs per segment cover."""
    return math.comb(slots + sweeps, slots)


def sweeps_needed(segments: int, slots: int) -> int:
    """The fewest sweeps with which `slots` checkpoints cover `segments` segments."""
    if segments <= 1:
        return 0
    if slots <= 0:
        raise ValueError("more than one segment needs at least one checkpoint slot")
    t = 1
    while capacity(slots, t) < segments:
        t += 1
    return t


def split(segments: int, slots: int) -> int:
    """How many of `segments` (≥ 2) segments to leave behind a new checkpoint: the left part
    is later covered with the same slots and one sweep fewer, the right one with one slot
    fewer and the same sweeps."""
    t = sweeps_needed(segments, slots)
    return min(capacity(slots, t - 1), segments - 1)


def recomputed_segments(segments: int, slots: int) -> int:
    """Segment forward runs a backward pass makes (the last segment's recording, made by the
    forward pass, not counted)."""
    memo: dict[tuple[int, int], int] = {}

    def full(n: int, s: int) -> int:  # a sweep from a restored state: advances and records
        if n == 1:
            return 1
        if (n, s) not in memo:
            total, left, free = 0, n, s
            while left > 1:  # the spine: advance m, keep a checkpoint, go right
                m = split(left, free)
                total += m + full(m, free)
                left, free = left - m, free - 1
            memo[(n, s)] = total + 1  # the last segment's recording
        return memo[(n, s)]

    total, s = 0, slots
    while segments > 1:
        m = split(segments, s)
        total += full(m, s)
        segments, s = segments - m, s - 1
    return total


@dataclass(frozen=True)
class Schedule:
    """How a rollout is checkpointed: `segment` steps per recorded segment, at most `slots`
    checkpoints held besides the input state, each segment run forward at most `sweeps` more
    times during backward. `memory`: estimated bytes held at the peak (checkpoints plus one
    recorded segment), from `state_bytes` per checkpoint and `step_bytes` per recorded step
    (0 where not measured)."""

    steps: int
    segment: int
    slots: int
    sweeps: int
    state_bytes: int = 0
    step_bytes: int = 0

    @property
    def segments(self) -> int:
        return -(-self.steps // self.segment)

    @property
    def memory(self) -> int:
        return (1 + self.slots) * self.state_bytes + self.segment * self.step_bytes

    def bounds(self, k: int) -> int:
        """The first step of segment k (`steps` for k = `segments`)."""
        return min(k * self.segment, self.steps)


def fixed(steps: int, segment: int, state_bytes: int = 0, step_bytes: int = 0) -> Schedule:
    """A checkpoint at the start of every segment of `segment` steps (one sweep)."""
    if steps < 1:
        raise ValueError(f"a rollout needs at least one step, got {steps}")
    if segment < 1:
        raise ValueError(f"segment must be at least 1 step, got {segment}")
    segment = min(segment, steps)
    n = -(-steps // segment)
    return Schedule(steps, segment, max(n - 1, 0), 1 if n > 1 else 0, state_bytes, step_bytes)


def default(steps: int) -> Schedule:
    """The √N schedule: segments of ⌈√steps⌉ steps, a checkpoint at each segment start."""
    return fixed(steps, max(1, math.isqrt(steps - 1) + 1) if steps > 1 else 1)


def plan(steps: int, state_bytes: int, step_bytes: int, budget: int) -> Schedule:
    """The schedule with the fewest sweeps whose peak memory fits `budget` bytes (then the
    longest segments that fit): raises ValueError naming the least memory any schedule needs
    when none does."""
    if steps < 1:
        raise ValueError(f"a rollout needs at least one step, got {steps}")
    if step_bytes * steps + state_bytes <= budget:
        return Schedule(steps, steps, 0, 0, state_bytes, step_bytes)  # the whole rollout fits
    least = 2 * state_bytes + step_bytes  # one slot, one-step segments
    if least > budget:
        raise ValueError(f"a checkpointed rollout of {steps} steps needs at least {least} "
                         f"bytes ({state_bytes} per state, {step_bytes} per recorded step); "
                         f"the budget is {budget}")
    for t in range(1, steps):
        caps = _capacities(t, steps)
        best: Schedule | None = None
        for segment in range(1, steps + 1):
            n = -(-steps // segment)
            s = bisect.bisect_left(caps, n)
            sched = Schedule(steps, segment, s, t, state_bytes, step_bytes)
            if sched.memory <= budget:
                best = sched  # longer segments fit later in the loop: keep the last
        if best is not None:
            return best
    raise AssertionError("unreachable: one slot and one-step segments fit")


def _capacities(t: int, limit: int) -> list[int]:
    """capacity(s, t) for s = 0, 1, ... until it reaches limit (increasing in s)."""
    out = [1]
    while out[-1] < limit:
        out.append(capacity(len(out), t))
    return out
