"""Dead operations are dropped before codegen (passes/dead.py): what nothing uses and changes
nothing goes, every observable effect stays, and gradients are unchanged."""

# ruff: noqa: UP018

from __future__ import annotations

import numpy as np
from gradfd import arr, check_kernel

import gradloom as wp
from gradloom import pipeline
from gradloom.ir.nodes import If, Loop, walk_ops


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3d), v: wp.array(dtype=wp.vec3d), g: wp.vec3d,
              dt: wp.float64):
    i = wp.tid()
    x[i] = x[i] + v[i] * dt
    v[i] = v[i] + g * dt


@wp.kernel
def effects(x: wp.array(dtype=float), y: wp.array(dtype=float), n: wp.array(dtype=int)):
    i = wp.tid()
    unused = x[i] * 2.0  # noqa: F841 (dead: a load and a product)
    old = wp.atomic_add(n, 0, 1)  # noqa: F841 (its value is unused, its write is not)
    if x[i] > 0.5:
        wasted = wp.sin(x[i])  # noqa: F841 (dead inside a branch)
        y[i] = 1.0
    k = int(0)
    while k < 3:
        spare = x[i] + float(k)  # noqa: F841 (dead inside a loop)
        k = k + 1
    y[i] = y[i] + float(k)


def _prims(kernel, adjoint: bool) -> list[str]:
    ir, _ = pipeline.kernel_ir(kernel, adjoint)
    return [op.prim for op in walk_ops(ir.body)]


def test_the_adjoint_keeps_no_loads_of_what_only_parameter_gradients_needed() -> None:
    # x and v are read only for the gradients of g and dt, which no launch keeps
    assert "load" not in _prims(integrate, adjoint=True)
    assert _prims(integrate, adjoint=False).count("load") == 9  # x[i], v[i], v[i] again


def test_what_changes_something_stays() -> None:
    ir, _ = pipeline.kernel_ir(effects, False)
    prims = [op.prim for op in walk_ops(ir.body)]
    assert prims.count("atomic_add") == 1 and prims.count("store") == 2
    assert "sin" not in prims and prims.count("load") == 2  # x[i] > 0.5 and y[i] + k
    branch = next(s for s in ir.body.stmts if isinstance(s, If))
    loop = next(s for s in ir.body.stmts if isinstance(s, Loop))
    assert branch.results == () and len(loop.params) == 1  # `wasted` and `spare` are gone


def test_results_and_gradients_are_unchanged() -> None:
    x = wp.array(np.array([0.2, 0.7, 0.9], np.float32))
    y, n = wp.zeros(3, dtype=float), wp.zeros(1, dtype=int)
    wp.launch(effects, 3, inputs=[x, y, n])
    np.testing.assert_array_equal(y.numpy(), [3.0, 4.0, 4.0])
    assert n.numpy()[0] == 3
    rng = np.random.default_rng(4)
    check_kernel(integrate, 4, [arr(rng.uniform(-1, 1, (4, 3)), wp.vec3d),
                                arr(rng.uniform(-1, 1, (4, 3)), wp.vec3d),
                                wp.vec3d(0.0, -9.8, 0.0), 0.05],
                 wrt=[0, 1], outputs=[0, 1])
