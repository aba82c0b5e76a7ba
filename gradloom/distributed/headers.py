"""What ranks tell each other before a transfer (operation, sequence number, shape, dtype), and
the error messages when they disagree."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

MAGIC = 0x676C6D  # "glm": a header, not stray data
MAX_DIMS = 8
LENGTH = 4 + MAX_DIMS + 4

#: operation codes: forward steps odd, their adjoints the next even number
KINDS = {"halo_exchange": 1, "halo_exchange adjoint": 2, "all_reduce": 3,
         "all_reduce adjoint": 4, "broadcast": 5, "broadcast adjoint": 6, "gather": 7}
_NAMES = {v: k for k, v in KINDS.items()}


def dtype_code(name: str) -> int:
    """A stable number for a dtype's name (the same in every process)."""
    return zlib.crc32(name.encode())


@dataclass(frozen=True, eq=False)
class Header:
    """One rank's view of a communication step."""

    kind: str
    seq: int
    shape: tuple[int, ...]
    dtype: str
    axis: int = 0
    width: int = 0
    flags: int = 0  # halo: periodic; broadcast: the source rank; all_reduce: the adjoint mode

    @property
    def name(self) -> str:
        return f"{self.kind} (communication step #{self.seq})"

    def encode(self) -> list[int]:
        shape = list(self.shape) + [0] * (MAX_DIMS - len(self.shape))
        return [MAGIC, KINDS[self.kind], self.seq, len(self.shape), *shape,
                dtype_code(self.dtype), self.axis, self.width, self.flags]

    @staticmethod
    def decode(words: list[int]) -> Header:
        if len(words) != LENGTH or words[0] != MAGIC or words[1] not in _NAMES:
            return Header("?", -1, (), "?")
        ndim = words[3]
        return Header(_NAMES[words[1]], words[2], tuple(words[4:4 + ndim]),
                      f"#{words[4 + MAX_DIMS]}", words[5 + MAX_DIMS], words[6 + MAX_DIMS],
                      words[7 + MAX_DIMS])

    def same_dtype(self, other: Header) -> bool:
        code = other.dtype[1:] if other.dtype.startswith("#") else str(dtype_code(other.dtype))
        return code == str(dtype_code(self.dtype))


def mismatch(mine: Header, other: Header, split_axis: int | None = None) -> str:
    """What differs between two ranks' headers: "" (nothing), "order", "shape", "dtype" or
    "options". `split_axis`: a halo's split axis, along which the extents may differ."""
    if other.kind == "?":
        return "garbage"
    if (mine.kind, mine.seq) != (other.kind, other.seq):
        return "order"
    if len(mine.shape) != len(other.shape) or any(
            m != o for k, (m, o) in enumerate(zip(mine.shape, other.shape)) if k != split_axis):
        return "shape"
    if not mine.same_dtype(other):
        return "dtype"
    if (mine.axis, mine.width, mine.flags) != (other.axis, other.width, other.flags):
        return "options"
    return ""


def describe_mismatch(mine: Header, other: Header, rank: int, peer: int, what: str) -> str:
    """The error message for two ranks that disagree (`what`: from `mismatch`)."""
    head = f"gradloom.distributed: rank {rank} and rank {peer} disagree about {mine.name}: "
    if what == "garbage":
        return head + f"rank {peer} sent something that is not a gradloom header"
    if what == "order":
        return head + (f"rank {peer} is at {other.name}. Every rank must run the same "
                       "communication steps in the same order (forward, and backward through "
                       "the Tape)")
    if what == "options":
        return head + (f"this rank has axis={mine.axis}, width={mine.width}, "
                       f"flag {mine.flags}; rank {peer} axis={other.axis}, width={other.width}, "
                       f"flag {other.flags}")
    if what == "dtype":
        return head + (f"this rank's array has dtype {mine.dtype}, rank {peer}'s array has "
                       "another dtype")
    along = (f" (only the extent along the split axis {mine.axis} may differ)"
             if mine.kind.startswith("halo") else "")
    return head + (f"this rank's array has shape {mine.shape}, rank {peer}'s has shape "
                   f"{other.shape}{along}")


__all__ = ["KINDS", "LENGTH", "Header", "describe_mismatch", "dtype_code", "mismatch"]
