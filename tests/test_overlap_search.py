"""The two searches behind a launch's overlap check (passes/overlap.py: a map over the address
span, and a sort for sparse spans) against a brute-force pairing of every read with every write,
on random accesses; and the limits that refuse a launch too large to check."""

import numpy as np
import pytest

from gradloom.errors import SourceLoc
from gradloom.passes import overlap
from gradloom.passes.address_eval import Part
from gradloom.passes.address_program import Access

LOC = SourceLoc("x.py", 1)


def _parts(rng, exclusive_safe: bool):
    """Random reads and writes of one array by a few threads (4-byte elements)."""
    parts = []
    for _ in range(int(rng.integers(1, 4))):
        reads, writes = bool(rng.integers(0, 2)), bool(rng.integers(0, 2)) or exclusive_safe
        n = int(rng.integers(1, 12))
        where = rng.integers(0, 10, n).astype(np.int64) * 4
        threads = rng.integers(0, 6, n).astype(np.int64)
        parts.append(Part(where, threads, Access(0, reads or not writes, writes, (), 0, 4, LOC)))
    return parts


def _brute(parts, exclusive):
    """Whether some thread reads an element another writes (or, exclusive, two write one)."""
    writers: dict[int, set[int]] = {}
    for p in parts:
        if p.access.writes:
            for w, t in zip(p.where, p.threads):
                writers.setdefault(int(w), set()).add(int(t))
    if exclusive and any(len(ts) > 1 for ts in writers.values()):
        return True
    return any(writers.get(int(w), set()) - {int(t)}
               for p in parts if p.access.reads for w, t in zip(p.where, p.threads))


def _copy(parts):
    return [Part(p.where.copy(), p.threads.copy(), p.access) for p in parts]


def _search(parts, exclusive, search):
    parts = _copy(parts)
    writes = [p for p in parts if p.access.writes]
    if not writes:
        return None
    reads = [p for p in parts if p.access.reads]
    span = overlap._scale(parts)
    return search(writes, reads, span, exclusive)


@pytest.mark.parametrize("exclusive", [False, True])
def test_both_searches_agree_with_brute_force(exclusive):
    rng = np.random.default_rng(4 + exclusive)
    for _ in range(400):
        parts = _parts(rng, False)
        want = _brute(parts, exclusive)
        for search in (overlap._dense, overlap._sorted):
            found = _search(parts, exclusive, search)
            assert (found is not None) == want, search.__name__
            if found is not None:  # the named threads really meet at that element
                is_read, part, j, other = found
                assert other != int(part.threads[j])
                assert is_read or exclusive  # only an exclusive check reports two writers


def test_a_launch_too_large_to_check_is_refused(monkeypatch):
    from gradloom.passes import address_eval

    monkeypatch.setattr(address_eval, "MAX_ADDRESSES", 10)
    access = Access(8, True, True, (), 0, 4, LOC)
    program = overlap.AddressProgram((access,), ())
    check = overlap.LaunchCheck(program, ((8, overlap.REPLAY),), ((8, "q"),), LOC)
    message, loc = check.error(b"\0" * 16, (4, 4))
    assert "'q'" in message and "more than 10 accesses" in message and loc is LOC
