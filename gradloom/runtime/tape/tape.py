"""`wp.Tape`: records launches and array operations, then runs their adjoints in reverse."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from contextvars import Token
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import config
from ...errors import TapeError, user_facing, warn_caller
from .. import readmarks
from ..array import lazy_zero
from ..array.array import NDArray, array, elem_shape, zero_arrays
from ..array.foreign import as_array
from ..array.structs import field_value
from ..capturing import OpNode, recording_graph
from ..recording import ACTIVE_TAPES, FuncRecord, on_host
from .adjoint import LaunchRecord
from .graph import tape_dot

Record = LaunchRecord | FuncRecord


@dataclass(frozen=True)
class TapeMemory:
    """Bytes a tape holds for its backward pass: `snapshots` (array contents its adjoints
    need, copied before something overwrote them), `checkpoints` (states that checkpointed
    rollouts keep); `records`: how many records the tape has."""

    snapshots: int = 0
    checkpoints: int = 0
    records: int = 0

    @property
    def total(self) -> int:
        return self.snapshots + self.checkpoints

    def __add__(self, other: TapeMemory) -> TapeMemory:
        return TapeMemory(self.snapshots + other.snapshots,
                          self.checkpoints + other.checkpoints, self.records + other.records)
#: a scope marker: (index of the first record inside, name, metadata); name None ends a scope
Scope = tuple[int, str | None, dict[str, Any] | None]


class Tape:
    """Records the launches and array operations run inside `with tape:`.

    `backward()` runs them backwards: gradients flow from the seeded arrays' `.grad` into the
    `.grad` of every array they depend on. Leaf gradients accumulate across calls until
    `zero()`. While several tapes are active (nested `with` blocks), each records every
    operation; `backward` on one replays only what it recorded.
    """

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.scopes: list[Scope] = []
        self.loss: array | None = None
        self._tokens: list[Token[tuple[Any, ...]]] = []
        #: `gradients` entries of recordings that `reset()` forgot (zeroed), as in Warp
        self._forgotten: dict[Any, Any] = {}

    def __enter__(self) -> Tape:
        self._tokens.append(ACTIVE_TAPES.set((*ACTIVE_TAPES.get(), self)))
        return self

    def __exit__(self, *exc: object) -> None:
        ACTIVE_TAPES.reset(self._tokens.pop())

    @property
    def launches(self) -> list[Record]:
        """The recorded operations in order (Warp's name for them)."""
        return self.records

    # -- recording ----------------------------------------------------------------------------

    def begin_launch(self, kernel: Any, dims: tuple[int, ...], args: Sequence[Any],
                     compiled: Any, make: Callable[..., LaunchRecord] = LaunchRecord
                     ) -> LaunchRecord:
        """A record of the launch about to run (`make`: a CUDA launch's record type)."""
        record = make(kernel, dims, args, compiled)
        if not _backward_disabled(record):  # the checks protect an adjoint; it has none
            record.check_aliases(compiled)
            record.check_thread_order()
        # once per launch: on the outermost tape; the names only when they may be printed
        if config.verify_autograd_array_access and ACTIVE_TAPES.get()[:1] == (self,):
            readmarks.check_launch(kernel, record.named_touches())
        return record

    def end_launch(self, record: LaunchRecord) -> None:
        record.finish()
        self.records.append(record)

    def record(self, record: FuncRecord) -> None:
        """Append an array operation's backward step (see `recording.record_op`)."""
        self.records.append(record)

    def record_func(self, backward: Callable[[], None], arrays: Sequence[array]) -> None:
        """Record a Python function that `backward()` calls at this point of the recording.

        `arrays`: the arrays the function uses; each must have a gradient, and `zero()` resets
        their gradients."""
        if not callable(backward):
            raise TapeError(f"Tape.record_func: backward must be callable, got "
                                f"{type(backward).__name__}")
        checked = []
        for a in arrays:
            if not isinstance(a, array) or a.grad is None:
                raise TapeError(f"Tape.record_func: {a!r} is not a gradloom array with a "
                                    "gradient; create it with requires_grad=True")
            checked.append(a)
        self.records.append(FuncRecord(backward, checked))

    def record_scope_begin(self, scope_name: str, metadata: dict[str, Any] | None = None
                           ) -> None:
        """Open a named scope grouping the operations recorded until `record_scope_end()`
        (scopes only label the recording; they change nothing in `backward`)."""
        self.scopes.append((len(self.records), scope_name, {} if metadata is None else metadata))

    def record_scope_end(self, remove_scope_if_empty: bool = True) -> None:
        """Close the innermost open scope; one that recorded nothing is dropped when
        `remove_scope_if_empty`."""
        depth = sum(1 if name is not None else -1 for _, name, _ in self.scopes)
        if depth <= 0:
            raise TapeError("Tape.record_scope_end(): ended tape scope, but scope not "
                                "present (no record_scope_begin() is open)")
        start, name, _ = self.scopes[-1]
        if remove_scope_if_empty and name is not None and start == len(self.records):
            self.scopes.pop()
        else:
            self.scopes.append((len(self.records), None, None))

    # -- backward -----------------------------------------------------------------------------

    @user_facing
    def backward(self, loss: array | None = None,
                 grads: dict[array, Any] | None = None) -> None:
        """Propagate gradients backwards through everything recorded.

        `loss`: a one-element array; its gradient is set to 1. `grads`: {array: seed}; each
        array's gradient is set to a copy of its seed (the seed itself is never written; an
        array without a gradient gets one).
        Neither: the seeds are the `.grad` contents the user set; each nonzero `.grad` of an
        array the tape writes (and does not read first) holds its values again afterwards, so
        a second call adds the same gradients again.
        """
        graph = recording_graph()
        if graph is not None:  # inside a capture, as Warp: the backward pass runs at replay
            graph.add(OpNode(functools.partial(self.backward, loss, grads), "Tape.backward()"))
            return
        if loss is None and not grads:
            self._seeded_backward()
            return
        if loss is not None:
            loss = as_array(loss, "Tape.backward(loss=...)")
            g = _gradient_of(loss, "loss")
            if loss.size != 1:
                raise TapeError(f"Tape.backward(loss=...): the loss must have exactly one "
                                    f"element, got shape {loss.shape}; use grads={{array: seed}} "
                                    "for other outputs")
            self.loss = loss
            g.fill_(1.0)
        for a, seed in (grads or {}).items():
            _seed(as_array(a, "Tape.backward(grads=...)"), seed)
        self._run()

    def _run(self) -> None:
        for record in reversed(self.records):
            if _backward_disabled(record):
                _warn_no_backward(record.kernel)  # type: ignore[union-attr]
                continue
            record.backward()
        readmarks.clear(self._arrays())  # the reads are consumed (Warp's access check)

    def _seeded_backward(self) -> None:
        """backward() from the `.grad` contents: the seed buffers keep their values."""
        kept = [(g, values) for g in self._seed_buffers()
                if _nonzero(values := g.numpy().copy())]
        try:
            self._run()
        finally:
            for g, values in kept:
                on_host([g], lambda v, values=values: v.__setitem__(..., values))

    def _seed_buffers(self) -> list[array]:
        """The gradients of the arrays whose `.grad` an adjoint may consume: those the tape
        overwrites before anything recorded reads their contents."""
        first_read: dict[int, bool] = {}  # memory -> its first recorded touch reads it
        written: dict[int, array] = {}
        for record in self.records:
            for a, reads, writes in record.touches():
                first_read.setdefault(id(a._mem), reads)
                if writes and a.grad is not None:
                    written.setdefault(id(a), a)
        return [a.grad for a in written.values()
                if a.grad is not None and not first_read[id(a._mem)]]

    def visualize(self, filename: str | None = None, simplify_graph: bool = True,
                  hide_readonly_arrays: bool = False, array_labels: dict[Any, str] | None = None,
                  choose_longest_node_name: bool = True, ignore_graph_scopes: bool = False,
                  track_inputs: Any = None, track_outputs: Any = None,
                  track_input_names: Any = None, track_output_names: Any = None,
                  graph_direction: str = "LR") -> str:
        """The recording as GraphViz DOT source (written to `filename` too, when given): one
        node per operation and per array, edges along what each reads and writes, scopes as
        clusters; `simplify_graph` merges repeated launches of a kernel on the same arguments.
        Warp's other options are accepted (`choose_longest_node_name`, `track_*` change
        nothing here)."""
        dot = tape_dot(self.records, self.scopes, simplify_graph=simplify_graph,
                       hide_readonly_arrays=hide_readonly_arrays, array_labels=array_labels,
                       ignore_graph_scopes=ignore_graph_scopes, graph_direction=graph_direction)
        if filename is not None:
            with open(filename, "w", encoding="utf-8") as f:
                f.write(dot)
        return dot

    # -- housekeeping -------------------------------------------------------------------------

    def memory(self) -> TapeMemory:
        """What the tape holds now (the arrays it recorded are the user's, not counted)."""
        out = TapeMemory(records=len(self.records))
        for record in self.records:
            own = getattr(record, "memory", None)
            if own is not None:
                out += own()
        saved = sum(_saved_bytes(w.saved) for w in self._watches())
        return out + TapeMemory(snapshots=saved)

    def watched_bytes(self) -> int:
        """Bytes of the array contents the recorded launches promised to keep: what the tape
        holds once everything they read has been overwritten."""
        return sum(w.array.capacity for w in self._watches())

    def _watches(self) -> list[Any]:
        """The watches of the recorded launches, each once (launches reading an array between
        two writes share one: runtime/array/watch.py `Watch.of`)."""
        seen = {id(w): w for r in self.records if isinstance(r, LaunchRecord)
                for w in (*r.before.values(), *r.after.values())}
        return list(seen.values())

    def _arrays(self) -> list[array]:
        seen: dict[int, array] = {}
        for record in self.records:
            for a in record.arrays():
                seen.setdefault(id(a), a)
        if self.loss is not None:
            seen.setdefault(id(self.loss), self.loss)
        return list(seen.values())

    @property
    def gradients(self) -> dict[Any, Any]:
        """{array: its gradient} for every recorded array that has one, and {struct instance:
        a copy of it holding its arrays' gradients} for every struct a recorded launch got
        (recordings `reset()` forgot included, as in Warp)."""
        out: dict[Any, Any] = dict(self._forgotten)
        out.update({a: a.grad for a in self._arrays() if a.grad is not None})
        for record in self.records:
            if isinstance(record, LaunchRecord):
                for value in record.args:
                    if hasattr(type(value), "__gl_struct__") and value not in out:
                        out[value] = _struct_gradients(value)
        return out

    def zero(self) -> None:
        """Zero the gradients of every array the tape recorded (struct fields included). Large
        host gradients are zeroed when next used, or never where the next use overwrites them
        (array/lazy_zero.py)."""
        zero_arrays([a.grad for a in self._arrays() if a.grad is not None
                     and not lazy_zero.defer(a.grad)])

    def reset(self) -> None:
        """Zero the gradients, then forget everything recorded."""
        self.zero()
        readmarks.clear(self._arrays())
        self._forgotten = self.gradients
        self.records.clear()
        self.scopes.clear()
        self.loss = None


def _saved_bytes(saved: Any) -> int:
    """Bytes of a watch's copy: numpy (host) or a gradloom array (device); None: no copy."""
    if saved is None:
        return 0
    return int(saved.nbytes) if isinstance(saved, np.ndarray) else int(saved.capacity)


def _backward_disabled(record: Record) -> bool:
    """Whether record is a launch (CPU or CUDA) of a kernel compiled without an adjoint
    (`enable_backward=False` on the kernel or its module): backward skips it."""
    return isinstance(record, LaunchRecord) and \
        getattr(record.kernel, "enable_backward", None) is False


def _warn_no_backward(kernel: Any) -> None:
    """Warp's behaviour for a recorded kernel without an adjoint: a warning per recorded
    launch (Python's filters decide how many are shown), no gradient through it."""
    where = ("on the kernel" if getattr(kernel, "options", {}).get("enable_backward") is False
             else "by its module's options")
    warn_caller(f"Tape.backward(): kernel '{kernel.key}' was defined with "
                f"enable_backward=False ({where}), so no gradient flows through its recorded "
                "launch; gradients of what it reads may be incomplete")


def _struct_gradients(value: Any) -> Any:
    """A new instance of value's struct whose array fields are their gradients (None where
    there is none), nested structs mirrored the same way, other fields left at their zero."""
    st = type(value).__gl_type__
    mirror = type(value)()
    for name, _ in st.fields:
        field = field_value(value, name)
        if isinstance(field, array):
            setattr(mirror, name, field.grad)
        elif hasattr(type(field), "__gl_struct__"):
            setattr(mirror, name, _struct_gradients(field))
    return mirror


def _values(seed: Any) -> Any:
    """A seed's values for `assign` (read, never written; tensors are detached)."""
    if isinstance(seed, array):
        return seed.numpy()
    if hasattr(seed, "detach"):
        return seed.detach().cpu().numpy()
    return seed


def _seed(a: Any, seed: Any) -> None:
    """a.grad = a copy of seed (an array without a gradient gets a fresh one; Warp gives it
    the seed array itself, which its backward pass then consumes)."""
    if not isinstance(a, array):
        raise TapeError(f"Tape.backward(grads=...): expected a gradloom array, got "
                        f"{type(a).__name__}")
    if a.grad is None:
        a.requires_grad = True
    assert a.grad is not None
    if isinstance(seed, array) and seed.device is a.device and seed.dtype == a.dtype and \
            seed.shape == a.shape:
        if seed is not a.grad:
            if lazy_zero.defer_copy(a.grad, seed):  # copied when first used, if ever
                return
            lazy_zero.discard(a.grad)  # every element is overwritten: no zeroing it first
        a.grad.assign(seed)  # a copy on the device (the seed is read, never written)
        return
    values = _values(seed)
    components = a.size * int(np.prod(elem_shape(a.dtype)))
    if np.size(values) != components:  # a seed seeds every element: never part of them
        raise TapeError(f"Tape.backward(grads=...): the seed of {a!r} has {np.size(values)} "
                        f"values, the array {components} (shape {a.shape})")
    lazy_zero.discard(a.grad)
    a.grad.assign(values)


def _gradient_of(a: Any, what: str) -> array:
    if not isinstance(a, array):
        raise TapeError(f"Tape.backward({what}=...): expected a gradloom array, got "
                            f"{type(a).__name__}")
    if a.grad is None:
        raise TapeError(f"Tape.backward({what}=...): {a!r} has no gradient; create it with "
                            "requires_grad=True")
    return a.grad


__all__ = ["FuncRecord", "Tape", "TapeMemory"]  # FuncRecord: re-exported from recording


def _nonzero(g: NDArray) -> bool:
    """Whether a gradient buffer holds anything (struct gradients compared byte-wise)."""
    if g.dtype.names:
        return bool(np.ascontiguousarray(g).view(np.uint8).any())
    return bool(g.any())
