"""`retain_grad`: Warp's flag, taken only by arrays with a gradient (as in Warp)."""

from __future__ import annotations

import pytest

import gradloom as wp


def test_retain_grad_needs_a_gradient():
    for make in (wp.zeros, wp.empty, wp.ones):
        with pytest.raises(ValueError, match="requires_grad"):
            make(4, dtype=float, retain_grad=True)
    with pytest.raises(ValueError, match="requires_grad"):
        wp.full(4, 1.0, retain_grad=True)
    a = wp.zeros(4, dtype=float)
    with pytest.raises(ValueError, match="requires_grad"):
        a.retain_grad = True
    a.requires_grad = True
    a.retain_grad = True
    assert a.retain_grad
    a.requires_grad = False  # dropping the gradient drops the flag
    assert not a.retain_grad
    assert wp.zeros(2, dtype=float, requires_grad=True, retain_grad=True).retain_grad
