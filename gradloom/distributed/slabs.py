"""Slab decompositions: which layers of a global grid each rank owns along one axis, local
arrays with ghost layers, scatter from and gather to global numpy arrays."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from gradloom.runtime.array.array import array

from .halo import halo_exchange
from .tensors import DistributedError, as_tensor, check_array
from .transport import Transport


def split(total: int, parts: int) -> list[tuple[int, int]]:
    """(start, count) of each part when `total` layers are cut into `parts` nearly equal runs
    (the first `total % parts` runs one layer longer)."""
    base, extra = divmod(total, parts)
    out, start = [], 0
    for k in range(parts):
        count = base + (1 if k < extra else 0)
        out.append((start, count))
        start += count
    return out


class SlabDecomposition:
    """A global grid of `global_shape` cut along `axis` into one slab per rank of `comm`; each
    local array holds the rank's own layers between `width` ghost layers on either side."""

    def __init__(self, comm: Transport, global_shape: tuple[int, ...], axis: int = 0,
                 width: int = 1, periodic: bool = False) -> None:
        shape = tuple(int(n) for n in global_shape)
        if not 0 <= axis < len(shape):
            raise DistributedError(f"SlabDecomposition(axis={axis!r}): expected an axis of the "
                                   f"global shape {shape}")
        self.comm, self.global_shape, self.axis = comm, shape, axis
        self.width, self.periodic = width, periodic
        self.extents = split(shape[axis], comm.size)
        self.start, self.count = self.extents[comm.rank]
        if min(c for _, c in self.extents) < width:
            raise DistributedError(
                f"SlabDecomposition: {shape[axis]} layers along axis {axis} over {comm.size} "
                f"ranks leaves a rank fewer than width={width} layers of its own")

    @property
    def local_shape(self) -> tuple[int, ...]:
        shape = list(self.global_shape)
        shape[self.axis] = self.count + 2 * self.width
        return tuple(shape)

    def own(self, values: Any) -> Any:
        """The rank's own layers of a local array-like (numpy or tensor view; no ghosts)."""
        index = [slice(None)] * len(self.global_shape)
        index[self.axis] = slice(self.width, self.width + self.count)
        return values[tuple(index)]

    def scatter(self, global_values: Any, dtype: Any = None,
                requires_grad: bool = False) -> array:
        """A local array (ghosts zero) holding this rank's part of `global_values`, a numpy
        array of the global shape (vector dtypes: components as trailing dims) every rank
        passes."""
        values = np.asarray(global_values)
        if values.shape[:len(self.global_shape)] != self.global_shape:
            raise DistributedError(f"SlabDecomposition.scatter: global_values has shape "
                                   f"{values.shape}, expected {self.global_shape}")
        local = np.zeros(self.local_shape + values.shape[len(self.global_shape):], values.dtype)
        index = [slice(None)] * len(self.global_shape)
        index[self.axis] = slice(self.start, self.start + self.count)
        self.own(local)[...] = values[tuple(index)]
        return array(local, dtype=dtype, requires_grad=requires_grad)

    def gather(self, a: Any) -> np.ndarray:
        """Every rank's own layers of its local array `a`, joined into a global numpy array on
        every rank (a copy; not recorded on tapes)."""
        a = check_array(a, "SlabDecomposition.gather(a)")
        if tuple(a.shape) != self.local_shape:
            raise DistributedError(f"SlabDecomposition.gather(a): a has shape {a.shape}, "
                                   f"this rank's local shape is {self.local_shape}")
        mine = self.own(as_tensor(a))
        if self.comm.size == 1:
            return mine.numpy().copy()
        torch = importlib.import_module("torch")
        longest = max(c for _, c in self.extents)
        padded = mine.new_zeros((*mine.shape[:self.axis], longest, *mine.shape[self.axis + 1:]))
        padded.narrow(self.axis, 0, self.count).copy_(mine)
        rows = self.comm.all_gather_array(padded, str(a.dtype))
        parts = [r.narrow(self.axis, 0, c) for r, (_, c) in zip(rows, self.extents)]
        return torch.cat(parts, dim=self.axis).numpy()

    def halo_exchange(self, a: Any) -> None:
        """Fill `a`'s ghost layers from the neighbouring ranks (recorded: see halo.py)."""
        halo_exchange(self.comm, a, axis=self.axis, width=self.width, periodic=self.periodic)


__all__ = ["SlabDecomposition", "split"]
