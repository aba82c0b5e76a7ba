"""The CUDA runtime: driver, device arrays, streams and events, launches and adjoints.

Tests taking the `env` fixture run twice: on a real GPU ("gpu", skipped without one) and against
tests/fake_cuda.py ("fake"), a CPU stand-in for cuda.bindings.driver that checks every call's
arguments against the real bindings and runs each launch block through the kernel's CPU entry
(the PTX is compiled for real, so the fake runs need libdevice). The rest need no GPU at all:
the launch block layout against what the NVPTX entry reads, the grid, the errors without a GPU.
"""

from __future__ import annotations

import gc
import struct
import subprocess
import sys

import numpy as np
import pytest
from cuda_env import HAS_BINDINGS, HAS_GPU, device_env, have_libdevice

import gradloom as wp
from gradloom.abi import (
    BLOCK_ARGS,
    BLOCK_DIMS,
    BLOCK_END,
    BLOCK_STACK,
    BLOCK_START,
    BLOCK_STATUS,
    HEAD,
    STACK_BASE,
    STACK_CAPACITY,
)
from gradloom.errors import GradloomError, KernelRuntimeError, LaunchError, TapeError
from gradloom.runtime.cuda import driver as cuda_driver
from gradloom.runtime.cuda.launch import FIRST_STACK, MAX_GRID, grid_for, ptx_arch

# --------------------------------------------------------------------------------------------
# kernels


@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def grid2d(x: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    out[i, j] = x[i, j] * float(10 * i + j)


@wp.kernel
def sin_times(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.sin(x[i]) * x[i]


@wp.kernel
def horner(x: wp.array(dtype=wp.float64), n: int, y: wp.array(dtype=wp.float64)):
    """s = (((x + 1) x + 1) x ...) over n trips: the adjoint keeps each trip's s on its stack."""
    i = wp.tid()
    s = x[i]
    for _k in range(n):
        s = s * x[i] + wp.float64(1.0)
    y[i] = s


@wp.kernel
def shifted_read(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i + 1]


@wp.kernel
def shift_down(x: wp.array(dtype=float)):
    """Thread i overwrites x[i] after thread i - 1 read it: the adjoint needs thread order."""
    i = wp.tid()
    x[i] = x[i + 1] * 2.0


@wp.struct
class Scaled:
    a: wp.array(dtype=float)
    s: float


@wp.kernel
def use_struct(p: Scaled, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = p.a[i] * p.s


KERNELS = [saxpy, grid2d, sin_times, horner, shifted_read, use_struct, shift_down]


@pytest.fixture(params=["fake", "gpu"])
def env(request):
    """Run the test on the GPU, or on the fake driver (yielded; None on the GPU)."""
    yield from device_env(request.param, KERNELS)


def farr(values, dtype=np.float32):
    return np.asarray(values, dtype=dtype)


# --------------------------------------------------------------------------------------------
# without a GPU


@pytest.mark.skipif(HAS_GPU, reason="a CUDA device is available")
def test_without_a_gpu_cuda_is_unavailable_with_a_reason():
    assert not wp.is_cuda_available()
    if "cuda-bindings" not in (cuda_driver.unavailable_reason() or ""):
        assert wp.get_cuda_driver_version() is None  # as warp-lang answers without a driver
    assert wp.get_cuda_device_count() == 0 and wp.get_cuda_devices() == []
    reason = cuda_driver.unavailable_reason()
    assert reason and ("driver" in reason or "cuda-bindings" in reason)
    assert wp.get_devices() == ["cpu"] and wp.get_preferred_device() == "cpu"
    wp.synchronize()  # nothing to wait for


@pytest.mark.skipif(HAS_GPU, reason="a CUDA device is available")
@pytest.mark.parametrize("ident", ["cuda", "cuda:0", "cuda:2"])
def test_without_a_gpu_cuda_devices_are_clear_errors(ident):
    for make in (lambda: wp.zeros(3, device=ident), lambda: wp.get_device(ident),
                 lambda: wp.array([1.0], device=ident), lambda: wp.Stream(ident),
                 lambda: wp.zeros(2).to(ident),
                 lambda: wp.launch(saxpy, 2, inputs=[1.0, wp.zeros(2), wp.zeros(2)],
                                   device=ident)):
        with pytest.raises(GradloomError, match=f"'{ident}'.*no CUDA device"):
            make()


def test_cpu_launch_spelled_differently():
    x, y = wp.array(farr([1, 2])), wp.zeros(2)
    wp.launch(saxpy, 2, inputs=[3.0, x, y], device=" CPU")
    np.testing.assert_array_equal(y.numpy(), [3, 6])


def test_bad_cuda_identifiers():
    with pytest.raises(GradloomError, match="cuda:x"):
        wp.get_device("cuda:x")
    with pytest.raises(GradloomError, match="tpu"):
        wp.get_device("tpu")


def test_launch_block_header_offsets():
    """The host packs the header where types.BLOCK_* (and so both entries) say it is."""
    assert HEAD.size == BLOCK_ARGS
    buf = bytearray(HEAD.size)
    HEAD.pack_into(buf, 0, 5, 6, 7, 8, -3, 40, 1, 2, 9, 0xABC0, 48, 11, 22)
    assert struct.unpack_from("<4q", buf, BLOCK_DIMS) == (5, 6, 7, 8)
    assert struct.unpack_from("<iiqqq", buf, BLOCK_STATUS) == (-3, 40, 1, 2, 9)
    # the stack base and its capacity (bytes per thread) lie outside the error record
    assert struct.unpack_from("<Qq", buf, BLOCK_STACK) == (0xABC0, 48)
    assert struct.unpack_from("<q", buf, BLOCK_START) == (11,)
    assert struct.unpack_from("<q", buf, BLOCK_END) == (22,)


def test_nvptx_entry_reads_the_block_where_the_host_writes_it():
    from gradloom.codegen.entry_nvptx import nvptx_module

    ir = horner._kernel_ir(True)[0]  # the adjoint: it uses the stack words too
    text = nvptx_module(ir, "gl_test")
    for at in (BLOCK_DIMS, BLOCK_STATUS, BLOCK_ARGS, BLOCK_START, BLOCK_END,
               BLOCK_STACK + STACK_BASE, BLOCK_STACK + STACK_CAPACITY):
        assert f"getelementptr i8, ptr %block, i64 {at}" in text
    # slot k of grid thread `lane` is at base[k * nthreads + lane], nthreads = grid size
    assert "%nthreads = mul i64 %nctaid.x, %ntid.x" in text


def test_device_packer_packs_like_the_cpu_packer():
    """Arguments go to the offsets types.arg_offsets gives, device pointers included."""
    from gradloom.runtime.cuda.launch import DevicePacker
    from gradloom.runtime.launch.packing import Packer
    from gradloom.types import arg_offsets

    params = list(saxpy.params)
    cpu = Packer("saxpy", params)
    dev = wp.get_device("cpu")  # the packer's checks only compare devices
    gpu = DevicePacker("saxpy", params, dev)
    assert gpu.fmt == cpu.fmt and gpu.size == cpu.size
    x, y = wp.array(farr([1, 2, 3])), wp.zeros(3, requires_grad=True)
    buf = bytearray(BLOCK_ARGS + gpu.size)
    struct.pack_into(gpu.fmt, buf, BLOCK_ARGS, *gpu.values([2.5, x, y]))
    offsets, _ = arg_offsets([t for _, t in params])
    assert struct.unpack_from("<f", buf, BLOCK_ARGS + offsets[0]) == (2.5,)
    assert struct.unpack_from("<QQqq", buf, BLOCK_ARGS + offsets[1]) == (x.ptr, 0, 3, 4)
    assert struct.unpack_from("<QQqq", buf, BLOCK_ARGS + offsets[2]) == (y.ptr, y.grad.ptr,
                                                                         3, 4)
    with pytest.raises(LaunchError, match="argument 'x'.*expected"):
        gpu.values([2.5, np.zeros(3, np.float32), y])


def test_grid_size():
    assert grid_for(10, 256) == 1
    assert grid_for(1_000_000, 256) == 3907
    assert grid_for(1_000_000, 256, max_blocks=16) == 16
    assert grid_for(2**62, 1024) == MAX_GRID
    # stack launches: no more threads than the device holds at once, and within the budget
    assert grid_for(10**6, 128, resident=4096, stack_per_thread=256, stack_budget=1 << 30) \
        == 32
    assert grid_for(10**6, 128, resident=4096, stack_per_thread=1 << 20,
                    stack_budget=1 << 30) == 8
    assert grid_for(10**6, 128, resident=4096, stack_per_thread=1 << 24,
                    stack_budget=1 << 30) == 0  # not even one block fits


def test_ptx_target_for_each_device():
    assert ptx_arch(80) == "sm_80" and ptx_arch(89) == "sm_89" and ptx_arch(90) == "sm_90"
    assert ptx_arch(100) == "sm_90" and ptx_arch(120) == "sm_90"  # the driver JITs sm_90 PTX


@pytest.mark.skipif(not have_libdevice(), reason="needs libdevice")
def test_ptx_is_cached_on_disk_per_architecture():
    from gradloom.cuda_build import entry_key
    from gradloom.runtime import cache

    entry = horner.cuda_entry("sm_80", "adjoint")
    assert ".target sm_80" in entry["ptx"] and entry["symbol"] == "gl_horner_adjoint"
    assert entry["uses_stack"] and entry["launch_ndim"] == 1 and not entry["order_dependent"]
    keys = {entry_key(horner, arch, v) for arch in ("sm_80", "sm_90")
            for v in ("forward", "adjoint")}
    assert len(keys) == 4  # architecture and variant both part of the key
    if wp.config.cache_enabled:
        stored = cache.load(entry_key(horner, "sm_80", "adjoint"))
        assert stored is not None and stored["ptx"] == entry["ptx"]


def test_fake_driver_rejects_malformed_calls():
    """The fake is only a safety net if it catches calls the real bindings would refuse."""
    if not HAS_BINDINGS:
        pytest.skip("needs cuda-bindings")
    from fake_cuda import FakeCuda

    fake = FakeCuda()
    if not fake.check_args:
        pytest.skip("a driver is installed: the fake cannot call the real bindings safely")
    with pytest.raises(AssertionError, match="malformed"):
        fake.cuMemcpyHtoDAsync(0x1000, "not an address", 8, 0)
    with pytest.raises(AssertionError, match="malformed"):
        fake.cuMemPoolSetAttribute(0, 0, 5)


# --------------------------------------------------------------------------------------------
# arrays


DTYPES = [(wp.float32, np.float32, ()), (wp.float64, np.float64, ()), (wp.int8, np.int8, ()),
          (wp.uint16, np.uint16, ()), (wp.float16, np.float16, ()), (wp.int64, np.int64, ()),
          (wp.vec3, np.float32, (3,)), (wp.mat22d, np.float64, (2, 2))]


@pytest.mark.parametrize(("dtype", "npdt", "es"), DTYPES)
def test_arrays_round_trip(env, dtype, npdt, es):
    rng = np.random.default_rng(1)
    data = (rng.standard_normal((5, 3, *es)) * 50).astype(npdt)
    a = wp.array(data, dtype=dtype, device="cuda")
    assert a.device == "cuda:0" and a.device.is_cuda and a.shape == (5, 3)
    np.testing.assert_array_equal(a.numpy(), data)
    np.testing.assert_array_equal(np.asarray(a), data)
    assert a.ptr != 0 and a.is_contiguous
    back = a.to("cpu")
    assert back.device == "cpu"
    np.testing.assert_array_equal(back.numpy(), data)
    again = back.to("cuda:0")
    np.testing.assert_array_equal(again.numpy(), data)
    np.testing.assert_array_equal(wp.clone(a).numpy(), data)
    z = wp.zeros((5, 3), dtype=dtype, device="cuda")
    np.testing.assert_array_equal(z.numpy(), np.zeros_like(data))
    np.testing.assert_array_equal(wp.empty_like(a).numpy(), np.zeros_like(data))
    np.testing.assert_array_equal(wp.ones_like(a).numpy(), np.ones_like(data))
    z.assign(data)
    np.testing.assert_array_equal(z.numpy(), data)
    z.zero_()
    np.testing.assert_array_equal(z.numpy(), np.zeros_like(data))
    wp.copy(z, back)
    np.testing.assert_array_equal(z.numpy(), data)


@pytest.mark.parametrize(("value", "dtype", "expect"), [
    (1.5, wp.float64, 1.5),  # 8-byte pattern: written once, doubled by device copies
    (-2, wp.int8, -2),  # 1-byte memset
    (0.25, wp.float16, 0.25),  # 2-byte memset
    (3.0, wp.float32, 3.0),  # 4-byte memset
    (wp.vec3(1, 2, 3), wp.vec3, [1, 2, 3]),  # a 12-byte pattern
    (7, wp.int64, 7),
])
@pytest.mark.parametrize("n", [1, 2, 7, 64, 1000])
def test_full_and_fill(env, value, dtype, expect, n):
    a = wp.full(n, value, dtype=dtype, device="cuda")
    want = np.broadcast_to(np.asarray(expect), (n, *np.shape(expect)))
    np.testing.assert_array_equal(a.numpy(), want)
    a.zero_()
    assert not a.numpy().any()
    a.fill_(value)
    np.testing.assert_array_equal(a.numpy(), want)


def test_list_and_ones_constructors(env):
    a = wp.array([[1, 2], [3, 4]], dtype=wp.int32, device="cuda")
    np.testing.assert_array_equal(a.numpy(), [[1, 2], [3, 4]])
    assert a.list() == [1, 2, 3, 4]
    assert a[1, 0] == 3 and a[-1, -1] == 4
    o = wp.ones((2, 3), dtype=wp.vec2, device="cuda")
    np.testing.assert_array_equal(o.numpy(), np.ones((2, 3, 2)))
    assert o[1, 2] == wp.vec2(1.0, 1.0)
    f = wp.from_numpy(farr([1, 2, 3]), device="cuda")
    np.testing.assert_array_equal(f.numpy(), [1, 2, 3])


def test_views_and_writes_through_them(env):
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = wp.array(host, device="cuda")
    for key in (1, (slice(None), 1), slice(None, None, -1), (slice(1, 3), slice(None, None, 2)),
                (slice(3, 0, -2), slice(5, None, -3))):
        v = a[key]
        np.testing.assert_array_equal(v.numpy(), host[key])
        assert v.is_contiguous == host[key].flags.c_contiguous
    np.testing.assert_array_equal(a.transpose().numpy(), host.T)
    np.testing.assert_array_equal(a.transpose().contiguous().numpy(), host.T)
    np.testing.assert_array_equal(a.reshape((3, -1)).numpy(), host.reshape(3, -1))
    np.testing.assert_array_equal(a.flatten().numpy(), host.ravel())
    # writes into non-contiguous views touch exactly their elements
    want = host.copy()
    a[:, 2] = 100.0
    want[:, 2] = 100.0
    a[1:3, ::2].fill_(-1.0)
    want[1:3, ::2] = -1.0
    a[3] = np.arange(6, dtype=np.float32) * 2
    want[3] = np.arange(6) * 2
    a[0, 5] = 55.0
    want[0, 5] = 55.0
    a[::-1, 0].assign([9.0, 8.0, 7.0, 6.0])
    want[::-1, 0] = [9, 8, 7, 6]
    np.testing.assert_array_equal(a.numpy(), want)
    col = wp.zeros(4, device="cuda")
    wp.copy(col, a[:, 1])  # a non-contiguous source
    np.testing.assert_array_equal(col.numpy(), want[:, 1])


def test_copy_ranges_between_devices(env):
    src = wp.array(farr(np.arange(10)), device="cuda")
    dst = wp.zeros(8, device="cuda")
    wp.copy(dst, src, dest_offset=2, src_offset=5, count=4)
    np.testing.assert_array_equal(dst.numpy(), [0, 0, 5, 6, 7, 8, 0, 0])
    host = wp.zeros(10)
    wp.copy(host, src, dest_offset=1, src_offset=0, count=3)
    np.testing.assert_array_equal(host.numpy()[:5], [0, 0, 1, 2, 0])
    wp.copy(dst, host, dest_offset=0, src_offset=1, count=2)
    np.testing.assert_array_equal(dst.numpy()[:3], [0, 1, 5])
    with pytest.raises(GradloomError, match="exceed"):
        wp.copy(dst, src, dest_offset=6, count=4)


def test_gradients_have_the_data_layout(env):
    a = wp.zeros((3, 4), device="cuda", requires_grad=True)
    assert a.grad.device == a.device and a.grad.shape == (3, 4) and not a.grad.numpy().any()
    v = a[:, 1]
    assert v.grad is not None and v.grad.strides == v.strides
    v.grad.fill_(2.0)
    np.testing.assert_array_equal(a.grad.numpy()[:, 1], [2, 2, 2])
    assert a.grad.numpy().sum() == 6
    with pytest.raises(GradloomError, match="gradient"):
        a.grad = wp.zeros((3, 4))  # host memory for a device array


def test_cuda_array_interface(env):
    a = wp.array(np.ones((3, 2), np.float64), device="cuda")
    cai = a.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (3, 2) and cai["typestr"] == "<f8"
    assert cai["data"] == (a.ptr, False) and cai["strides"] is None
    assert isinstance(cai["stream"], int) and cai["stream"] != 0
    t = a.transpose().__cuda_array_interface__
    assert t["strides"] == (8, 16)
    v = wp.zeros(2, dtype=wp.vec3, device="cuda")[::-1].__cuda_array_interface__
    assert v["shape"] == (2, 3) and v["strides"] == (-12, 4)
    assert a.__dlpack_device__() == (2, 0)
    with pytest.raises(AttributeError):
        a.__array_interface__
    assert type(a.__dlpack__()).__name__ == "PyCapsule"  # tests/test_cuda_interop.py


def test_device_memory_is_given_back(env):
    if env is None:
        pytest.skip("the fake driver counts allocations")
    before = len(env.mem)
    a = wp.zeros(1000, device="cuda", requires_grad=True)
    assert len(env.mem) == before + 2  # data and gradient
    del a
    gc.collect()
    assert len(env.mem) == before


def test_driver_errors_name_the_call(env):
    if env is None:
        pytest.skip("the fake driver runs out of memory on demand")
    with pytest.raises(GradloomError, match=r"cannot allocate .* on cuda:0: CUDA driver call "
                       r"cuMemAllocAsync failed: CUDA_ERROR_OUT_OF_MEMORY \(2\)"):
        wp.zeros(env.total_memory + 1, dtype=wp.uint8, device="cuda")


def test_two_devices():
    """Peer copies and per-device launches (fake driver with two devices)."""
    if not HAS_BINDINGS or not have_libdevice():
        pytest.skip("the fake driver needs cuda-bindings and libdevice")
    from fake_cuda import FakeCuda

    fake = FakeCuda(kernels=KERNELS, devices=2)
    with cuda_driver.using(fake):
        assert [str(d) for d in wp.get_cuda_devices()] == ["cuda:0", "cuda:1"]
        a = wp.array(farr([1, 2, 3]), device="cuda:0")
        b = a.to("cuda:1")
        assert b.device == "cuda:1" and "cuMemcpyPeerAsync" in fake.calls
        np.testing.assert_array_equal(b.numpy(), [1, 2, 3])
        y = wp.zeros(3, device="cuda:1")
        wp.launch(saxpy, 3, inputs=[2.0, b, y], device="cuda:1")
        np.testing.assert_array_equal(y.numpy(), [2, 4, 6])
        with pytest.raises(LaunchError, match="on device cuda:0, but the launch is on cuda:1"):
            wp.launch(saxpy, 3, inputs=[2.0, a, y], device="cuda:1")
        with wp.ScopedDevice("cuda:1"):
            assert wp.get_device("cuda") == "cuda:1" and wp.zeros(1).device == "cuda:1"


# --------------------------------------------------------------------------------------------
# launches


def test_saxpy_matches_numpy(env):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(
        np.float32)
    dx, dy = wp.array(x, device="cuda"), wp.array(y, device="cuda")
    wp.launch(saxpy, 1000, inputs=[2.5, dx, dy], device="cuda")
    want = np.float32(2.5) * x + y
    np.testing.assert_allclose(dy.numpy(), want, rtol=1e-6)
    # a small grid: the grid-stride loop covers every thread
    wp.launch(saxpy, 1000, inputs=[-1.0, dx, dy], device="cuda:0", max_blocks=2,
              block_dim=32)
    want = want - x
    np.testing.assert_allclose(dy.numpy(), want, rtol=1e-6, atol=1e-6)
    if env is not None:
        assert env.launches[-1]["grid"] == 2 and env.launches[-1]["block"] == 32
    with wp.ScopedDevice("cuda:0"):  # device=None: the current device
        wp.launch(saxpy, 1000, inputs=[1.0, dx, dy])
    np.testing.assert_allclose(dy.numpy(), want + x, rtol=1e-6, atol=1e-6)


def test_multidimensional_launch(env):
    x = np.random.default_rng(2).standard_normal((5, 7)).astype(np.float32)
    dx, out = wp.array(x, device="cuda"), wp.zeros((5, 7), device="cuda")
    wp.launch(grid2d, (5, 7), inputs=[dx, out], device="cuda")
    i, j = np.meshgrid(np.arange(5), np.arange(7), indexing="ij")
    np.testing.assert_allclose(out.numpy(), x * (10 * i + j), rtol=1e-6)


def _adjoint(kernel, dim, x, extra, seed):
    """dx of sum(seed * y) by an adjoint launch on the device."""
    dx = wp.array(x, dtype=wp.float64, device="cuda", requires_grad=True)
    y = wp.zeros(len(x), dtype=wp.float64, device="cuda", requires_grad=True)
    wp.launch(kernel, dim, inputs=[dx, *extra, y], device="cuda")
    y.grad.assign(seed)
    wp.launch(kernel, dim, inputs=[dx, *extra, y], device="cuda", adjoint=True)
    return dx.grad.numpy()


def _fd(kernel, dim, x, extra, seed, eps=1e-6):
    """The same by float64 central differences of forward launches on the device."""
    out = np.zeros_like(x)
    for k in range(len(x)):
        vals = []
        for h in (eps, -eps):
            xp = x.copy()
            xp[k] += h
            y = wp.zeros(len(x), dtype=wp.float64, device="cuda")
            wp.launch(kernel, dim, inputs=[wp.array(xp, dtype=wp.float64, device="cuda"),
                                           *extra, y], device="cuda")
            vals.append(float(seed @ y.numpy()))
        out[k] = (vals[0] - vals[1]) / (2 * eps)
    return out


def test_adjoint_matches_analytic_and_fd(env):
    rng = np.random.default_rng(3)
    x, seed = rng.uniform(-2, 2, 6), rng.uniform(0.5, 1.5, 6)
    grad = _adjoint(sin_times, 6, x, [], seed)
    np.testing.assert_allclose(grad, seed * (np.cos(x) * x + np.sin(x)), rtol=1e-12)
    np.testing.assert_allclose(grad, _fd(sin_times, 6, x, [], seed), rtol=1e-6, atol=1e-8)


def test_adjoint_stack_grows_and_reruns_from_scratch(env):
    """40 trips push 320+ bytes per thread: the stack (256 bytes at first) fills, and the
    launch reruns with the gradients restored, so nothing is added twice."""
    rng = np.random.default_rng(4)
    n = 40
    x, seed = rng.uniform(-0.9, 0.9, 5), rng.uniform(0.5, 1.5, 5)
    grad = _adjoint(horner, 5, x, [n], seed)
    np.testing.assert_allclose(grad, _fd(horner, 5, x, [n], seed), rtol=1e-6, atol=1e-7)
    prepared = cuda_driver.current().kernels[horner]["adjoint", 0]
    assert prepared.stack_capacity >= 8 * (n + 1) > FIRST_STACK
    if env is not None:
        caps = [L["capacity"] for L in env.launches if L["symbol"].endswith("_adjoint")]
        assert caps[0] == FIRST_STACK and caps[-1] == prepared.stack_capacity
        assert caps == sorted(caps) and len(caps) >= 2
    # the next launch starts at the grown capacity and gives the same gradient
    np.testing.assert_allclose(_adjoint(horner, 5, x, [n], seed), grad, rtol=1e-14)


def test_order_dependent_adjoint_is_refused(env):
    x = wp.array(farr([1, 2, 3, 4]), device="cuda", requires_grad=True)
    wp.launch(shift_down, 3, inputs=[x], device="cuda")  # the forward runs (racing, as Warp)
    with pytest.raises(LaunchError, match="shift_down.*cannot run on a CUDA device.*on the CPU"):
        wp.launch(shift_down, 3, inputs=[x], device="cuda", adjoint=True)


def test_debug_mode_reports_the_error_word_and_restores(env, monkeypatch):
    monkeypatch.setattr(wp.config, "mode", "debug")
    x = wp.array(farr([1, 2, 3, 4]), device="cuda")
    y = wp.full(4, 9.0, device="cuda")
    with pytest.raises(KernelRuntimeError, match=r"index 4 is out of bounds.*'x'.*shape \(4,\)"
                       r"[\s\S]*test_cuda_runtime.py"):
        wp.launch(shifted_read, 4, inputs=[x, y], device="cuda")
    np.testing.assert_array_equal(y.numpy(), [9, 9, 9, 9])  # what the launch wrote is undone
    wp.launch(shifted_read, 3, inputs=[x, y], device="cuda")
    np.testing.assert_array_equal(y.numpy(), [2, 3, 4, 9])


def test_launch_errors_name_the_argument_and_device(env):
    dx = wp.zeros(4, device="cuda")
    with pytest.raises(LaunchError, match=r"argument 'x'.*on device cpu.*launch is on cuda:0"):
        wp.launch(saxpy, 4, inputs=[1.0, wp.zeros(4), dx], device="cuda")
    with pytest.raises(LaunchError, match=r"on device cuda:0.*launch is on cpu"):
        wp.launch(saxpy, 4, inputs=[1.0, dx, wp.zeros(4)], device="cpu")
    with pytest.raises(LaunchError, match="takes 3 arguments"):
        wp.launch(saxpy, 4, inputs=[1.0, dx], device="cuda")
    with pytest.raises(LaunchError, match="block_dim"):
        wp.launch(saxpy, 4, inputs=[1.0, dx, dx], device="cuda", block_dim=2048)
    wp.launch(saxpy, 0, inputs=[1.0, dx, dx], device="cuda")  # nothing to run


def test_struct_holding_a_device_array(env):
    p = Scaled()
    p.a, p.s = wp.array(farr(np.arange(5)), device="cuda"), 3.0
    out = wp.zeros(5, device="cuda")
    wp.launch(use_struct, 5, inputs=[p, out], device="cuda")
    np.testing.assert_array_equal(out.numpy(), 3.0 * np.arange(5))
    p.a = wp.zeros(5)
    with pytest.raises(LaunchError, match=r"argument 'p'.*field 'a'.*on device cpu"):
        wp.launch(use_struct, 5, inputs=[p, out], device="cuda")


def test_host_side_utilities_write_device_arrays(env):
    a = wp.array(farr(np.arange(5)), device="cuda")
    total = wp.zeros(1, device="cuda")
    wp.utils.array_sum(a, out=total)  # computed on the host, written back to the device
    np.testing.assert_array_equal(total.numpy(), [10.0])
    g = wp.zeros(5, device="cuda", requires_grad=True)
    with wp.Tape(), pytest.raises(TapeError, match="CUDA arrays"):
        wp.utils.array_sum(g, out=wp.zeros(1, device="cuda", requires_grad=True))
    with pytest.raises(GradloomError, match="HashGrid on cuda:0"):
        wp.HashGrid(4, 4, 4, device="cuda")


# --------------------------------------------------------------------------------------------
# streams and events


def test_streams_and_events(env):
    dev = wp.get_device("cuda")
    default = wp.get_stream(dev)
    assert default.device == dev and default.cuda_stream and dev.stream is default
    s = wp.Stream(dev)
    assert s.cuda_stream and s.cuda_stream != default.cuda_stream
    x = wp.array(farr(np.arange(100)), device="cuda")
    y = wp.zeros(100, device="cuda")
    start, end = wp.Event(dev, enable_timing=True), wp.Event(dev, enable_timing=True)
    with wp.ScopedStream(s):
        assert wp.get_stream("cuda:0") is s and wp.get_stream() is s
        s.record_event(start)
        wp.launch(saxpy, 100, inputs=[3.0, x, y])
        s.record_event(end)
    assert wp.get_stream(dev) is default and wp.get_device() == "cpu"
    default.wait_stream(s)
    wp.synchronize_stream(s)
    wp.synchronize_event(end)
    assert s.is_complete and end.is_complete
    assert wp.get_event_elapsed_time(start, end) >= 0.0
    np.testing.assert_allclose(y.numpy(), 3.0 * np.arange(100))
    wp.synchronize_device("cuda:0")
    wp.synchronize()
    with pytest.raises(wp.StreamError, match="cannot be used on device cpu"):
        wp.set_stream(s, "cpu")


def test_device_properties(env):
    dev = wp.get_device("cuda:0")
    assert dev.is_cuda and not dev.is_cpu and dev.ordinal == 0 and dev.alias == "cuda:0"
    assert dev == "cuda" and dev == "cuda:0" and dev != "cpu" and str(dev) == "cuda:0"
    assert dev is wp.get_cuda_device(0) and dev in wp.get_cuda_devices()
    assert dev.arch >= 50 and dev.sm_count > 0 and dev.total_memory > 0 and dev.name
    assert dev.max_shared_memory_per_block >= 48 * 1024  # every CUDA GPU gives a block 48 KiB
    cpu = wp.get_device("cpu")
    assert (cpu.arch, cpu.sm_count, cpu.max_shared_memory_per_block) == (0, 0, 0)  # Warp's CPU
    assert wp.get_cuda_device_count() >= 1 and wp.is_cuda_available()
    with wp.ScopedDevice("cuda") as d:
        assert d is dev and wp.get_device() is dev
        assert wp.zeros(2).device is dev  # arrays go to the current device
    with pytest.raises(GradloomError, match="does not exist"):
        wp.get_device(f"cuda:{wp.get_cuda_device_count()}")


def test_cpu_synchronize_does_not_load_the_cuda_driver():
    # a CPU-only program never imports cuda-bindings (warp-lang's work_queue example calls
    # wp.synchronize() on the CPU)
    code = ("import sys, gradloom as wp; wp.synchronize(); "
            "print('cuda.bindings' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "False"


def test_driver_version_is_the_drivers(env):
    # the fake driver reports CUDA 13.0 (13000); a real one its own version
    version = wp.get_cuda_driver_version()
    assert isinstance(version, int) and version >= 11000
    if env is not None:
        assert version == 13000
