"""Private buffers summed page by page (codegen/native_sums.py): a split launch's sums of large
private buffers read only the pages its threads wrote, and give what a serial launch gives."""

from __future__ import annotations

import mmap
import struct

import numpy as np
import pytest
from test_parallel import threads  # noqa: F401 (a fixture)

import gradloom as wp
from gradloom.abi import PAGED_SUM_BYTES
from gradloom.runtime import page_map
from gradloom.runtime.cpu import chunking

N = 1 << 18  # threads, and elements of the array they add into (1 MiB of float32)
PAGE = mmap.PAGESIZE


@wp.kernel
def few_slots(v: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    # 16 slots at the start and one far slot per 65536 threads: a few pages of a wide array
    wp.atomic_add(out, i % 16, v[i])
    if i % 65536 == 7:
        wp.atomic_add(out, (i * 7919) % 262144, v[i])


@wp.kernel
def runs(v: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    if i % 8 == 0:  # every eighth thread: each chunk writes a run of several pages
        wp.atomic_add(out, 20000 + i // 8, v[i])


@wp.kernel
def few_slots_typed(v: wp.array(dtype=wp.float64), out64: wp.array(dtype=wp.float64),
                    iv: wp.array(dtype=wp.int32), out32: wp.array(dtype=wp.int32),
                    lv: wp.array(dtype=wp.int64), outl: wp.array(dtype=wp.int64)):
    i = wp.tid()
    k = (i * 7919) % 262144
    if i % 4096 == 3:
        wp.atomic_add(out64, k, v[i])
        wp.atomic_add(out32, k, iv[i])
        wp.atomic_add(outl, k, lv[i])


def _expected(values: np.ndarray) -> np.ndarray:
    """What few_slots adds, in float64 (the values are small integers: every order is exact)."""
    out = np.zeros(N)
    idx = np.arange(N)
    np.add.at(out, idx % 16, values)
    far = idx % 65536 == 7
    np.add.at(out, (idx[far] * 7919) % N, values[far])
    return out


def _in_use(buf: np.ndarray) -> int:
    """How many of the buffer's pages the page table holds (present or swapped out)."""
    first = buf.ctypes.data // PAGE
    last = (buf.ctypes.data + buf.nbytes - 1) // PAGE
    with open("/proc/self/pagemap", "rb") as f:
        f.seek(first * 8)
        entries = struct.unpack(f"{last - first + 1}Q", f.read((last - first + 1) * 8))
    return sum(1 for e in entries if e >> 62)


def _private_buffers() -> list[np.ndarray]:
    states = few_slots._gl_prepared.chunkings
    return [b for state in states for _, bufs, _ in state.privates for b in bufs]


@pytest.mark.parametrize("pagemap", ["read", "none", "unreadable"])
def test_split_sums_are_the_serial_sums(threads, monkeypatch, tmp_path, request,  # noqa: F811
                                        pagemap) -> None:
    if pagemap == "none":
        monkeypatch.setattr(page_map, "descriptor", lambda: -1)  # every buffer summed whole
    elif pagemap == "unreadable":  # pread gives fewer bytes than asked: each group summed whole
        (tmp_path / "empty").write_bytes(b"")
        f = open(tmp_path / "empty", "rb")  # noqa: SIM115 (closed when the test ends)
        monkeypatch.setattr(page_map, "descriptor", f.fileno)
        request.addfinalizer(f.close)
    values = np.random.default_rng(0).integers(-8, 9, N).astype(np.float32)
    v = wp.array(values)
    out = wp.zeros(N, dtype=float)
    calls = threads(2)
    for k in range(1, 4):  # the buffers are zeroed by each sum, for the next launch
        wp.launch(few_slots, N, inputs=[v, out])
        np.testing.assert_array_equal(out.numpy(), k * _expected(values))
    dense = wp.zeros(N, dtype=float)
    wp.launch(runs, N, inputs=[v, dense])
    want = np.zeros(N)
    want[20000:20000 + N // 8] = values[::8]
    np.testing.assert_array_equal(dense.numpy(), want)
    assert calls == [2, 2, 2, 2]


def test_the_sum_reads_only_the_pages_threads_wrote(threads) -> None:  # noqa: F811
    v = wp.array(np.ones(N, np.float32))
    out = wp.zeros(N, dtype=float)
    threads(2)
    wp.launch(few_slots, N, inputs=[v, out])
    few_slots._gl_prepared.chunkings.clear()  # fresh buffers (another test may have read them)
    wp.launch(few_slots, N, inputs=[v, out])
    wp.launch(few_slots, N, inputs=[v, out])
    bufs = _private_buffers()
    assert bufs and all(b.nbytes >= PAGED_SUM_BYTES for b in bufs)
    pages = bufs[0].nbytes // PAGE
    # the 16 slots' page and at most one page per far slot: not the 256 pages a whole sum reads
    assert all(_in_use(b) <= 6 for b in bufs), [(_in_use(b), pages) for b in bufs]


def test_wide_and_integer_sums(threads) -> None:  # noqa: F811
    rng = np.random.default_rng(1)
    v64 = rng.integers(-8, 9, N).astype(np.float64)
    i32 = rng.integers(-8, 9, N).astype(np.int32)
    i64 = rng.integers(-8, 9, N).astype(np.int64)
    outs = [wp.zeros(N, dtype=t) for t in (wp.float64, wp.int32, wp.int64)]
    threads(2)
    wp.launch(few_slots_typed, N, inputs=[wp.array(v64), outs[0], wp.array(i32), outs[1],
                                          wp.array(i64), outs[2]])
    idx = np.arange(N)
    hit = idx % 4096 == 3
    for values, out in zip((v64, i32, i64), outs, strict=True):
        want = np.zeros(N, values.dtype)
        np.add.at(want, (idx[hit] * 7919) % N, values[hit])
        np.testing.assert_array_equal(out.numpy(), want)


def test_small_and_strided_buffers_are_ordinary_memory() -> None:
    small = chunking.private_zeros(np.zeros(PAGED_SUM_BYTES // 8, np.float32))
    strided = chunking.private_zeros(np.zeros((N, 2), np.float32)[:, 0])
    large = chunking.private_zeros(np.zeros(N, np.float32))
    assert not isinstance(small.base, mmap.mmap) and strided.strides == (8,)
    assert _in_use(large) == 0  # fresh: nothing in the page table until written (or read)
    assert large.flags.writeable and not large.any() and large.ctypes.data % PAGE == 0


def test_a_page_map_that_cannot_tell_written_pages_is_not_used(monkeypatch) -> None:
    """A page map that says nothing is in use (an emulated /proc) would make sums skip pages
    threads wrote: it is checked on a probe (one page written, one not) before use."""
    assert page_map.descriptor() >= 0  # this machine's page map passes the check
    for answer in [(False, False), (True, True), ()]:
        monkeypatch.setattr(page_map, "pages_in_use", lambda fd, memory, a=answer: a)
        page_map._open.cache_clear()
        assert page_map.descriptor() == -1
    monkeypatch.undo()
    page_map._open.cache_clear()
    assert page_map.descriptor() >= 0


@wp.kernel
def everywhere(v: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, (i * 7) % 262144, v[i])  # every page of every chunk's buffer


def test_buffers_found_all_written_are_summed_whole_for_a_while(threads) -> None:  # noqa: F811
    """Looking pages up costs where threads write them all (1.5-3% of a 512² cloth step): after
    such a launch the next ones sum whole, with the same result; sparse launches keep looking."""
    values = np.random.default_rng(2).integers(-8, 9, N).astype(np.float32)
    v = wp.array(values)
    threads(2)
    dense, sparse = wp.zeros(N, dtype=float), wp.zeros(N, dtype=float)
    want = np.zeros(N)
    np.add.at(want, (np.arange(N) * 7) % N, values)
    for k in range(1, 4):
        wp.launch(everywhere, N, inputs=[v, dense])
        wp.launch(few_slots, N, inputs=[v, sparse])
        np.testing.assert_array_equal(dense.numpy(), k * want)
    looked_dense = [s.whole for s in everywhere._gl_prepared.chunkings]
    looked_sparse = [s.whole for s in few_slots._gl_prepared.chunkings]
    assert looked_dense and all(w > 0 for w in looked_dense)
    assert looked_sparse and all(w == 0 for w in looked_sparse)
