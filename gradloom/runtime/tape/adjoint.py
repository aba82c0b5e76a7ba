"""A recorded launch run backwards: the arrays' contents it needs, working copies, the adjoint."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from ...abi import BLOCK_ARGS
from ...errors import CompileError, TapeError
from ..array import lazy_zero
from ..array.array import NDArray, array
from ..array.storage import copy_same_layout
from ..array.watch import Watch
from ..capturing import ACTIVE_CAPTURE, refuse_while_capturing
from ..device import CPU, Device
from ..handles import frozen, release, thaw
from ..launch.launch import adjoint_reads, arg_array, array_keys
from ..memops import STREAM_BYTES, copy_into

Key = tuple[int, str | None]


class LaunchRecord:
    """One launch on a tape, with watches on the array contents its adjoint will read.

    A Tape holds one per recorded launch (tens of thousands a step in a simulation), so a
    record is small: the kernel's `RecordPlan` (shared), its arguments, the arrays they hold
    and the watches; the per-array lists are worked out when asked for."""

    __slots__ = ("__dict__", "_named", "_plan", "after", "args", "before", "dims", "kernel")
    #: how the record keeps array contents (a CUDA launch's: runtime/cuda/tape.py)
    watch: type[Watch] = Watch
    #: where the adjoint runs (a CUDA launch's record says which device)
    device: Device = CPU

    def __init__(self, kernel: Any, dims: tuple[int, ...], args: Sequence[Any],
                 compiled: Any) -> None:
        # handles (a HashGrid's id) are frozen: the adjoint sees the grid this launch used
        self.kernel, self.dims, self.args = kernel, dims, frozen(args)
        self._plan = plan = _plan(kernel, compiled)
        self._named: list[tuple[array, str, bool, bool]] | None = None
        self.before: dict[Key, Watch] = {}
        self.after: Mapping[Key, Watch] = _NOTHING
        of, args = self.watch.of, self.args
        for key, _, kept in plan.items:
            if kept and (a := arg_array(args, key)) is not None:
                self.before[key] = of(a)

    @property
    def keys(self) -> list[Key]:
        return self._plan.keys

    @property
    def names(self) -> list[str]:
        return self._plan.names

    @property
    def flags(self) -> dict[Key, frozenset[str]]:
        return self._plan.flags

    @property
    def given(self) -> list[tuple[Key, frozenset[str], array]]:
        """(key, flags, array) of each array argument the launch was given."""
        args = self.args
        return [(key, flags, a) for key, flags, _ in self._plan.items
                if (a := arg_array(args, key)) is not None]

    def finish(self) -> None:
        """After the launch: atomic_min/max targets are needed as the launch left them."""
        if not self._plan.minmax:
            return
        after = {key: self.watch.of(a) for key, flags, a in self.given if "minmax" in flags}
        if after:
            self.after = after

    def touches(self) -> list[tuple[array, bool, bool]]:
        """(array, reads its contents, writes it) for each array the launch accesses."""
        return [(a, bool(flags & {"loads", "result_used"}), bool(flags & {"stores", "minmax"}))
                for _, flags, a in self.given]

    def named_touches(self) -> list[tuple[array, str, bool, bool]]:
        """(array, its parameter's name, reads, writes) for each array the launch accesses
        (worked out once: the launch's arguments are fixed)."""
        if self._named is not None:
            return self._named
        out = []
        for (i, field), flags, a in self.given:
            name = self.names[i] if i < len(self.names) else f"#{i}"
            out.append((a, name if field is None else f"{name}.{field}",
                        bool(flags & {"loads", "result_used"}),
                        bool(flags & {"stores", "minmax"})))
        self._named = out
        return out

    def thread_own(self) -> list[bool]:
        """Per array of `named_touches`: every access is at an element no other thread
        touches, and the kernel reads all it reads before it writes anything (so two names for
        one array read what one name would)."""
        return ["shared" not in flags and "reads_first" in flags for _, flags, _ in self.given]

    def check_aliases(self, compiled: Any) -> None:
        """Refuse two array arguments sharing memory where the kernel writes either: its
        adjoint (and the analysis behind it) takes them for separate arrays. Exact, and so
        allowed: the same view twice where every access through both is at the thread's own
        element and every read comes before every write (then it is an in-place update,
        `y[i] = f(x[i])` with y = x)."""
        arrays = [a for key, _, _ in self._plan.items
                  if (a := arg_array(self.args, key)) is not None]
        if len({id(a._mem) for a in arrays}) == len(arrays):
            return  # no two arrays share memory
        plan = compiled.threads
        # (a plan relying on a permutation, or limiting the launch's extent, holds only where
        # the launch checks it)
        own = plan.serial is None and not plan.scatter and not plan.conditions \
            and not plan.limits
        touched = [(a, name, writes, thread_own) for (a, name, _, writes), thread_own
                   in zip(self.named_touches(), self.thread_own(), strict=True)]
        for k, (a, name, writes, a_own) in enumerate(touched):
            for b, other, other_writes, b_own in touched[k + 1:]:
                same_view = (a.ptr, a.shape, a.strides) == (b.ptr, b.shape, b.strides)
                exact = same_view and own and a_own and b_own
                if a._mem is b._mem and (writes or other_writes) and not exact:
                    raise TapeError(
                        f"kernel '{self.kernel.key}': arguments '{name}' and '{other}' are the "
                        f"same array (or views of one), and the kernel writes "
                        f"'{name if writes else other}': its gradient would treat them as two "
                        f"arrays; pass a copy (wp.clone) as one of them")

    def check_thread_order(self) -> None:
        """Refuse a launch of more than one thread whose adjoint runs threads in launch order
        (it uses a value an atomic returns) where threads store floats into the same element:
        the last store wins, but launch order hands its gradient to the first thread."""
        if not self._plan.result_used or math.prod(self.dims) <= 1:
            return
        flags = [f for _, f, _ in self.given]
        for (_, name, _, _), f in zip(self.named_touches(), flags, strict=True):
            if "contested_store" in f:
                raise TapeError(
                    f"kernel '{self.kernel.key}': cannot differentiate this launch: the kernel "
                    f"uses a value an atomic operation returns, so its adjoint runs threads in "
                    f"launch order, and threads may store into the same element of '{name}', "
                    f"whose gradient belongs to the last store; store each thread's value at "
                    f"its own element, or split the kernel into two launches")

    def arrays(self) -> list[array]:
        """Every array the launch was given, struct fields (nested too) included."""
        return [a for key in self._plan.keys if (a := arg_array(self.args, key)) is not None]

    def backward(self) -> None:
        if ACTIVE_CAPTURE.get() is not None:
            refuse_while_capturing("Tape.backward()")
        given = self.given
        variant, fresh, seeds, seeded = self._gradient_plan(given)
        prepared = self.device.backend.prepared(self.kernel, variant, self.device)
        self.check_overlap(prepared.compiled, prepared.packer)
        own = fresh.keys() | seeds.keys() | seeded.keys()
        for (i, field), _, a in given:  # gradients left unzeroed or unseeded: done now
            if a.grad is not None and (field is not None or i not in own):
                lazy_zero.settle(a.grad)
        grads = {**{i: lazy_zero.memory(a.grad) for i, a in fresh.items()}, **seeds,
                 **{i: lazy_zero.memory(a.grad) for i, (a, _) in seeded.items()}}
        datas = {i: seed for i, (_, seed) in seeded.items()}  # where the variant reads them
        set_here = [*fresh.values(), *(a for a, _ in seeded.values())]
        try:
            args, working = self.adjoint_args(grads, datas)
            restart: Callable[[], None] | None = None
            if working and prepared.compiled.uses_stack:
                restart = self._restarter(args, working)
            releases = thaw(args)  # frozen handles kept compactly are made whole (hash grids)
            try:
                prepared.run(self.dims, args, restart=restart)
            finally:
                release(releases)
        except BaseException:
            for a in set_here:  # partly written: zeroed or seeded (nothing added after a failure)
                lazy_zero.settle(a.grad)
            raise
        for a in set_here:  # every element set by its thread, then added into
            lazy_zero.discard(a.grad)
        self._consume_replaced_minmax()

    def _gradient_plan(self, given: list[tuple[Key, frozenset[str], array]]
                       ) -> tuple[str, dict[int, array], dict[int, NDArray],
                                  dict[int, tuple[array, NDArray]]]:
        """The adjoint variant to run, and how it gets gradients a Tape left unset (on the CPU,
        for arrays no other argument shares memory with): {position: array} of those whose
        zeroing `Tape.zero()` deferred and that the variant zeroes, each thread its own element
        (passes/fresh_gradients.py: a 1-D launch over all of the array); {position: seed
        memory} of those waiting for a seed the adjoint only reads (`backward(grads=...)`),
        read where it is; {position: (array, seed memory)} of those waiting for a seed the
        adjoint adds into, which the variant copies in, each thread its own element."""
        if self.device is not CPU or lazy_zero.idle():  # nothing waits: the plain adjoint
            return "adjoint", {}, {}, {}
        memories = [id(a._mem) for _, _, a in given]
        alone = {i: a for (i, field), _, a in given if field is None
                 and a.grad is not None and memories.count(id(a._mem)) == 1}
        waiting = self._unshared_seeds(alone, given)
        reads = self.kernel.gradient_reads() if waiting else frozenset()
        seeds = {i: seed for i, seed in waiting.items() if i in reads}
        covers = {i for i, a in alone.items() if len(self.dims) == 1 and a.shape == self.dims}
        pending = frozenset(i for i in covers if lazy_zero.is_pending(alone[i].grad))
        to_seed = frozenset(i for i in covers & waiting.keys() if i not in seeds
                            and not self._kept((i, None)))
        if not pending and not to_seed:
            return "adjoint", {}, seeds, {}
        streamed = frozenset(i for i in pending | to_seed
                             if lazy_zero.storage_of(alone[i].grad).nbytes >= STREAM_BYTES)
        variant, zeroed, seeded = self.kernel.fresh_variant(pending, to_seed, streamed)
        return (variant, {i: alone[i] for i in zeroed}, seeds,
                {i: (alone[i], waiting[i]) for i in seeded})

    def _kept(self, key: Key) -> bool:
        """Whether the record keeps the array's contents for the adjoint."""
        return key in self.before or key in self.after

    def _unshared_seeds(self, alone: dict[int, array],
                        given: list[tuple[Key, frozenset[str], array]]) -> dict[int, NDArray]:
        """{position: seed memory} of the arrays in `alone` whose gradient waits for a seed no
        argument's data or gradient shares memory with."""
        waiting = {i: src.storage for i, a in alone.items()
                   if (src := lazy_zero.seed_of(a.grad)) is not None}
        if not waiting:
            return {}
        held = [m for _, _, a in given for g in (a, a.grad) if g is not None
                and (m := lazy_zero.storage_of(g)) is not None]
        return {i: seed for i, seed in waiting.items()
                if not any(np.may_share_memory(seed, m) for m in held)}

    def check_overlap(self, compiled: Any, packer: Any, exclusive: bool = False) -> None:
        """Refuse the launch where its threads read elements of an array that other threads
        write and the adjoint needs them not to: decided from this launch's arguments and
        grid (passes/overlap.py). `exclusive`: threads writing one element overlap too."""
        check = compiled.launch_check
        if check is None:
            return
        block = bytearray(packer.block_bytes)
        packer.pack(self.args, block)  # the arguments as the launch block holds them
        found = check.error(bytes(block[BLOCK_ARGS:]), self.dims, exclusive)
        if found is not None:
            raise CompileError(*found)

    def _consume_replaced_minmax(self) -> None:
        """Where a thread's value replaced an atomic_min/max target's earlier value, that earlier
        value lost: its gradient (read by the winning thread) is consumed."""
        for key, watch in self.after.items():
            a = arg_array(self.args, key)
            if a is not None and a.grad is not None:
                replaced = self.before[key].contents() != watch.contents()
                a.grad.numpy()[replaced] = 0

    def adjoint_args(self, grads: dict[int, NDArray] | None = None,
                     datas: dict[int, NDArray] | None = None
                     ) -> tuple[list[Any], list[tuple[NDArray, Watch]]]:
        """The launch's arguments, each array's data replaced by the contents the adjoint must
        see (a fresh working copy for arrays the kernel reads and writes); grads unchanged
        but for `grads` ({position: the gradient memory the adjoint uses}); `datas`: {position:
        memory passed as the data of an array whose contents the adjoint does not read}."""
        args = list(self.args)
        working: list[tuple[NDArray, Watch]] = []
        grads, datas = grads or {}, datas or {}
        for key, flags in self.flags.items():
            a = arg_array(self.args, key)
            if a is None:
                continue
            top = key[1] is None
            own = grads.get(key[0]) if top else None
            seen = self.adjoint_contents(key, flags, copy_same_layout)
            if seen is None:
                if own is None:
                    continue
                data = datas.get(key[0]) if top else None
                seen = (a.numpy() if data is None else data), False  # contents not read
            data, is_working = seen
            if is_working:
                working.append((data, self.before[key]))
            grad = own if own is not None else None if a.grad is None else a.grad.numpy()
            _replace(args, key, array._like(a, data, grad))
        return args, working

    def adjoint_contents(self, key: Key, flags: frozenset[str], copy: Callable[[Any], Any]
                         ) -> tuple[Any, bool] | None:
        """The contents of one array the adjoint must see, and whether they are a working copy
        (made by `copy` from the pre-launch contents; the adjoint replays writes into it), or
        None where the launch kept nothing of the array."""
        if "working" in flags and key in self.before:
            return copy(self.before[key].contents()), True
        if key in self.after:
            return self.after[key].contents(), False
        if key in self.before:
            return self.before[key].contents(), False
        return None

    def _restarter(self, args: list[Any], working: list[tuple[NDArray, Watch]]
                   ) -> Callable[[], None]:
        """Undo a partial adjoint run: restore the gradients and the working copies."""
        grads = [g for key in self.flags
                 if (a := arg_array(self.args, key)) is not None and (g := a.grad) is not None]
        saved = [g.numpy().copy() for g in grads]

        def restart() -> None:
            for g, s in zip(grads, saved, strict=True):
                copy_into(g.numpy(), s)
            for data, watch in working:
                copy_into(data, watch.contents())

        return restart


class RecordPlan:
    """What the records of one compiled kernel share: its array keys, parameter names,
    per-array access flags, the arrays its adjoint reads (None: all), and per key whether a
    record watches the array's contents before the launch."""

    __slots__ = ("flags", "items", "keys", "minmax", "names", "reads", "result_used")

    def __init__(self, keys: list[Key], names: list[str], flags: dict[Key, frozenset[str]],
                 reads: frozenset[Key] | None) -> None:
        self.keys, self.names, self.flags, self.reads = keys, names, flags, reads
        #: (key, flags, whether the contents are kept) per array key the kernel accesses
        self.items = tuple((key, f, bool(f & {"loads", "result_used", "minmax"}) and (
            reads is None or key in reads or "minmax" in f)) for key, f in flags.items())
        self.minmax = any("minmax" in f for f in flags.values())
        self.result_used = any("result_used" in f for f in flags.values())


def _plan(kernel: Any, compiled: Any) -> RecordPlan:
    """A kernel's record plan, worked out once per compiled entry (a Tape records the same
    kernel at every step). The flags are shared by its records: never changed."""
    cached = getattr(kernel, "__dict__", {}).get("_gl_record_plan")
    if cached is not None and cached[0] is compiled:
        return cached[1]  # type: ignore[no-any-return]
    keys = array_keys(compiled.params)
    access = compiled.access
    if access is None:  # not analysable: keep everything as read and written
        access = {k: frozenset({"loads", "stores", "working"}) for k in keys}
    # arrays whose contents the adjoint never uses need no snapshot (autodiff/contents.py)
    if getattr(kernel, "enable_backward", None) is False:
        reads: frozenset[Key] | None = frozenset()  # no adjoint: it reads nothing
    else:
        reads = adjoint_reads(kernel) if hasattr(kernel, "adjoint_reads") else None
    plan = RecordPlan(keys, [name for name, _ in compiled.params], dict(access), reads)
    kernel._gl_record_plan = (compiled, plan)
    return plan


#: a record's `after` when it keeps nothing after its launch (shared: never written)
_NOTHING: Mapping[Key, Watch] = MappingProxyType({})


def _replace(args: list[Any], key: Key, value: array) -> None:
    """Put value at key in args; the struct instances on a field path are copied, never
    changed (they are the user's)."""
    i, field = key
    if field is None:
        args[i] = value
    else:
        args[i] = _with_field(args[i], field.split("."), value)


def _with_field(holder: Any, path: list[str], value: array) -> Any:
    out = copy.copy(holder)
    name = path[0]
    inner = value if len(path) == 1 else _with_field(getattr(holder, name), path[1:], value)
    setattr(out, name, inner)
    return out
