"""gradloom.autograd.jvp and forward-mode Jacobians through what programs do besides plain
kernels: views, copies, in-place updates, structs, while/break, atomics, runtime loops; the
expected tangents come from float64 central differences or analytic derivatives."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
from gradloom.autograd import jacobian, jvp
from gradloom.errors import GradloomError

H = 1e-6


def _central(f, x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(f(x + h v) - f(x - h v)) / 2h in float64, f on numpy float64 arrays."""
    return (np.asarray(f(x + H * v)) - np.asarray(f(x - H * v))) / (2 * H)


def _run64(program):
    """A numpy → numpy float64 version of a program of gradloom float64 arrays."""
    def f(x: np.ndarray) -> np.ndarray:
        return program(wp.array(x, dtype=wp.float64)).numpy().astype(np.float64)
    return f


@wp.kernel
def square_into(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def scale_in_place(y: wp.array(dtype=wp.float64), s: wp.float64):
    i = wp.tid()
    y[i] = y[i] * s + wp.sin(y[i])


def views_copies(x, rg: bool = False):
    y = wp.zeros(x.shape[0], dtype=wp.float64, requires_grad=rg)
    wp.launch(square_into, x.shape[0], inputs=[x, y])
    z = wp.clone(y, requires_grad=rg)
    wp.launch(scale_in_place, 3, inputs=[z[1:4], wp.float64(2.0)])  # a view, updated in place
    w = wp.zeros_like(z, requires_grad=rg)
    wp.copy(w, z, dest_offset=1, src_offset=0, count=4)
    w[0:1].assign(z[4:5])
    out = wp.empty_like(w, requires_grad=rg)
    out.assign(w)
    return out


def views_copies_taped(x):
    """views_copies with gradients on its arrays (what reverse mode needs)."""
    return views_copies(x, rg=True)


def test_views_clone_copy_assign_in_place_updates() -> None:
    rng = np.random.default_rng(1)
    x0, v = rng.uniform(-1, 1, 5), rng.normal(size=5)
    out, t = jvp(views_copies, [wp.array(x0, dtype=wp.float64)], [v])
    assert np.allclose(out.numpy(), _run64(views_copies)(x0))
    assert np.allclose(t.numpy(), _central(_run64(views_copies), x0, v), rtol=1e-6, atol=1e-8)


def test_fill_makes_the_tangent_zero() -> None:
    def program(x):
        y = wp.zeros(4, dtype=wp.float64)
        wp.launch(square_into, 4, inputs=[x, y])
        y[1:3].fill_(7.0)
        return y

    x0 = np.arange(1.0, 5.0)
    _, t = jvp(program, [wp.array(x0, dtype=wp.float64)], [np.ones(4)])
    assert t.numpy().tolist() == [2.0, 0.0, 0.0, 8.0]


@wp.struct
class Spring:
    k: wp.float64
    rest: wp.array(dtype=wp.float64)


@wp.kernel
def spring_energy(s: Spring, x: wp.array(dtype=wp.float64), e: wp.array(dtype=wp.float64)):
    i = wp.tid()
    d = x[i] - s.rest[i]
    wp.atomic_add(e, 0, s.k * d * d)


def test_struct_array_fields_and_atomic_add() -> None:
    rng = np.random.default_rng(2)
    x0, r0 = rng.normal(size=6), rng.normal(size=6)
    vx, vr = rng.normal(size=6), rng.normal(size=6)
    s = Spring()
    s.k = 1.5
    s.rest = wp.array(r0, dtype=wp.float64)
    e = wp.zeros(1, dtype=wp.float64)
    _, t = jvp(spring_energy, [s, wp.array(x0, dtype=wp.float64)], [None, vx], dim=6,
               outputs=[e])
    assert np.allclose(t[0].numpy(), [np.sum(2 * 1.5 * (x0 - r0) * vx)])

    def program(rest):  # the tangent of an array inside a struct
        s.rest = rest
        out = wp.zeros(1, dtype=wp.float64)
        wp.launch(spring_energy, 6, inputs=[s, wp.array(x0, dtype=wp.float64), out])
        return out

    _, t = jvp(program, [wp.array(r0, dtype=wp.float64)], [vr])
    assert np.allclose(t.numpy(), [np.sum(-2 * 1.5 * (x0 - r0) * vr)])


@wp.kernel
def newton_sqrt(a: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64),
                steps: wp.array(dtype=wp.int32)):
    i = wp.tid()
    x = a[i]
    n = int(0)
    while True:
        nx = 0.5 * (x + a[i] / x)
        n += 1
        if wp.abs(nx - x) < 1e-12 or n > 50:
            x = nx
            break
        x = nx
    out[i] = x
    steps[i] = n


def test_while_break_runtime_loop() -> None:
    a0 = np.array([0.5, 2.0, 9.0, 30.0])
    v = np.array([1.0, -0.5, 0.25, 2.0])
    out, steps = wp.zeros(4, dtype=wp.float64), wp.zeros(4, dtype=wp.int32)
    _, t = jvp(newton_sqrt, [wp.array(a0, dtype=wp.float64)], [v], dim=4,
               outputs=[out, steps])
    assert np.allclose(out.numpy(), np.sqrt(a0))
    assert np.allclose(t[0].numpy(), v / (2 * np.sqrt(a0)), rtol=1e-9)
    assert t[1] is None  # an integer output has no tangent


@wp.kernel
def running_min(x: wp.array(dtype=wp.float64), lo: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_min(lo, 0, x[i] * x[i])


def test_atomic_min_tangent_of_the_winner() -> None:
    x0 = np.array([3.0, -1.5, 0.7, 2.0, -0.9])
    v = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    lo = wp.array([100.0], dtype=wp.float64)
    _, t = jvp(running_min, [wp.array(x0, dtype=wp.float64)], [v], dim=5, outputs=[lo])
    k = int(np.argmin(x0 * x0))
    assert lo.numpy()[0] == x0[k] ** 2 and t[0].numpy()[0] == 2 * x0[k] * v[k]


def test_forward_jacobian_equals_reverse_and_fd() -> None:
    rng = np.random.default_rng(3)
    x = wp.array(rng.uniform(-1, 1, 5), dtype=wp.float64, requires_grad=True)
    fwd = jacobian(views_copies_taped, inputs=[x], mode="forward")[0, 0].numpy()
    rev = jacobian(views_copies_taped, inputs=[x])[0, 0].numpy()
    fd = wp.autograd.jacobian_fd(views_copies_taped, inputs=[x], eps=1e-6)[0, 0].numpy()
    assert np.allclose(fwd, rev, rtol=1e-12, atol=1e-12)
    assert np.allclose(fwd, fd, rtol=1e-6, atol=1e-8)


def test_gradcheck_checks_both_modes(capsys: pytest.CaptureFixture[str]) -> None:
    x = wp.array(np.linspace(0.1, 1.0, 5), dtype=wp.float64, requires_grad=True)
    assert wp.autograd.gradcheck(views_copies_taped, inputs=[x], modes=("rev", "fwd"),
                                 eps=1e-6)
    report = capsys.readouterr().out
    assert "reverse mode" in report and "forward mode" in report
    with pytest.raises(GradloomError, match="mode must be"):
        wp.autograd.gradcheck(views_copies, inputs=[x], modes=("sideways",))


def test_bad_tangents_are_clear_errors() -> None:
    x = wp.array(np.ones(5), dtype=wp.float64)
    with pytest.raises(GradloomError, match="2 tangents given for 1 inputs"):
        jvp(views_copies, [x], [np.ones(5), None])
    with pytest.raises(GradloomError, match="must match"):
        jvp(views_copies, [x], [np.ones(4)])
    with pytest.raises(GradloomError, match="not an array"):
        jvp(lambda s: views_copies(x), [2.0], [1.0])
    with pytest.raises(GradloomError, match="only float arrays"):
        jvp(lambda a: views_copies(x), [wp.zeros(3, dtype=wp.int32)], [np.ones(3)])


def test_an_array_operation_without_a_forward_rule_is_refused() -> None:
    def program(x):
        y = wp.zeros(5, dtype=wp.float64)
        wp.launch(square_into, 5, inputs=[x, y])
        out = wp.zeros(1, dtype=wp.float64)
        wp.utils.array_sum(y, out=out)
        return out

    with pytest.raises(GradloomError, match="no forward-mode"):
        jvp(program, [wp.array(np.ones(5), dtype=wp.float64)], [np.ones(5)])
