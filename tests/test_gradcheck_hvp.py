"""The second-order check (`gradloom.autograd.gradcheck_hvp`): HVPs against central differences
of reverse-mode gradients. It passes on kernels with loops and branches, and fails when the HVP
it checks is wrong (a perturbed hvp), so it can tell."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
from gradloom import forward_mode
from gradloom.autograd import GradcheckError, gradcheck_hvp


@wp.kernel
def energy(x: wp.array(dtype=wp.float64), k: wp.array(dtype=wp.float64),
           e: wp.array(dtype=wp.float64)):
    i = wp.tid()
    s = wp.float64(0.0)
    for j in range(3):  # a loop carrying a product-like value
        s = s * x[i] + k[j]
    if x[i] > wp.float64(0.0):
        s = s + wp.sin(x[i]) * x[i]
    wp.atomic_add(e, 0, s * s)


def _inputs():
    g = np.random.default_rng(4)
    return [wp.array(g.uniform(-1, 1, 9), dtype=wp.float64),
            wp.array(g.uniform(0.5, 1.5, 3), dtype=wp.float64)]


def loss(x, k):
    e = wp.zeros(1, dtype=wp.float64)
    wp.launch(energy, x.shape, inputs=[x, k, e])
    return e


def test_second_order_check_passes_on_loops_and_branches():
    ins = _inputs()
    before = [a.numpy().copy() for a in ins]
    assert gradcheck_hvp(loss, ins, eps=1e-5, atol=1e-6, rtol=1e-5, show_summary=False)
    assert all(np.array_equal(a.numpy(), b) for a, b in zip(ins, before, strict=True))


def test_second_order_check_of_a_kernel_with_weights():
    ins = _inputs()
    e = wp.zeros(1, dtype=wp.float64)
    assert gradcheck_hvp(energy, ins, dim=9, outputs=[e], weights=[np.array([2.0])],
                         eps=1e-5, atol=1e-6, rtol=1e-5, show_summary=False)


def test_second_order_check_fails_on_a_wrong_hvp(monkeypatch):
    right = forward_mode.hvp

    def off(*args, **kw):
        out = right(*args, **kw)
        return [None if o is None else wp.array(o.numpy() * 1.01, dtype=o.dtype) for o in out]

    monkeypatch.setattr(forward_mode, "hvp", off)
    import gradloom.second_order as so
    monkeypatch.setattr(so, "hvp", off)
    with pytest.raises(GradcheckError, match="FAIL"):
        gradcheck_hvp(loss, _inputs(), eps=1e-5, atol=1e-6, rtol=1e-5, show_summary=False)
    assert not gradcheck_hvp(loss, _inputs(), eps=1e-5, atol=1e-6, rtol=1e-5,
                             raise_exception=False, show_summary=False)
