"""Gradient checks of a recorded tape (Warp's `warp.autograd.gradcheck_tape`): every kernel
launch a `wp.Tape` recorded is checked on its own, autodiff against finite differences, by
the `gradcheck` that gradloom/autograd.py passes in (it re-exports `gradcheck_tape`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .errors import GradloomError
from .runtime.array.array import array
from .runtime.tape.adjoint import LaunchRecord

Mask = Sequence[tuple[int | str, int | str]]


def _names(kernels: Iterable[Any] | None) -> set[str] | None:
    """Kernel keys (and function names) from kernels or their names."""
    if kernels is None:
        return None
    out = set()
    for k in kernels:
        if isinstance(k, str):
            out.add(k)
        else:
            out.add(k.key)
    return out


def _listed(kernel: Any, names: set[str]) -> bool:
    fn = getattr(kernel, "func", None)
    return kernel.key in names or getattr(fn, "__name__", None) in names


def _split(record: LaunchRecord) -> int:
    """Where a launch's outputs begin: at its first array argument the kernel writes (Warp's
    `gradcheck` takes the inputs before the outputs); no written array: all are inputs."""
    written = {key[0] for key, flags in record.flags.items() if flags & {"stores", "minmax"}}
    for i, value in enumerate(record.args):
        if i in written and isinstance(value, array):
            return i
    return len(record.args)


def launches(tape: Any, reverse: bool = False, skip_to: int = 0) -> list[LaunchRecord]:
    """The kernel launches a tape recorded (not its recorded functions), in the order asked,
    from launch index `skip_to` on."""
    records = [r for r in getattr(tape, "records", []) if isinstance(r, LaunchRecord)]
    if reverse:
        records.reverse()
    return records[max(int(skip_to), 0):]


def check_tape(tape: Any, gradcheck: Callable[..., bool], *, eps: float, atol: float,
               rtol: float, raise_exception: bool,
               input_output_masks: Mapping[str, Mask] | None,
               blacklist_kernels: Iterable[Any] | None,
               whitelist_kernels: Iterable[Any] | None, max_inputs_per_var: int,
               max_outputs_per_var: int, plot_relative_error: bool,
               plot_absolute_error: bool, show_summary: bool, reverse_launches: bool,
               skip_to_launch_index: int, error: type[Exception]) -> bool:
    """Run `gradcheck` on each recorded launch (kernels compiled without an adjoint, and those
    the lists leave out, are skipped). True when every launch checked passes; with
    `raise_exception`, a failure raises `error` naming the launches that failed."""
    allow, deny = _names(whitelist_kernels), _names(blacklist_kernels)
    masks = dict(input_output_masks or {})
    failed = []
    for index, record in enumerate(launches(tape, reverse_launches, skip_to_launch_index)):
        kernel = record.kernel
        if getattr(kernel, "enable_backward", None) is False:
            continue
        if (allow is not None and not _listed(kernel, allow)) or \
                (deny is not None and _listed(kernel, deny)):
            continue
        split = _split(record)
        ok = gradcheck(kernel, record.dims, list(record.args[:split]),
                       list(record.args[split:]), eps=eps, atol=atol, rtol=rtol,
                       raise_exception=False, input_output_mask=masks.get(kernel.key),
                       max_inputs_per_var=max_inputs_per_var,
                       max_outputs_per_var=max_outputs_per_var,
                       plot_relative_error=plot_relative_error,
                       plot_absolute_error=plot_absolute_error, show_summary=show_summary)
        if not ok:
            failed.append(f"launch {index + skip_to_launch_index} of kernel '{kernel.key}'")
    if failed and raise_exception:
        raise error("gradcheck_tape failed for " + ", ".join(failed))
    if failed and show_summary:
        print("gradcheck_tape failed for " + ", ".join(failed))
    return not failed


def no_tape(tape: Any) -> None:
    if not hasattr(tape, "records"):
        raise GradloomError(f"gradcheck_tape() expects a wp.Tape, got {type(tape).__name__}")
