"""The `gradloom.torch` bridge: kernels as differentiable torch ops.

Checked against `torch.autograd.gradcheck` (float64) and against the same formula written in
torch; re-entrancy, reuse of one `grad_outputs` tensor, no mutation of inputs, torch.optim.
"""

from __future__ import annotations

import numpy as np
import pytest
from wpcompat import BACKEND

if BACKEND != "gradloom":
    pytest.skip("gradloom-specific interop tests", allow_module_level=True)

import gradloom as wp
import gradloom.torch as gt
from gradloom.errors import GradloomError

torch = pytest.importorskip("torch")


F64 = wp.array(dtype=wp.float64)


@wp.kernel
def model(x: F64, w: F64, scale: wp.float64, y: F64):
    i = wp.tid()
    y[i] = scale * wp.sin(x[i]) * w[i] + x[i] * x[i] * w[i]


def model_torch(x, w, scale):
    return scale * torch.sin(x) * w + x * x * w


@wp.kernel
def two_outputs(x: F64, y: F64, z: F64):
    i = wp.tid()
    y[i] = wp.exp(x[i])
    z[i] = x[i] * x[i] * x[i]


@wp.kernel
def lengths(v: wp.array(dtype=wp.vec3d), out: F64):
    i = wp.tid()
    out[i] = wp.length(v[i]) * wp.length(v[i]) + v[i][0]


@wp.kernel
def twice(x: F64, y: F64):
    i = wp.tid()
    y[i] = 2.0 * x[i]


@wp.kernel
def bump(x: F64):
    i = wp.tid()
    x[i] = x[i] + 1.0


op = gt.function(model, outputs={"y": "x"})


@gt.function
def chain(v: wp.array(dtype=wp.vec3d)):
    """Two launches through an intermediate array."""
    n = v.shape[0]
    mid = wp.zeros(n, dtype=wp.float64, requires_grad=True)
    out = wp.zeros(n, dtype=wp.float64, requires_grad=True)
    wp.launch(lengths, n, inputs=[v], outputs=[mid])
    wp.launch(twice, n, inputs=[mid], outputs=[out])
    return out


def rand(*shape, grad=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=torch.float64, generator=g).requires_grad_(grad)


def test_forward_matches_torch():
    x, w = rand(7), rand(7, seed=1)
    torch.testing.assert_close(op(x, w, 0.5), model_torch(x, w, 0.5))


def test_gradcheck_kernel_op():
    x, w = rand(6), rand(6, seed=1)
    assert torch.autograd.gradcheck(lambda a, b: op(a, b, 1.5), (x, w))


def test_gradcheck_multiple_outputs_and_gradgrad_free_function():
    f = gt.function(two_outputs, outputs=["y", "z"])
    x = rand(5)
    assert torch.autograd.gradcheck(f, (x,))
    y, z = f(x)
    torch.testing.assert_close(y, torch.exp(x))
    torch.testing.assert_close(z, x**3)


def test_gradcheck_python_function_with_vectors_and_intermediates():
    v = rand(4, 3)
    vd = v.detach()
    torch.testing.assert_close(chain(v), 2.0 * ((vd * vd).sum(dim=1) + vd[:, 0]))
    assert torch.autograd.gradcheck(chain, (v,))


def test_backward_twice_with_retain_graph_gives_the_same_gradients():
    x, w = rand(8), rand(8, seed=1)
    y = op(x, w, 2.0)
    go = torch.linspace(-1.0, 1.0, 8, dtype=torch.float64)
    first = torch.autograd.grad(y, (x, w), go, retain_graph=True)
    second = torch.autograd.grad(y, (x, w), go, retain_graph=True)
    for a, b in zip(first, second):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_reused_grad_outputs_gives_identical_correct_gradients_and_stays_unchanged():
    x, w = rand(9), rand(9, seed=1)
    go = torch.linspace(0.5, 2.0, 9, dtype=torch.float64)
    go_before = go.clone()
    xr, wr = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    expected = torch.autograd.grad(model_torch(xr, wr, 0.7), (xr, wr), go)
    results = []
    for _ in range(3):  # three graphs, one grad_outputs tensor
        results.append(torch.autograd.grad(op(x, w, 0.7), (x, w), go))
    y = op(x, w, 0.7)
    for _ in range(3):  # three backward calls through one graph
        results.append(torch.autograd.grad(y, (x, w), go, retain_graph=True))
    for r in results:
        for got, want in zip(r, expected):
            torch.testing.assert_close(got, want)
        for got, first in zip(r, results[0]):
            torch.testing.assert_close(got, first, rtol=0, atol=0)
    torch.testing.assert_close(go, go_before, rtol=0, atol=0)


def test_leaf_gradients_are_accumulated_once_and_returned_gradients_are_not_reused():
    x, w = rand(5), rand(5, seed=1)
    x0, w0 = x.detach().clone(), w.detach().clone()
    op(x, w, 1.0).sum().backward()
    g1 = x.grad.clone()
    xr = x0.clone().requires_grad_()
    model_torch(xr, w0, 1.0).sum().backward()
    torch.testing.assert_close(g1, xr.grad)
    op(x, w, 1.0).sum().backward()  # accumulates: 2×, and the first result was not zeroed
    torch.testing.assert_close(x.grad, 2 * xr.grad)
    torch.testing.assert_close(x.detach(), x0, rtol=0, atol=0)  # inputs never mutated
    torch.testing.assert_close(w.detach(), w0, rtol=0, atol=0)


def test_inputs_are_read_only():
    @gt.function
    def writes_input(x: F64):
        wp.launch(bump, x.shape[0], inputs=[x])
        return wp.clone(x, requires_grad=True)

    x = rand(3)
    x0 = x.detach().clone()
    with pytest.raises(GradloomError, match="read-only"):
        writes_input(x)
    torch.testing.assert_close(x.detach(), x0, rtol=0, atol=0)


def test_in_place_change_of_an_input_before_backward_is_caught_by_torch():
    x = rand(4)
    w = torch.ones(4, dtype=torch.float64)
    y = op(x, w, 1.0)
    with torch.no_grad():
        w.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_outputs_without_gradient_are_reported():
    @gt.function
    def no_grad_output(x: F64):
        y = wp.zeros(x.shape[0], dtype=wp.float64)
        wp.launch(twice, x.shape[0], inputs=[x], outputs=[y])
        return y

    with pytest.raises(GradloomError, match="requires_grad=True"):
        no_grad_output(rand(3))
    out = no_grad_output(rand(3, grad=False))  # fine when no gradient is needed
    assert not out.requires_grad


def test_identity_output_does_not_alias_the_input():
    ident = gt.function(lambda x: x)
    x = rand(3)
    y = ident(x)
    assert y.data_ptr() != x.data_ptr()
    y.sum().backward()
    torch.testing.assert_close(x.grad, torch.ones(3, dtype=torch.float64))


def test_non_contiguous_inputs():
    base = rand(8, 3)
    x = base[::2]  # (4, 3) view: rows strided, components contiguous
    f = gt.function(lengths, outputs={"out": lambda v: v.shape[0]})
    xv = x.detach().clone()
    y = f(x)
    torch.testing.assert_close(y, (xv * xv).sum(dim=1) + xv[:, 0])
    y.sum().backward()
    expected = torch.zeros(8, 3, dtype=torch.float64)
    expected[::2] = 2 * xv
    expected[::2, 0] += 1.0
    torch.testing.assert_close(base.grad, expected)
    with pytest.raises(GradloomError, match=r"argument 0: the components of vec3d must be"):
        f(rand(3, 6)[:, ::2])


def test_keyword_arguments_and_errors():
    x, w = rand(3), rand(3, seed=1)
    torch.testing.assert_close(op(x, w=w, scale=1.0), model_torch(x, w, 1.0))
    with pytest.raises(GradloomError, match="outputs="):
        gt.function(model)
    with pytest.raises(GradloomError, match="'q' is not an array parameter"):
        gt.function(model, outputs=["q"])


def test_torch_optim_adam_through_a_kernel():
    target_w = torch.linspace(-1.0, 1.0, 16, dtype=torch.float64)
    x = torch.linspace(0.1, 2.0, 16, dtype=torch.float64)
    target = model_torch(x, target_w, 1.0)
    w = torch.zeros(16, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([w], lr=0.05)
    losses = []
    for _ in range(200):
        opt.zero_grad()
        loss = ((op(x, w, 1.0) - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 1e-4 * losses[0]
    np.testing.assert_allclose(w.detach().numpy(), target_w.numpy(), atol=2e-2)
