"""PyTorch interop: `from_torch`/`to_torch` share memory, raw tensors in `wp.launch` under a Tape.

Raw tensors: values never change in `backward`; a tensor with requires_grad gets its gradient in
`.grad` exactly once. Expected gradients are written out from the kernels' formulas (or come
from torch's own autograd), never copied from an earlier gradloom run.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from wpcompat import BACKEND

if BACKEND != "gradloom":
    pytest.skip("gradloom-specific interop tests", allow_module_level=True)

import gradloom as wp
from gradloom.errors import GradloomError, LaunchError

torch = pytest.importorskip("torch")


F32 = wp.array(dtype=wp.float32)


@wp.kernel
def sin_square(x: F32, y: F32):
    i = wp.tid()
    y[i] = wp.sin(x[i]) * x[i]


@wp.kernel
def total(y: F32, loss: F32):
    i = wp.tid()
    wp.atomic_add(loss, 0, y[i])


@wp.kernel
def add_one(x: F32):
    i = wp.tid()
    x[i] = x[i] + 1.0


@wp.kernel
def row_sums(m: wp.array2d(dtype=wp.float32), out: F32):
    i, j = wp.tid()
    wp.atomic_add(out, i, m[i, j] * float(j + 1))


@wp.kernel
def vec_len(v: wp.array(dtype=wp.vec3), out: F32):
    i = wp.tid()
    out[i] = wp.length(v[i])


# ---- from_torch / to_torch ------------------------------------------------------------------


def test_from_torch_shares_memory_both_ways():
    t = torch.zeros(5)
    a = wp.from_torch(t)
    assert a.dtype == wp.float32 and a.shape == (5,) and a.ptr == t.data_ptr()
    t[1] = 3.0
    assert a.numpy()[1] == 3.0
    wp.launch(add_one, 5, inputs=[a])
    torch.testing.assert_close(t, torch.tensor([1.0, 4.0, 1.0, 1.0, 1.0]))


def test_to_torch_shares_memory_both_ways():
    a = wp.array(np.arange(4, dtype=np.float32), dtype=float)
    t = wp.to_torch(a)
    assert t.data_ptr() == a.ptr
    t[0] = 9.0
    assert a.numpy()[0] == 9.0
    a.numpy()[3] = -2.0
    assert float(t[3]) == -2.0


def test_vector_dtypes_from_trailing_dims():
    t = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    a = wp.from_torch(t, dtype=wp.vec3)
    assert a.shape == (4,) and a.dtype == wp.vec3
    m = wp.from_torch(torch.zeros(2, 9), dtype=wp.mat33)
    assert m.shape == (2,) and m.dtype == wp.mat33
    back = wp.to_torch(a)
    assert back.shape == (4, 3) and back.data_ptr() == t.data_ptr()
    with pytest.raises(GradloomError, match="contiguous"):
        wp.from_torch(t.t().contiguous().t(), dtype=wp.vec3)


def test_from_torch_uses_the_tensor_grad_as_gradient():
    t = torch.ones(3, requires_grad=True)
    a = wp.from_torch(t)
    assert t.grad is not None and a.grad is not None  # allocated
    assert a.grad.ptr == t.grad.data_ptr()
    g = torch.full((3,), 2.0)
    t2 = torch.ones(3, requires_grad=True)
    t2.grad = g
    assert wp.from_torch(t2).grad.ptr == g.data_ptr()
    assert wp.from_torch(torch.ones(3)).grad is None
    assert wp.from_torch(torch.ones(3), requires_grad=True).grad is not None


def test_to_torch_attaches_the_gradient():
    a = wp.zeros(3, dtype=float, requires_grad=True)
    t = wp.to_torch(a)
    assert t.requires_grad and t.grad is not None and t.grad.data_ptr() == a.grad.ptr
    a.grad.numpy()[1] = 5.0
    assert float(t.grad[1]) == 5.0
    assert not wp.to_torch(wp.zeros(2)).requires_grad


def test_device_and_dtype_mappings():
    assert wp.device_from_torch(torch.device("cpu")) == "cpu"
    assert wp.device_from_torch("cpu") == wp.get_device("cpu")
    assert wp.device_to_torch("cpu") == "cpu"
    if not wp.is_cuda_available():  # without a GPU, a CUDA device is a clear error
        with pytest.raises(GradloomError, match="cuda"):
            wp.device_from_torch("cuda:0")
    assert wp.dtype_from_torch(torch.float64) == wp.float64
    assert wp.dtype_from_torch(torch.int32) == wp.int32
    assert wp.dtype_from_torch(torch.bool) == wp.bool
    assert wp.dtype_to_torch(wp.float16) == torch.float16
    assert wp.dtype_to_torch(wp.vec3d) == torch.float64
    with pytest.raises(GradloomError, match="bfloat16"):
        wp.dtype_from_torch(torch.bfloat16)


def test_bfloat16_and_integer_bits_are_shared():
    # as Warp: bfloat16 tensors wrap as wp.bfloat16 (sharing memory), unsigned types go to
    # torch as the signed type of their size, and a signed tensor may be read as unsigned
    t = torch.tensor([1.0, 2.5, -3.0], dtype=torch.bfloat16)
    a = wp.from_torch(t)
    assert a.dtype == wp.bfloat16
    t[0] = 8.0
    assert wp.to_torch(a).dtype == torch.bfloat16 and float(wp.to_torch(a)[0]) == 8.0
    assert wp.dtype_to_torch(wp.uint32) == torch.int32
    u = wp.from_torch(torch.tensor([-1, 2], dtype=torch.int64), dtype=wp.uint64)
    assert u.numpy().tolist() == [2**64 - 1, 2]
    assert wp.to_torch(u).dtype == torch.int64


def test_unsupported_dtypes_are_rejected_clearly():
    with pytest.raises(GradloomError, match="complex64"):
        wp.from_torch(torch.zeros(3, dtype=torch.complex64))
    y = torch.zeros(3)
    with pytest.raises(LaunchError, match=r"argument 'x'.*bfloat16"):
        wp.launch(sin_square, 3, inputs=[torch.zeros(3, dtype=torch.bfloat16)], outputs=[y])
    with pytest.raises(LaunchError, match=r"argument 'x'.*float64"):
        wp.launch(sin_square, 3, inputs=[torch.zeros(3, dtype=torch.float64)], outputs=[y])
    with pytest.raises(LaunchError, match=r"argument 'x'.*bool"):
        wp.launch(sin_square, 3, inputs=[torch.zeros(3, dtype=torch.bool)], outputs=[y])


def test_import_gradloom_does_not_import_torch():
    code = "import sys, gradloom, gradloom.torch; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


# ---- raw tensors in wp.launch ---------------------------------------------------------------


def _expected_grad(x: torch.Tensor) -> torch.Tensor:
    xd = x.detach().clone().requires_grad_(True)
    (torch.sin(xd) * xd).sum().backward()
    return xd.grad


def test_raw_tensor_keeps_values_and_gets_its_gradient_once():
    x = torch.ones(4, requires_grad=True)
    y = torch.zeros(4, requires_grad=True)
    loss = torch.zeros(1, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(sin_square, 4, inputs=[x], outputs=[y])
        wp.launch(total, 4, inputs=[y], outputs=[loss])
    values = (x.detach().clone(), y.detach().clone(), loss.detach().clone())
    tape.backward(loss=loss)
    torch.testing.assert_close(x.detach(), values[0])  # values unchanged by backward
    torch.testing.assert_close(y.detach(), values[1])
    torch.testing.assert_close(loss.detach(), values[2])
    torch.testing.assert_close(loss.detach(), (torch.sin(values[0]) * values[0]).sum()[None])
    torch.testing.assert_close(x.grad, _expected_grad(x))  # once, not twice
    tape.backward(loss=loss)  # Tape semantics: leaf gradients accumulate until zero()
    torch.testing.assert_close(x.grad, 2 * _expected_grad(x))
    tape.zero()
    assert float(x.grad.abs().sum()) == 0.0


def test_raw_tensor_grad_is_created_when_none_and_existing_grad_accumulates():
    x = torch.linspace(-1.0, 1.0, 6).requires_grad_(True)
    x.grad = torch.full((6,), 10.0)
    y = wp.zeros(6, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(sin_square, 6, inputs=[x], outputs=[y])
    tape.backward(grads={y: np.ones(6, dtype=np.float32)})
    torch.testing.assert_close(x.grad, 10.0 + _expected_grad(x))


def test_raw_tensor_seed_is_not_written():
    x = torch.rand(5, requires_grad=True)
    y = torch.zeros(5, requires_grad=True)
    seed = torch.arange(5, dtype=torch.float32)
    tape = wp.Tape()
    with tape:
        wp.launch(sin_square, 5, inputs=[x], outputs=[y])
    tape.backward(grads={y: seed})
    torch.testing.assert_close(seed, torch.arange(5, dtype=torch.float32))
    torch.testing.assert_close(x.grad, seed * _expected_grad(x))


def test_raw_tensor_overwritten_after_a_recorded_read_keeps_old_values_for_backward():
    x = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
    y = torch.zeros(3, requires_grad=True)
    x0 = x.detach().clone()
    tape = wp.Tape()
    with tape:
        wp.launch(sin_square, 3, inputs=[x], outputs=[y])
        wp.launch(add_one, 3, inputs=[x])  # a different wrapper of the same tensor
    tape.backward(grads={y: torch.ones(3)})
    torch.testing.assert_close(x.detach(), x0 + 1.0)
    torch.testing.assert_close(x.grad, _expected_grad(x0))


def test_non_contiguous_tensors_through_strides():
    m = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()  # (4, 3), strides (1, 4)
    out = torch.zeros(4)
    wp.launch(row_sums, (4, 3), inputs=[m], outputs=[out])
    torch.testing.assert_close(out, m @ torch.tensor([1.0, 2.0, 3.0]))
    x = torch.arange(10, dtype=torch.float32)
    wp.launch(add_one, 5, inputs=[x[::2]])
    torch.testing.assert_close(x[::2], torch.arange(0, 10, 2, dtype=torch.float32) + 1.0)
    torch.testing.assert_close(x[1::2], torch.arange(1, 10, 2, dtype=torch.float32))


def test_non_contiguous_tensor_gradient_has_its_layout():
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    m = base.t().detach().requires_grad_(True)  # a leaf with transposed strides
    out = torch.zeros(4, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(row_sums, (4, 3), inputs=[m], outputs=[out])
    tape.backward(grads={out: torch.ones(4)})
    torch.testing.assert_close(m.grad, torch.tensor([1.0, 2.0, 3.0]).expand(4, 3))


def test_raw_vector_tensors():
    v = torch.randn(5, 3, requires_grad=True)
    out = torch.zeros(5, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(vec_len, 5, inputs=[v], outputs=[out])
    torch.testing.assert_close(out.detach(), v.detach().norm(dim=1))
    tape.backward(grads={out: torch.ones(5)})
    torch.testing.assert_close(v.grad, v.detach() / v.detach().norm(dim=1, keepdim=True))


def test_retain_grad_flag_is_kept():
    t = torch.zeros(4, requires_grad=True)
    assert wp.from_torch(t, requires_grad=True, retain_grad=True).retain_grad
    assert not wp.from_torch(t, requires_grad=True).retain_grad
    assert wp.array([1.0, 2.0], dtype=float, requires_grad=True, retain_grad=True).retain_grad
