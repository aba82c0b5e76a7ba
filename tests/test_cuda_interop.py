"""DLPack and torch on CUDA: `__dlpack__` of CUDA arrays (device type 2, the stream
handshake), `wp.from_dlpack` of CUDA producers and capsules, objects with
`__cuda_array_interface__` and DLPack producers passed to `wp.launch`, and — on a machine with
a CUDA build of torch and a GPU — torch CUDA tensors and the `gradloom.torch` bridge.

Without a GPU the protocol paths run against tests/fake_cuda.py with stand-in producers (this
machine's torch is a CPU build); the real-torch tests skip.
"""

from __future__ import annotations

import gc
import importlib.util

import numpy as np
import pytest
from cuda_env import HAS_GPU, device_env

import gradloom as wp
from gradloom.errors import LaunchError
from gradloom.runtime import dlpack_capsule


def _torch_cuda() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


@wp.kernel
def scale(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i]


@wp.kernel
def norms(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(v[i])


KERNELS = [scale, norms]


@pytest.fixture(params=["fake", "gpu"])
def env(request):
    yield from device_env(request.param, KERNELS)


class Producer:
    """A DLPack producer in CUDA memory (what cupy or a CUDA torch tensor looks like to
    gradloom): it exports a gradloom array and notes the stream the consumer asked for."""

    def __init__(self, a):
        self.a, self.streams = a, []

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return self.a.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return (2, 0)


class Interface:
    """An object presenting `__cuda_array_interface__` (numba, cupy), naming its stream."""

    def __init__(self, a, stream):
        self.__cuda_array_interface__ = {**a.__cuda_array_interface__, "stream": stream}
        self.keep = a


def test_dlpack_round_trip_shares_device_memory(env):
    a = wp.array(np.arange(6, dtype=np.float32), device="cuda")
    assert a.__dlpack_device__() == (2, 0)
    b = wp.from_dlpack(a.__dlpack__())
    assert b.device == a.device and b.ptr == a.ptr and b.dtype == wp.float32
    np.testing.assert_array_equal(b.numpy(), np.arange(6))
    b.fill_(7.0)  # one memory
    np.testing.assert_array_equal(a.numpy(), np.full(6, 7.0))
    view = a[::2]
    c = wp.from_dlpack(view.__dlpack__())
    assert c.shape == (3,) and c.strides == (8,) and c.ptr == view.ptr


def test_dlpack_of_vectors_and_strided_2d(env):
    v = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=wp.vec3, device="cuda")
    plain = wp.from_dlpack(v.__dlpack__())
    assert plain.shape == (4, 3) and plain.dtype == wp.float32  # components trail
    back = wp.from_dlpack(v.__dlpack__(), dtype=wp.vec3)
    assert back.shape == (4,) and back.dtype == wp.vec3
    np.testing.assert_array_equal(back.numpy(), v.numpy())
    m = wp.array(np.arange(12, dtype=np.float64).reshape(3, 4), device="cuda").transpose()
    t = wp.from_dlpack(m.__dlpack__())
    assert t.shape == (4, 3) and t.strides == m.strides
    np.testing.assert_array_equal(t.numpy(), np.arange(12).reshape(3, 4).T)


def test_capsules_keep_memory_alive_and_release_it(env):
    a = wp.array(np.ones(4, np.float32), device="cuda")
    exported = len(dlpack_capsule._EXPORTS)
    capsule = a.__dlpack__()
    assert len(dlpack_capsule._EXPORTS) == exported + 1
    del capsule  # never consumed: the capsule's destructor deletes it
    gc.collect()
    assert len(dlpack_capsule._EXPORTS) == exported
    b = wp.from_dlpack(a.__dlpack__())
    if env is not None:
        allocations = len(env.mem)
    del a  # b's capsule keeps the allocation
    gc.collect()
    np.testing.assert_array_equal(b.numpy(), np.ones(4))
    del b  # the consumer is done: the deleter runs, the allocation goes
    gc.collect()
    assert len(dlpack_capsule._EXPORTS) == exported
    if env is not None:
        assert len(env.mem) == allocations - 1
    with pytest.raises(wp.GradloomError, match="consumed once"):
        c = wp.array(np.ones(2, np.float32), device="cuda").__dlpack__()
        wp.from_dlpack(c)
        wp.from_dlpack(c)


def test_dlpack_stream_handshake(env):
    a = wp.zeros(3, device="cuda")
    current = wp.get_stream("cuda").cuda_stream
    other = wp.Stream("cuda")
    calls = env.calls if env is not None else []
    n = len(calls)
    a.__dlpack__(stream=current)  # the consumer uses gradloom's stream: nothing to order
    a.__dlpack__(stream=-1)  # the consumer asks for no ordering
    if env is not None:
        assert "cuStreamWaitEvent" not in calls[n:]
    a.__dlpack__(stream=other.cuda_stream)
    if env is not None:
        assert calls[n:].count("cuEventRecord") == 1 and "cuStreamWaitEvent" in calls[n:]
    producer = Producer(wp.zeros(3, device="cuda"))
    wp.from_dlpack(producer)
    assert producer.streams == [current]  # gradloom passes its stream to the producer
    with pytest.raises(BufferError, match="DLPack device"):
        a.__dlpack__(dl_device=(1, 0))
    copied = wp.from_dlpack(a.__dlpack__(copy=True))
    assert copied.ptr != a.ptr


def test_foreign_device_memory_in_launches(env):
    x = wp.array(np.arange(4, dtype=np.float32), device="cuda")
    y = wp.zeros(4, device="cuda")
    other = wp.Stream("cuda")
    n = len(env.calls) if env is not None else 0
    wp.launch(scale, 4, inputs=[2.0, Interface(x, other.cuda_stream), Producer(y)],
              device="cuda")
    np.testing.assert_array_equal(y.numpy(), [0, 2, 4, 6])  # written through the producer
    if env is not None:  # gradloom's stream waited for the interface's stream
        assert "cuStreamWaitEvent" in env.calls[n:]
    v = wp.array(np.ones((3, 3), np.float32), dtype=wp.vec3, device="cuda")
    out = wp.zeros(3, device="cuda")
    wp.launch(norms, 3, inputs=[Interface(v, None), out], device="cuda")
    np.testing.assert_allclose(out.numpy(), np.sqrt(3.0), rtol=1e-6)
    with pytest.raises(LaunchError, match=r"argument 'x'.*2-D"):
        m = wp.zeros((2, 2), device="cuda")
        wp.launch(scale, 2, inputs=[1.0, Interface(m, None), y], device="cuda")


# --------------------------------------------------------------------------------------------
# real torch on a GPU


needs_torch_cuda = pytest.mark.skipif(not (HAS_GPU and _torch_cuda()),
                                      reason="needs a CUDA build of torch and an NVIDIA GPU")


@needs_torch_cuda
def test_torch_cuda_tensors_zero_copy():
    import torch

    t = torch.arange(4, dtype=torch.float32, device="cuda", requires_grad=True)
    a = wp.from_torch(t)
    assert a.device == "cuda:0" and a.ptr == t.data_ptr() and a.grad is not None
    back = wp.to_torch(a)
    assert back.data_ptr() == t.data_ptr() and back.device.type == "cuda"
    y = torch.zeros(4, device="cuda")
    wp.launch(scale, 4, inputs=[3.0, t.detach(), y], device="cuda")
    torch.cuda.synchronize()
    assert torch.equal(y.cpu(), torch.tensor([0.0, 3.0, 6.0, 9.0]))


@needs_torch_cuda
def test_torch_bridge_on_cuda_matches_the_cpu():
    import torch

    import gradloom.torch as gt

    op = gt.function(scale, outputs={"y": "x"})
    grads = {}
    for device in ("cpu", "cuda"):
        x = torch.linspace(-1, 1, 5, device=device, requires_grad=True)
        op(2.5, x).pow(2).sum().backward()
        grads[device] = x.grad.cpu()
    assert torch.allclose(grads["cuda"], grads["cpu"])
