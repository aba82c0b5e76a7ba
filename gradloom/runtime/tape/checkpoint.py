"""Checkpointed rollouts on a Tape: keep states at segment starts, re-run segments in backward.

`rollout(step, steps, state)` runs `step(0) ... step(steps - 1)` without recording them and
puts one record on the active tapes. Its backward pass restores a saved state, records one
segment of steps on a tape of its own, runs that tape backwards and drops it, newest segment
first (the schedule: runtime/tape/checkpoint_plan.py). Gradients flow through the same adjoints in
the same order as with a full tape, so they are the same bit for bit where the forward is
deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ...errors import TapeError
from ..array.array import array
from ..array.ops import clone
from ..capturing import refuse_while_capturing
from ..recording import ACTIVE_TAPES, FuncRecord
from . import checkpoint_plan as plans
from .tape import Tape, TapeMemory

Step = Callable[[int], Any]
Pending = tuple[int, int, int]  # (first segment, segments left behind a checkpoint, slots)


class Rollout(FuncRecord):
    """The record a checkpointed rollout leaves on a tape (and the handle `rollout` returns)."""

    label = "checkpointed rollout"

    def __init__(self, step: Step, state: Sequence[array], schedule: plans.Schedule,
                 keep_last: bool = True) -> None:
        super().__init__(self._backward, list(state))
        self.step, self.state, self.schedule = step, list(state), schedule
        self.keep_last = keep_last
        self._input = _save(self.state)  # the state the rollout started from
        self._held: dict[int, list[array]] = {}  # segment -> the state at its start
        self._pending: list[Pending] | None = None
        self._last_segment = 0
        self._last: Tape | None = None  # the last segment, recorded by the forward pass
        self._touched: list[tuple[array, bool, bool]] = []
        self._steps_of: list[int] = []
        #: the most bytes held at once so far (checkpoints plus a recorded segment)
        self.peak = 0

    # -- what a tape asks of its records --------------------------------------------------

    def arrays(self) -> list[Any]:
        return self.state + [a for a, _, _ in self._touched]

    def touches(self) -> list[tuple[Any, bool, bool]]:
        return [(a, True, True) for a in self.state] + self._touched

    def memory(self) -> TapeMemory:
        """What the rollout holds now: its checkpoints, and the recorded segment if any."""
        saved = [self._input, *self._held.values()]
        held = sum(c.capacity for copies in saved for c in copies)
        recorded = self._last.memory() if self._last is not None else TapeMemory()
        return TapeMemory(snapshots=recorded.snapshots, checkpoints=held + recorded.checkpoints,
                          records=1)

    # -- forward --------------------------------------------------------------------------

    def forward(self) -> None:
        """Run every step, keeping the checkpoints the schedule asks for."""
        self._pending, last = self._spine(0, self.schedule.segments, self.schedule.slots)
        self._last_segment = last
        if self.keep_last:
            self._last = self._record(last)
            self._touched = _touches(self._last, self._steps_of, self.state)
        else:
            self._advance(last, last + 1)
        self._note_peak()

    def _spine(self, lo: int, n: int, slots: int) -> tuple[list[Pending], int]:
        """From the state at segment lo's start: run forward to the last of n segments,
        keeping a checkpoint at each split; the left parts still to be swept backwards."""
        pending: list[Pending] = []
        while n > 1:
            m = plans.split(n, slots)
            self._advance(lo, lo + m)
            self._held[lo + m] = _save(self.state)
            pending.append((lo, m, slots))
            lo, n, slots = lo + m, n - m, slots - 1
        return pending, lo

    def _advance(self, lo: int, hi: int) -> None:
        """Run the steps of segments lo..hi-1, recorded on no tape."""
        with _reverse_tapes_off():
            for i in range(self.schedule.bounds(lo), self.schedule.bounds(hi)):
                self.step(i)

    def _record(self, k: int) -> Tape:
        """Run segment k's steps recorded on a tape of their own."""
        tape = Tape()
        self._steps_of = []  # the step of each record
        with _reverse_tapes_off(), tape:
            for i in range(self.schedule.bounds(k), self.schedule.bounds(k + 1)):
                self.step(i)
                self._steps_of.extend([i] * (len(tape.records) - len(self._steps_of)))
        return tape

    # -- backward -------------------------------------------------------------------------

    def _backward(self) -> None:
        refuse_while_capturing("Tape.backward() of a checkpointed rollout")
        with _reverse_tapes_off():
            kept = self.state + [a for a, _, writes in self._touched if writes]
            final = _save(kept)
            with self._gradients_kept():
                if self._pending is None:  # a second backward: run the forward's spine again
                    self._restore(0)
                    self._pending, _ = self._spine(0, self.schedule.segments,
                                                   self.schedule.slots)
                if self._last is None:
                    self._restore(self._last_segment)
                    self._last = self._record(self._last_segment)
                    if not self._touched:  # a segment(): its arrays are known from now on
                        self._touched = _touches(self._last, self._steps_of, self.state)
            self._note_peak()
            self._last._run()
            self._last = None
            self._unwind(self._pending)
            self._pending = None
            for a, values in zip(kept, final, strict=True):
                a.assign(values)  # the arrays hold what the forward left, as after a Tape's

    def _unwind(self, pending: list[Pending]) -> None:
        for lo, m, slots in reversed(pending):
            del self._held[lo + m]
            self._restore(lo)
            self._sweep(lo, m, slots)

    def _sweep(self, lo: int, n: int, slots: int) -> None:
        """Gradients through segments lo..lo+n-1, from the state at lo's start (restored)."""
        with self._gradients_kept():
            pending, last = self._spine(lo, n, slots)
            tape = self._record(last)
        self._last = tape
        self._note_peak()
        self._last = None
        tape._run()
        del tape
        self._unwind(pending)

    @contextmanager
    def _gradients_kept(self) -> Iterator[None]:
        """Re-running steps during backward leaves the gradients as they were: a step's
        `wp.copy` also copies gradients (as Warp's does), which at backward time hold what
        later segments passed back, not the zeros the forward pass copied."""
        written = self.state + [a for a, _, writes in self._touched if writes]
        grads = list({id(a.grad): a.grad for a in written if a.grad is not None}.values())
        saved = _save(grads)
        try:
            yield
        finally:
            with _reverse_tapes_off():
                for g, values in zip(grads, saved, strict=True):
                    g.assign(values)

    def _restore(self, k: int) -> None:
        saved = self._input if k == 0 else self._held[k]
        for a, values in zip(self.state, saved, strict=True):
            a.assign(values)

    def _note_peak(self) -> None:
        self.peak = max(self.peak, self.memory().total)


def rollout(step: Step, steps: int, state: Sequence[array], *, segment: int | None = None,
            budget: int | None = None) -> Rollout | None:
    """Run `step(i)` for i in range(steps) as a checkpointed part of the active tapes.

    `state`: every array a step reads that an earlier step wrote (positions, velocities, ...);
    steps may also read arrays no step writes and scratch arrays they write first. Steps must
    compute the same values when re-run from the same state. `segment`: steps per recorded
    segment (a checkpoint at each segment start); `budget`: bytes the rollout may hold at once
    (the schedule then follows from a measured step); neither: segments of ⌈√steps⌉ steps.
    Returns the record (its `schedule`, `memory()`, `peak`), or None when no tape records."""
    refuse_while_capturing("checkpoint.rollout()")
    state = _check_state(state)
    tapes = [t for t in ACTIVE_TAPES.get() if isinstance(t, Tape)]
    if len(tapes) < len(ACTIVE_TAPES.get()) and tapes:
        raise TapeError("checkpoint.rollout() inside hvp (a forward-mode and a reverse-mode "
                        "tape at once) is not supported; run the steps directly")
    if not tapes:
        for i in range(steps):
            step(i)
        return None
    state_bytes = sum(a.capacity for a in state)
    if segment is not None and budget is not None:
        raise TapeError("checkpoint.rollout(): give segment= or budget=, not both")
    if budget is not None:
        schedule = plans.plan(steps, state_bytes, _step_bytes(step, steps, state), budget)
    elif segment is not None:
        schedule = plans.fixed(steps, segment, state_bytes)
    else:
        schedule = plans.default(steps)
    record = Rollout(step, state, schedule)
    record.forward()
    for tape in tapes:
        tape.record(record)
    return record


def segment(function: Callable[[], Any], state: Sequence[array]) -> Rollout | None:
    """Run `function()` once, recorded as a checkpoint: backward re-runs it from the contents
    `state` (the arrays it reads that are overwritten later) had at the call."""
    record = None
    tapes = [t for t in ACTIVE_TAPES.get() if isinstance(t, Tape)]
    if not tapes:
        function()
        return None
    refuse_while_capturing("checkpoint.segment()")
    record = Rollout(lambda i: function(), _check_state(state), plans.fixed(1, 1),
                     keep_last=False)
    record.forward()
    for tape in tapes:
        tape.record(record)
    return record


def _check_state(state: Sequence[Any]) -> list[array]:
    out = list(state)
    for a in out:
        if not isinstance(a, array):
            raise TapeError(f"checkpoint: state must hold gradloom arrays, got "
                            f"{type(a).__name__}")
    return out


def _step_bytes(step: Step, steps: int, state: list[array]) -> int:
    """Bytes a recorded step keeps at most: the contents its records watch, measured on the
    first step (run on a probe tape; the state is put back afterwards)."""
    saved = _save(state)
    probe = Tape()
    with _reverse_tapes_off(), probe:
        step(0)
    with _reverse_tapes_off():
        for a, values in zip(state, saved, strict=True):
            a.assign(values)
    return probe.watched_bytes()


def _touches(tape: Tape, step_of: list[int], state: list[array]
             ) -> list[tuple[array, bool, bool]]:
    """(array, read, written) of each array a recorded segment touches beyond the state, once
    each; raises where a step reads what an earlier step wrote and the array is not state."""
    state_mems = {id(a._mem) for a in state}
    written: dict[int, int] = {}  # memory -> the step that last wrote it
    out: dict[int, tuple[array, bool, bool]] = {}
    every_written = {id(a._mem) for r in tape.records for a, _, w in r.touches() if w}
    for record, k in zip(tape.records, step_of, strict=True):
        touches = record.touches()
        for a, reads, _ in touches:
            mem = id(a._mem)
            carried = mem in every_written and written.get(mem, -1) < k
            if reads and carried and mem not in state_mems:
                raise TapeError(f"checkpoint.rollout(): step {k} reads array {a!r} (shape "
                                f"{a.shape}), which the steps also write, but it is not in "
                                f"state: list every array a step reads after an earlier step "
                                f"wrote it")
        for a, reads, writes in touches:
            if writes:
                written[id(a._mem)] = k
            if id(a._mem) not in state_mems:
                out.setdefault(id(a), (a, reads, writes))
    return list(out.values())


def _save(arrays: Sequence[array]) -> list[array]:
    with _reverse_tapes_off():
        return [clone(a, requires_grad=False) for a in arrays]


@contextmanager
def _reverse_tapes_off() -> Iterator[None]:
    """Record on no reverse-mode tape meanwhile (forward-mode tapes still see launches)."""
    token = ACTIVE_TAPES.set(tuple(t for t in ACTIVE_TAPES.get() if not isinstance(t, Tape)))
    try:
        yield
    finally:
        ACTIVE_TAPES.reset(token)
