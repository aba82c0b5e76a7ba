"""The launch ABI (gradloom/abi.py): the block's fields do not overlap, the host packs them where
the CPU and NVPTX entries read them, and on the GPU the error record is claimed atomically."""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess

import pytest
from cuda_env import have_libdevice

import gradloom as wp
from gradloom import abi
from gradloom.codegen.entry_cpu import cpu_module
from gradloom.codegen.entry_nvptx import nvptx_module


@wp.kernel
def horner(x: wp.array(dtype=wp.float64), n: int, y: wp.array(dtype=wp.float64)):
    """The adjoint keeps each trip's s on its stack; in debug mode x[i + 1] is bounds-checked."""
    i = wp.tid()
    s = x[i]
    for _k in range(n):
        s = s * x[i + 1] + wp.float64(1.0)
    y[i] = s


# --------------------------------------------------------------------------------------------
# the layout


def _spans() -> dict[str, tuple[int, int]]:
    """Every field of the header as [start, end) byte spans."""
    st, sk = abi.BLOCK_STATUS, abi.BLOCK_STACK
    return {
        "dims": (abi.BLOCK_DIMS, abi.BLOCK_DIMS + 8 * abi.MAX_DIMS),
        "code": (st + abi.STATUS_CODE, st + abi.STATUS_CODE + 4),
        "where": (st + abi.STATUS_WHERE, st + abi.STATUS_WHERE + 4),
        "index": (st + abi.STATUS_INDEX, st + abi.STATUS_INDEX + 8),
        "extent": (st + abi.STATUS_EXTENT, st + abi.STATUS_EXTENT + 8),
        "thread": (st + abi.STATUS_THREAD, st + abi.STATUS_THREAD + 8),
        "stack base": (sk + abi.STACK_BASE, sk + abi.STACK_BASE + 8),
        "stack capacity": (sk + abi.STACK_CAPACITY, sk + abi.STACK_CAPACITY + 8),
        "start": (abi.BLOCK_START, abi.BLOCK_START + 8),
        "end": (abi.BLOCK_END, abi.BLOCK_END + 8),
    }


def test_header_fields_do_not_overlap_and_fill_the_header():
    spans = sorted(_spans().values())
    for (_, hi), (lo, _) in itertools.pairwise(spans):
        assert hi <= lo
    assert spans[0][0] == 0 and spans[-1][1] == abi.BLOCK_ARGS == abi.HEAD.size
    assert sum(hi - lo for lo, hi in spans) == abi.HEAD.size  # no hidden padding either


def test_error_record_is_clear_of_the_words_threads_read():
    """A failing GPU thread writes only the error record; every thread reads the dims, the
    stack's words, start, end and the arguments, so none of those may lie inside it."""
    rec = range(abi.BLOCK_STATUS, abi.BLOCK_STATUS + abi.STATUS_BYTES)
    spans = _spans()
    record_fields = ("code", "where", "index", "extent", "thread")
    for name, (lo, hi) in spans.items():
        inside = lo in rec and hi - 1 in rec
        assert inside == (name in record_fields), name
        if not inside:
            assert hi <= rec.start or lo >= rec.stop, name
    assert rec.stop <= abi.BLOCK_ARGS


def test_head_packs_each_field_where_the_abi_names_it():
    import struct

    buf = bytearray(abi.HEAD.size)
    abi.HEAD.pack_into(buf, 0, *abi.header((3, 5), (0xABC0, 48), 7, 11))
    assert struct.unpack_from("<4q", buf, abi.BLOCK_DIMS) == (3, 5, 1, 1)
    assert bytes(buf[abi.STATUS_RECORD]) == bytes(abi.STATUS_BYTES)
    assert struct.unpack_from("<Q", buf, abi.BLOCK_STACK + abi.STACK_BASE) == (0xABC0,)
    assert struct.unpack_from("<q", buf, abi.BLOCK_STACK + abi.STACK_CAPACITY) == (48,)
    assert struct.unpack_from("<qq", buf, abi.BLOCK_START) == (7, 11)
    struct.pack_into("<i", buf, abi.BLOCK_STATUS + abi.STATUS_CODE, -5)
    struct.pack_into("<q", buf, abi.BLOCK_STATUS + abi.STATUS_THREAD, 12345)
    assert abi.error_word(buf) == -5 and abi.failed_thread(buf) == 12345


# --------------------------------------------------------------------------------------------
# claiming the error record


def _debug_ir(monkeypatch, adjoint: bool):
    monkeypatch.setattr(wp.config, "mode", "debug")
    return horner._kernel_ir(adjoint)[0]


def _blocks(text: str) -> dict[str, list[str]]:
    """The lines of each basic block of an LLVM function, by label."""
    out: dict[str, list[str]] = {}
    label = "entry"
    for line in text.splitlines():
        m = re.match(r"^([\w.]+):$", line)
        if m:
            label = m.group(1)
        else:
            out.setdefault(label, []).append(line.strip())
    return out


@pytest.mark.parametrize("adjoint", [False, True])
def test_nvptx_entry_claims_the_error_word_before_writing_the_record(monkeypatch, adjoint):
    text = nvptx_module(_debug_ir(monkeypatch, adjoint), "gl_test")
    blocks = _blocks(text)
    claims = [b for b, lines in blocks.items()
              if any(re.search(r"cmpxchg ptr %err, i32 0, i32 -?\d+", s) for s in lines)]
    # one claim per bounds check (x[i], x[i + 1], y[i]), and the adjoint's full stack
    assert len(claims) >= (4 if adjoint else 3)
    record_writes = [(b, s) for b, lines in blocks.items() for s in lines
                     if re.match(r"store \w+ .*, ptr %statusp\d+", s)]
    assert record_writes
    for b, _ in record_writes:
        assert b.startswith("claimed"), b  # only the thread whose swap succeeded writes
    # the code itself is never stored plainly: the swap wrote it
    assert not any(re.match(r"store i32 -?\d+, ptr %err", s) for lines in blocks.values()
                   for s in lines)


def test_cpu_entry_stores_the_error_record_plainly(monkeypatch):
    """Each CPU worker has its own block: a plain store, no atomic."""
    text = cpu_module(_debug_ir(monkeypatch, True), "gl_test", "x86_64-unknown-linux-gnu", "")
    assert "cmpxchg ptr %err" not in text
    assert re.search(r"store i32 -1, ptr %err", text)  # the full stack's code
    assert f"getelementptr i8, ptr %err, i64 {abi.STATUS_THREAD}" in text


@pytest.mark.skipif(shutil.which("ptxas") is None or not have_libdevice(),
                    reason="needs ptxas and libdevice")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptx_claims_the_error_word_with_atom_cas(monkeypatch, tmp_path, arch):
    monkeypatch.setattr(wp.config, "mode", "debug")
    for adjoint in (False, True):
        ptx = wp.codegen_ptx(horner, arch, adjoint=adjoint)
        assert re.search(r"atom(\.\w+)*\.cas\.b32", ptx), "no compare-and-swap in the PTX"
        path = tmp_path / f"k{int(adjoint)}.ptx"
        path.write_text(ptx)
        r = subprocess.run(["ptxas", f"-arch={arch}", str(path), "-o", str(tmp_path / "o")],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr


def test_release_ptx_has_no_error_record_writes_without_a_stack(monkeypatch):
    """Release-mode forward kernels check nothing: no claim, no record."""
    monkeypatch.setattr(wp.config, "mode", "release")
    text = nvptx_module(horner._kernel_ir(False)[0], "gl_test")
    assert "cmpxchg" not in text and "%statusp" not in text


def test_debug_error_in_a_stack_using_adjoint_on_the_cpu(monkeypatch):
    """The bounds error of an adjoint that uses its stack is reported from the record, and the
    next launch finds its stack words intact."""
    import numpy as np

    from gradloom.errors import KernelRuntimeError

    monkeypatch.setattr(wp.config, "mode", "debug")
    x = wp.array(np.full(4, 0.5), dtype=wp.float64, requires_grad=True)
    y = wp.zeros(4, dtype=wp.float64, requires_grad=True)
    y.grad.fill_(1.0)
    with pytest.raises(KernelRuntimeError, match=r"index 4 is out of bounds.*'x'.*thread 3"):
        wp.launch(horner, 4, inputs=[x, 3, y], adjoint=True)
    x.grad.zero_()
    wp.launch(horner, 3, inputs=[x, 3, y], adjoint=True)
    # s = ((x0 x1 + 1) x1 + 1) x1 + 1 with x0 = x1 = t: ds/dx0 = x1^3, ds/dx1 = 3 x0 x1^2 + 2 x1 + 1
    t = 0.5
    np.testing.assert_allclose(x.grad.numpy()[0], t**3 + 0.0)
    np.testing.assert_allclose(x.grad.numpy()[3], 3 * t**3 + 2 * t + 1)


# --------------------------------------------------------------------------------------------
# the packed block against what the entries read


@wp.struct
class Params:
    scale: wp.float64
    table: wp.array(dtype=wp.float32)
    flag: wp.int8


@wp.kernel
def every_kind(a: wp.float32, x: wp.array2d(dtype=wp.float32), n: wp.int16, v: wp.vec3,
               p: Params, m: wp.int64, out: wp.array2d(dtype=wp.float64)):
    """Reads a word of every kind of argument (and the shape and strides of x, p.table and
    out), so the entry loads each from the block."""
    i, j = wp.tid()
    t = wp.float64(p.table[j % p.table.shape[0]]) * p.scale + wp.float64(p.flag)
    out[i, j] = wp.float64(a * x[i, j] + v[2]) + wp.float64(n) + wp.float64(m) + t


def _host_words(params) -> dict[int, str]:
    """Block offset -> struct code of every leaf the host packer writes."""
    import struct

    from gradloom.runtime.launch.packing import Packer

    packer = Packer("k", params)
    assert packer.whole.size == packer.block_bytes == abi.BLOCK_ARGS + packer.size
    words, pos = {}, abi.BLOCK_ARGS
    for count, code in re.findall(r"(\d*)([a-zA-Z?])", packer.fmt[1:]):
        if code == "x":
            pos += int(count or 1)
            continue
        words[pos] = code
        pos += struct.calcsize("<" + code)
    return words


_LLVM_SIZE = {"i8": 1, "i16": 2, "half": 2, "i32": 4, "float": 4, "i64": 8, "double": 8,
              "ptr": 8}
_CODE_SIZE = {"b": 1, "B": 1, "?": 1, "h": 2, "H": 2, "e": 2, "i": 4, "I": 4, "f": 4, "q": 8,
              "Q": 8, "d": 8}


def _entry_reads(text: str) -> dict[int, str]:
    """Block offset -> LLVM type of every argument word an entry loads (via %args)."""
    geps = dict(re.findall(r"(%argp\d+) = getelementptr i8, ptr %args, i64 (\d+)", text))
    reads = {}
    for ty, p in re.findall(r"= load (\w+), ptr (%argp\d+)", text):
        reads[abi.BLOCK_ARGS + int(geps[p])] = ty
    return reads


@pytest.mark.parametrize("target", ["cpu", "nvptx"])
def test_entries_read_every_argument_word_where_the_packer_writes_it(target):
    params = list(every_kind.params)
    ir = every_kind._kernel_ir(False)[0]
    if target == "cpu":
        text = cpu_module(ir, "gl_test", "x86_64-unknown-linux-gnu", "")
    else:
        text = nvptx_module(ir, "gl_test")
    assert f"%args = getelementptr i8, ptr %block, i64 {abi.BLOCK_ARGS}" in text
    for at in (abi.BLOCK_DIMS, abi.BLOCK_START, abi.BLOCK_END, abi.BLOCK_STATUS):
        assert f"getelementptr i8, ptr %block, i64 {at}" in text
    host, reads = _host_words(params), _entry_reads(text)
    assert len(reads) >= 12  # a, x (data, shape, strides), n, v[2], p's words, m, out
    for at, ty in reads.items():
        assert at in host, f"the entry reads a word at {at} the packer never writes"
        assert _LLVM_SIZE[ty] == _CODE_SIZE[host[at]], (at, ty, host[at])
    # the array words sit at the abi's offsets: data, gradient, shape, strides
    offsets, _ = abi.arg_offsets([t for _, t in params])
    x_at = abi.BLOCK_ARGS + offsets[1]
    for k, (off, kind) in enumerate(abi.array_words(2)):
        assert host[x_at + off] == ("Q" if kind == "ptr" else "q"), k
    assert x_at + abi.ARRAY_DATA in reads and x_at + abi.array_strides(2) in reads


def _every_kind_args(device):
    import numpy as np

    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    table = rng.standard_normal(5).astype(np.float32)
    p = Params()
    p.scale, p.table, p.flag = 1.25, wp.array(table, device=device), -3
    out = wp.zeros((3, 4), dtype=wp.float64, device=device)
    args = [0.5, wp.array(x, device=device)[:, :], 7, wp.vec3(1.0, 2.0, -4.0), p, -(2**40), out]
    j = np.arange(4)
    want = ((np.float32(0.5) * x + np.float32(-4.0)).astype(np.float64) + 7.0 - 2.0**40
            + (table[j % 5].astype(np.float64) * 1.25 - 3.0))
    return args, out, want


def test_a_block_packed_by_hand_runs_on_the_cpu_entry():
    """abi.header + the packer's arguments, run through the compiled entry directly."""
    import ctypes

    import numpy as np

    from gradloom.runtime.launch.packing import Packer

    args, out, want = _every_kind_args("cpu")
    compiled = every_kind.compiled()
    packer = Packer("every_kind", compiled.params)
    buf = bytearray(packer.block_bytes)
    abi.HEAD.pack_into(buf, 0, *abi.header((3, 4), (0, 0), 0, 12))
    packer.pack(args, buf)
    compiled.entry(ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf)))
    assert abi.error_word(buf) == 0
    np.testing.assert_array_equal(out.numpy(), want)
    # a thread range [5, 9) runs only those threads (start and end where the abi says)
    out.zero_()
    abi.HEAD.pack_into(buf, 0, *abi.header((3, 4), (0, 0), 5, 9))
    compiled.entry(ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf)))
    ran = out.numpy().ravel() != 0
    assert ran.tolist() == [5 <= t < 9 for t in range(12)]


def test_the_cuda_launch_packs_the_block_the_cpu_launch_packs():
    """Through the fake driver (tests/fake_cuda.py), the CUDA launch path packs a device block
    that the kernel's entry reads to the same answer as a CPU launch."""
    import importlib.util

    import numpy as np

    if importlib.util.find_spec("cuda") is None or not have_libdevice():
        pytest.skip("the fake driver needs cuda-bindings and libdevice")
    from fake_cuda import FakeCuda

    from gradloom.runtime.cuda import driver as cuda_driver

    args, out, want = _every_kind_args("cpu")
    wp.launch(every_kind, (3, 4), inputs=args)
    np.testing.assert_array_equal(out.numpy(), want)
    fake = FakeCuda(kernels=[every_kind])
    with cuda_driver.using(fake):
        dargs, dout, _ = _every_kind_args("cuda")
        wp.launch(every_kind, (3, 4), inputs=dargs, device="cuda")
        np.testing.assert_array_equal(dout.numpy(), want)
        assert fake.launches[-1]["symbol"] == "gl_every_kind"
