"""Forward mode (JVP) of every differentiable builtin overload in the builtin gradient table
(tests/builtin_cases/), float64 and float32: the tangent kernel's directional derivative against
a float64 central difference, and against reverse mode by the dot-product identity
w·(J d) = (Jᵀ w)·d (reverse mode is checked against differences on its own in
tests/test_builtin_grads.py)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from builtin_cases import all_rows
from builtin_table import (
    KernelFactory,
    Row,
    fd_directional,
    is_float_code,
    make_arrays,
    np_dtype,
    random_directions,
    random_weights,
    reverse_directional,
    row_inputs,
)
from wpcompat import BACKEND, wp

if BACKEND != "gradloom":
    pytest.skip("forward mode is gradloom's (warp-lang has none)", allow_module_level=True)

from gradloom.autograd import hvp, jvp  # noqa: E402

ROWS = all_rows()
#: builtins whose Hessian-vector products are refused, with the clear error's words: the
#: tangent of atomic_min/max compares with the old value the atomic returns, which reverse mode
#: refuses to differentiate through
GRAD_ROWS = [r for r in ROWS if r.grad]


@pytest.fixture(scope="module")
def factory() -> KernelFactory:
    return KernelFactory(ROWS)


def forward_directional(factory: KernelFactory, row: Row, ft: object,
                        inputs: list[np.ndarray], weights: list[np.ndarray],
                        dirs: list[np.ndarray | None]) -> tuple[np.ndarray, np.ndarray]:
    """Per thread Σ_j w_j · (J d)_j from one jvp of the row's kernel, and Σ_j |w_j|·|(J d)_j|."""
    arrays = make_arrays(row, ft, inputs, grad=False)
    n = len(inputs[0])
    k = len(row.args)
    tangents = [None if d is None else np.asarray(d, dtype=np_dtype("f", ft)) for d in dirs]
    _, touts = jvp(factory.kernel(row, ft), arrays[:k], tangents, dim=n, outputs=arrays[k:])
    total, scale = np.zeros(n), np.zeros(n)
    for t, w, code in zip(touts, weights, row.out):
        if not is_float_code(code):
            continue
        values = np.asarray(t.numpy(), dtype=np.float64).reshape(n, -1)
        total += (values * w.reshape(n, -1)).sum(axis=1)
        scale += (np.abs(values) * np.abs(w.reshape(n, -1))).sum(axis=1)
    return total, scale


@pytest.mark.parametrize("ft", ["float64", "float32"])
@pytest.mark.parametrize("row", GRAD_ROWS, ids=lambda r: r.id)
def test_jvp_matches_central_difference_and_reverse(factory: KernelFactory, row: Row,
                                                     ft: str) -> None:
    if ft == "float32" and not row.f32:
        pytest.skip("float64-only row")
    seed = zlib.crc32(row.id.encode())
    inputs = row_inputs(row, seed)
    dirs = random_directions(row, inputs, seed)
    weights = random_weights(row, len(inputs[0]), seed)
    fd = fd_directional(factory, row, inputs, weights, dirs)
    fwd, scale = forward_directional(factory, row, getattr(wp, ft), inputs, weights, dirs)
    rtol = row.rtol if ft == "float64" else row.rtol32
    atol = 1e-9 if ft == "float64" else 1e-6
    bad = np.flatnonzero(~(np.abs(fwd - fd) <= rtol * (np.abs(fd) + scale) + atol))
    assert bad.size == 0, (
        f"{row.id} {ft}: forward-mode directional derivative differs from central difference "
        f"at threads {bad.tolist()}: jvp {fwd[bad]}, fd {fd[bad]}")
    rev, rscale = reverse_directional(factory, row, getattr(wp, ft), inputs, weights, dirs)
    tight = 1e-12 if ft == "float64" else 1e-5
    bad = np.flatnonzero(~(np.abs(fwd - rev) <= tight * (scale + rscale) + tight))
    assert bad.size == 0, (
        f"{row.id} {ft}: w·(J d) from forward mode differs from (Jᵀ w)·d from reverse mode at "
        f"threads {bad.tolist()}: forward {fwd[bad]}, reverse {rev[bad]}")


def _reverse_gradients(factory: KernelFactory, row: Row, inputs: list[np.ndarray],
                       weights: list[np.ndarray]) -> list[np.ndarray | None]:
    """Reverse-mode (wp.Tape) gradients of Σ w·y per input, float64."""
    arrays = make_arrays(row, wp.float64, inputs, grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(factory.kernel(row, wp.float64), dim=len(inputs[0]), inputs=arrays)
    outs = arrays[len(row.args):]
    tape.backward(grads={o: wp.array(w, dtype=o.dtype) for o, w, c in
                         zip(outs, weights, row.out) if is_float_code(c)})
    return [np.asarray(a.grad.numpy(), dtype=np.float64) if is_float_code(c) else None
            for a, c in zip(arrays, row.args)]


@pytest.mark.parametrize("row", GRAD_ROWS, ids=lambda r: r.id)
def test_hvp_matches_differences_of_reverse_gradients(factory: KernelFactory, row: Row) -> None:
    """H·d of L = Σ w·y (reverse over forward) against the float64 central difference of
    reverse-mode gradients along d, per thread."""
    seed = zlib.crc32(row.id.encode())
    inputs = row_inputs(row, seed)
    dirs = random_directions(row, inputs, seed)
    weights = random_weights(row, len(inputs[0]), seed)
    arrays = make_arrays(row, wp.float64, inputs, grad=False)
    k, n = len(row.args), len(inputs[0])
    kernel = factory.kernel(row, wp.float64)
    seeds = [w if is_float_code(c) else None for w, c in zip(weights, row.out)]
    hv = hvp(kernel, arrays[:k], dirs, dim=n, outputs=arrays[k:], weights=seeds)
    h = 1e-5
    plus = _reverse_gradients(factory, row, [x if d is None else x + h * d
                                             for x, d in zip(inputs, dirs)], weights)
    minus = _reverse_gradients(factory, row, [x if d is None else x - h * d
                                              for x, d in zip(inputs, dirs)], weights)
    for j, (got, gp, gm) in enumerate(zip(hv, plus, minus)):
        if gp is None or gm is None:
            continue
        fd = (gp - gm) / (2 * h)
        values = np.asarray(got.numpy(), dtype=np.float64)
        scale = np.abs(fd).reshape(n, -1).max(axis=1) + np.abs(gp).reshape(n, -1).max(axis=1)
        tol = (row.rtol * 10 * scale + 1e-7).reshape((n,) + (1,) * (fd.ndim - 1))
        bad = np.flatnonzero((~(np.abs(values - fd) <= tol)).reshape(n, -1).any(axis=1))
        assert bad.size == 0, (
            f"{row.id}: H·d of input {j} differs from the central difference of reverse-mode "
            f"gradients at threads {bad.tolist()}: hvp {values[bad].ravel()[:6]}, "
            f"fd {fd[bad].ravel()[:6]}")
