"""A @wp.func_grad rule may end early with a bare `return` (newton's featherstone
`adj_dense_solve`: `if not tmp or not wp.adjoint[x]: return`): the adjoints it added so far are
its result."""

from __future__ import annotations

import numpy as np

import gradloom as wp


@wp.func
def square_if(x: float, on: int):
    return x * x


@wp.func_grad(square_if)
def adj_square_if(x: float, on: int, adj_ret: float):
    if on == 0:
        return  # this rule passes no gradient where `on` is 0
    wp.adjoint[x] += 2.0 * x * adj_ret
    for k in range(on):
        if k == 2:
            return  # at most two extra terms
        wp.adjoint[x] += adj_ret


@wp.kernel
def apply(a: wp.array(dtype=float), on: wp.array(dtype=int), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = square_if(a[i], on[i])


def test_bare_return_ends_the_rule_with_what_it_added():
    x = np.array([1.5, -2.0, 3.0, 0.5], dtype=np.float32)
    flags = np.array([0, 1, 2, 5], dtype=np.int32)
    a = wp.array(x, dtype=float, requires_grad=True, device="cpu")
    on = wp.array(flags, dtype=int, device="cpu")
    out = wp.zeros(4, dtype=float, requires_grad=True, device="cpu")
    tape = wp.Tape()
    with tape:
        wp.launch(apply, 4, inputs=[a, on, out], device="cpu")
    tape.backward(grads={out: wp.array(np.ones(4, np.float32), dtype=float, device="cpu")})
    expected = [0.0 if f == 0 else 2.0 * v + min(f, 2) for v, f in zip(x, flags, strict=True)]
    np.testing.assert_allclose(a.grad.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), x * x, rtol=1e-6)
