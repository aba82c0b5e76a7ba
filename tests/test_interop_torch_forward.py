"""`gradloom.torch` functions under torch's forward mode (`torch.func.jvp`, `forward_ad`) and
double backward (`create_graph=True`, `torch.autograd.gradgradcheck`): checked against the
same formula written in torch and against torch's float64 finite differences."""

from __future__ import annotations

import pytest
from wpcompat import BACKEND

if BACKEND != "gradloom":
    pytest.skip("gradloom-specific interop tests", allow_module_level=True)

import gradloom as wp
import gradloom.torch as gt

torch = pytest.importorskip("torch")

# the kernels and their torch formula are the bridge tests' own
from test_interop_torch_bridge import F64, model, model_torch, two_outputs  # noqa: E402


@wp.kernel
def lengths(v: wp.array(dtype=wp.vec3d), out: F64):
    i = wp.tid()
    out[i] = wp.length(v[i]) * wp.length(v[i]) + v[i][0] * v[i][1]


@gt.function
def chain(v: wp.array(dtype=wp.vec3d)):
    n = v.shape[0]
    out = wp.zeros(n, dtype=wp.float64, requires_grad=True)
    wp.launch(lengths, n, inputs=[v], outputs=[out])
    return out


op = gt.function(model, outputs={"y": "x"})
op2 = gt.function(two_outputs, outputs=["y", "z"])


def rand(*shape, grad=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=torch.float64, generator=g).requires_grad_(grad)


def test_torch_func_jvp_matches_torch():
    x, w = rand(7, grad=False), rand(7, grad=False, seed=1)
    tx, tw = rand(7, grad=False, seed=2), rand(7, grad=False, seed=3)
    out, tan = torch.func.jvp(lambda a, b: op(a, b, 0.7), (x, w), (tx, tw))
    ref, ref_tan = torch.func.jvp(lambda a, b: model_torch(a, b, 0.7), (x, w), (tx, tw))
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(tan, ref_tan)


def test_forward_ad_dual_tensors_with_two_outputs():
    import torch.autograd.forward_ad as fwAD
    x, tx = rand(5, grad=False), rand(5, grad=False, seed=4)
    with fwAD.dual_level():
        y, z = op2(fwAD.make_dual(x, tx))
        ty, tz = fwAD.unpack_dual(y).tangent, fwAD.unpack_dual(z).tangent
    torch.testing.assert_close(ty, torch.exp(x) * tx)
    torch.testing.assert_close(tz, 3 * x * x * tx)


def test_double_backward_matches_torch():
    x, w = rand(6), rand(6, seed=1)
    (gx, gw) = torch.autograd.grad(op(x, w, 0.3).square().sum(), (x, w), create_graph=True)
    (hx, hw) = torch.autograd.grad((gx * gx).sum() + gw.sum(), (x, w))
    xr, wr = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    (rx, rw) = torch.autograd.grad(model_torch(xr, wr, 0.3).square().sum(), (xr, wr),
                                   create_graph=True)
    (sx, sw) = torch.autograd.grad((rx * rx).sum() + rw.sum(), (xr, wr))
    torch.testing.assert_close(gx, rx)
    torch.testing.assert_close(hx, sx)
    torch.testing.assert_close(hw, sw)


def test_gradgradcheck_kernel_and_function_with_vectors():
    x, w = rand(5), rand(5, seed=1)
    assert torch.autograd.gradgradcheck(lambda a, b: op(a, b, 0.9), (x, w))
    v = rand(4, 3, seed=5)
    assert torch.autograd.gradgradcheck(chain, (v,))
    assert torch.autograd.gradgradcheck(lambda a: op2(a), (rand(4, seed=6),))


def test_plain_backward_still_gives_plain_gradients():
    x, w = rand(6), rand(6, seed=1)
    op(x, w, 0.3).sum().backward()
    assert x.grad is not None and x.grad.grad_fn is None
    xr, wr = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    model_torch(xr, wr, 0.3).sum().backward()
    torch.testing.assert_close(x.grad, xr.grad)
    torch.testing.assert_close(w.grad, wr.grad)
