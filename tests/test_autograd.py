"""gradloom.autograd: jacobian_fd, jacobian (reverse mode), gradcheck and its report."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest

import gradloom as wp
import gradloom.autograd as ag

# --------------------------------------------------------------------------------------------
# kernels


@wp.kernel
def square(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def double32(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32)):
    i = wp.tid()
    y[i] = x[i] * 2.0


@wp.kernel
def cube32(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32)):
    i = wp.tid()
    y[i] = x[i] * x[i] * x[i]


@wp.kernel
def dot_cross(v: wp.array(dtype=wp.vec3d), w: wp.vec3d, s: float,
              y: wp.array(dtype=wp.float64), z: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    y[i] = wp.dot(v[i], w) * wp.float64(s)
    z[i] = wp.cross(v[i], w)


@wp.kernel
def consume(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    """Overwrites its own input: a second run on the same arrays would see x = 0."""
    i = wp.tid()
    v = x[i]
    x[i] = 0.0
    y[i] = v * v


@wp.kernel
def mixed(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64),
          idx: wp.array(dtype=wp.int32), k: float,
          p: wp.array(dtype=wp.float64), q: wp.array(dtype=wp.float64)):
    i = wp.tid()
    p[i] = a[i] * b[i] + wp.float64(k)
    q[i] = a[i] - b[idx[i]] * b[idx[i]]


@wp.kernel
def accumulate(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = y[i] + x[i] * x[i]


@wp.kernel
def scale(x: wp.array(dtype=wp.float64), c: float, y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = x[i] * wp.float64(c)


@wp.kernel
def sum_sq_vec(v: wp.array(dtype=wp.vec3d), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.dot(v[i], v[i])


# --------------------------------------------------------------------------------------------
# helpers


def f64(values: Any, requires_grad: bool = True) -> Any:
    return wp.array(np.asarray(values, dtype=np.float64), dtype=wp.float64,
                    requires_grad=requires_grad)


def out64(n: int) -> Any:
    return wp.zeros(n, dtype=wp.float64, requires_grad=True)


X = [1.0, 2.0, -3.0, 0.5]


def cross_block(w: np.ndarray) -> np.ndarray:
    """d(v × w)/dv: column k is e_k × w."""
    return np.stack([np.cross(np.eye(3)[k], w) for k in range(3)], axis=1)


class FakeTape:
    """Stands in for wp.Tape on y = f(x) with a known elementwise derivative dy/dx = d(x).

    `seen` is filled by the Python function under test with (x, y) of each run; backward
    accumulates factor * d(x) * seed into x.grad, as a tape would (scaled to fake a wrong one).
    """

    def __init__(self, seen: list[Any], derivative: Any, factor: float = 1.0) -> None:
        self.seen, self.derivative, self.factor = seen, derivative, factor
        self.backward_calls = 0

    def __enter__(self) -> FakeTape:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def backward(self, loss: Any = None, grads: Any = None) -> None:
        x, y = self.seen[-1]
        (seed,) = [g for a, g in grads.items() if a is y]
        x.grad.numpy()[...] += self.factor * self.derivative(x.numpy(), seed.numpy())
        self.backward_calls += 1

    def zero(self) -> None:
        self.seen[-1][0].grad.zero_()


def square_function(seen: list[Any]) -> Any:
    def f(x: Any) -> Any:
        y = out64(x.shape[0])
        wp.launch(square, x.shape[0], inputs=[x], outputs=[y])
        seen.append((x, y))
        return y

    return f


# --------------------------------------------------------------------------------------------
# finite differences


def test_jacobian_fd_of_square_is_diag_2x() -> None:
    x, y = f64(X), out64(4)
    jacs = ag.jacobian_fd(square, 4, inputs=[x], outputs=[y])
    assert list(jacs) == [(0, 0)]
    jac = jacs[0, 0]
    assert isinstance(jac, wp.array)
    assert jac.dtype == wp.float64 and jac.shape == (4, 4)
    np.testing.assert_allclose(jac.numpy(), np.diag(2 * np.array(X)), atol=1e-8)


def test_jacobian_fd_leaves_user_arrays_unchanged() -> None:
    x, y = f64(X), out64(4)
    y.numpy()[...] = 7.0
    ag.jacobian_fd(square, 4, inputs=[x], outputs=[y])
    np.testing.assert_array_equal(x.numpy(), X)
    np.testing.assert_array_equal(y.numpy(), 7.0)
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)


def test_jacobian_fd_divides_by_the_step_float32_actually_stores() -> None:
    # At 1000 float32 steps are 6.1e-5 apart: x ± 0.01 is stored ~0.1 % off, so dividing by
    # 2*eps would give 1.998 instead of 2. Dividing by the stored step, in float64, gives 2.
    x = wp.array(np.array([1000.0, -1000.0, 3.0], dtype=np.float32), dtype=wp.float32,
                 requires_grad=True)
    y = wp.zeros(3, dtype=wp.float32, requires_grad=True)
    jac = ag.jacobian_fd(double32, 3, inputs=[x], outputs=[y], eps=1e-2)[0, 0].numpy()
    assert jac.dtype == np.float64
    np.testing.assert_allclose(jac, 2 * np.eye(3), rtol=1e-12, atol=0)


def test_jacobian_fd_float32_cubic_close_to_analytic() -> None:
    xs = np.array([1.3, -0.7, 2.1], dtype=np.float32)
    x = wp.array(xs, dtype=wp.float32, requires_grad=True)
    y = wp.zeros(3, dtype=wp.float32, requires_grad=True)
    jac = ag.jacobian_fd(cube32, 3, inputs=[x], outputs=[y], eps=1e-2)[0, 0].numpy()
    np.testing.assert_allclose(jac, np.diag(3 * xs.astype(np.float64) ** 2), rtol=1e-3, atol=1e-4)


def test_jacobian_fd_too_small_eps_is_an_error() -> None:
    x = wp.array(np.array([1.0e6], dtype=np.float32), dtype=wp.float32, requires_grad=True)
    y = wp.zeros(1, dtype=wp.float32, requires_grad=True)
    with pytest.raises(wp.GradloomError, match="eps=1e-06 does not change component 0 of input 'x'"):
        ag.jacobian_fd(double32, 1, inputs=[x], outputs=[y], eps=1e-6)


def test_jacobian_fd_vector_components_and_scalar_params() -> None:
    v_np = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [0.0, 0.0, 1.0], [3.0, 1.0, -2.0]])
    w_np = np.array([0.3, -1.2, 2.0])
    v = wp.array(v_np, dtype=wp.vec3d, requires_grad=True)
    y = out64(4)
    z = wp.zeros(4, dtype=wp.vec3d, requires_grad=True)
    jacs = ag.jacobian_fd(dot_cross, 4, inputs=[v, wp.vec3d(*w_np), 2.5], outputs=[y, z])
    assert set(jacs) == {(0, 0), (0, 1)}  # the vec3d and float parameters are not arrays
    assert jacs[0, 0].shape == (4, 12) and jacs[0, 1].shape == (12, 12)
    expect_y = np.kron(np.eye(4), 2.5 * w_np[None, :])
    expect_z = np.kron(np.eye(4), cross_block(w_np))
    np.testing.assert_allclose(jacs[0, 0].numpy(), expect_y, atol=1e-8)
    np.testing.assert_allclose(jacs[0, 1].numpy(), expect_z, atol=1e-8)


def test_jacobian_fd_runs_on_fresh_copies_when_a_kernel_overwrites_its_input() -> None:
    x, y = f64(X), out64(4)
    jac = ag.jacobian_fd(consume, 4, inputs=[x], outputs=[y])[0, 0].numpy()
    np.testing.assert_allclose(jac, np.diag(2 * np.array(X)), atol=1e-8)
    np.testing.assert_array_equal(x.numpy(), X)  # the user's input was never zeroed
    np.testing.assert_array_equal(y.numpy(), 0.0)


def test_jacobian_fd_same_array_as_input_and_output() -> None:
    # x[i] = x[i]**2 in place: the Jacobian of x after the launch w.r.t. x before it.
    x = f64(X)
    jac = ag.jacobian_fd(square, 4, inputs=[x], outputs=[x])[0, 0].numpy()
    np.testing.assert_allclose(jac, np.diag(2 * np.array(X)), atol=1e-8)
    np.testing.assert_array_equal(x.numpy(), X)


def test_jacobian_fd_skips_ints_scalars_and_arrays_without_requires_grad() -> None:
    a, b = f64([1.0, 2.0]), f64([3.0, 4.0])
    idx = wp.array(np.array([1, 0], dtype=np.int32), dtype=wp.int32)
    p, q = out64(2), out64(2)
    assert set(ag.jacobian_fd(mixed, 2, inputs=[a, b, idx, 1.0], outputs=[p, q])) == {
        (0, 0), (0, 1), (1, 0), (1, 1)}
    b_const = f64([3.0, 4.0], requires_grad=False)
    q_const = out64(2)
    q_const.requires_grad = False
    assert set(ag.jacobian_fd(mixed, 2, inputs=[a, b_const, idx, 1.0], outputs=[p, q_const])) == {
        (0, 0)}


def test_jacobian_fd_cross_terms() -> None:
    a, b = f64([1.0, 2.0]), f64([3.0, 4.0])
    idx = wp.array(np.array([1, 0], dtype=np.int32), dtype=wp.int32)
    jacs = ag.jacobian_fd(mixed, 2, inputs=[a, b, idx, 1.0], outputs=[out64(2), out64(2)])
    np.testing.assert_allclose(jacs[1, 0].numpy(), np.diag([1.0, 2.0]), atol=1e-8)  # dp/db = a
    # q[i] = a[i] - b[idx[i]]**2 with idx = [1, 0]: dq0/db1 = -8, dq1/db0 = -6
    np.testing.assert_allclose(jacs[1, 1].numpy(), [[0.0, -8.0], [-6.0, 0.0]], atol=1e-8)


def test_input_output_mask_by_name_and_index() -> None:
    a, b = f64([1.0, 2.0]), f64([3.0, 4.0])
    idx = wp.array(np.array([1, 0], dtype=np.int32), dtype=wp.int32)
    args = {"inputs": [a, b, idx, 1.0], "outputs": [out64(2), out64(2)]}
    jacs = ag.jacobian_fd(mixed, 2, **args, input_output_mask=[("a", "q"), (1, 0), ("a", 1)])
    assert list(jacs) == [(0, 1), (1, 0)]
    with pytest.raises(wp.GradloomError, match="no input 'c'; the inputs are a, b, idx, k"):
        ag.jacobian_fd(mixed, 2, **args, input_output_mask=[("c", "p")])
    with pytest.raises(wp.GradloomError, match="no output 5"):
        ag.jacobian_fd(mixed, 2, **args, input_output_mask=[(0, 5)])
    with pytest.raises(wp.GradloomError, match="'idx'.*not a float array with requires_grad"):
        ag.jacobian_fd(mixed, 2, **args, input_output_mask=[("idx", "p")])


def test_nothing_to_differentiate_is_an_error() -> None:
    x, y = f64(X, requires_grad=False), out64(4)
    with pytest.raises(wp.GradloomError, match="nothing to differentiate"):
        ag.jacobian_fd(square, 4, inputs=[x], outputs=[y])


def test_kernel_argument_errors() -> None:
    x, y = f64(X), out64(4)
    with pytest.raises(wp.GradloomError, match="dim is required"):
        ag.jacobian_fd(square, inputs=[x], outputs=[y])
    with pytest.raises(wp.GradloomError, match=r"takes 2 arguments \(x, y\); got 1 inputs and 0"):
        ag.jacobian_fd(square, 4, inputs=[x])
    with pytest.raises(wp.GradloomError, match="gradcheck needs the inputs"):
        ag.gradcheck(square, 4)


def test_max_inputs_per_var_leaves_later_columns_nan() -> None:
    # as Warp: the columns not computed are NaN, not zeros that look like a derivative
    x, y = f64(X), out64(4)
    jac = ag.jacobian_fd(square, 4, inputs=[x], outputs=[y], max_inputs_per_var=2)[0, 0].numpy()
    expect = np.diag(2 * np.array(X))
    expect[:, 2:] = np.nan
    np.testing.assert_allclose(jac, expect, atol=1e-8)


def test_jacobian_fd_of_python_function_returning_arrays() -> None:
    def f(x: Any, c: float) -> list[Any]:
        y, z = out64(4), out64(4)
        wp.launch(square, 4, inputs=[x], outputs=[y])
        wp.launch(scale, 4, inputs=[y, c], outputs=[z])
        return [y, z]

    x = f64(X)
    jacs = ag.jacobian_fd(f, inputs=[x, 3.0])
    assert set(jacs) == {(0, 0), (0, 1)}
    np.testing.assert_allclose(jacs[0, 1].numpy(), np.diag(6 * np.array(X)), atol=1e-7)
    np.testing.assert_array_equal(x.numpy(), X)


def test_python_function_writing_captured_outputs_is_reset_before_each_run() -> None:
    y = out64(4)
    y.numpy()[...] = 5.0

    def f(x: Any) -> None:
        wp.launch(accumulate, 4, inputs=[x], outputs=[y])  # y += x*x: accumulates across runs

    jac = ag.jacobian_fd(f, inputs=[f64(X)], outputs=[y])[0, 0].numpy()
    np.testing.assert_allclose(jac, np.diag(2 * np.array(X)), atol=1e-8)
    np.testing.assert_array_equal(y.numpy(), 5.0)


def test_user_arrays_unchanged_when_the_function_raises() -> None:
    y = out64(4)
    calls = []

    def f(x: Any) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("boom")
        wp.launch(accumulate, 4, inputs=[x], outputs=[y])

    x = f64(X)
    with pytest.raises(RuntimeError, match="boom"):
        ag.jacobian_fd(f, inputs=[x], outputs=[y])
    np.testing.assert_array_equal(x.numpy(), X)
    np.testing.assert_array_equal(y.numpy(), 0.0)


def test_python_function_must_return_arrays() -> None:
    with pytest.raises(wp.GradloomError, match="returned no arrays and no outputs were given"):
        ag.jacobian_fd(lambda x: None, inputs=[f64(X)])
    with pytest.raises(wp.GradloomError, match="must return a gradloom array"):
        ag.jacobian_fd(lambda x: 3.0, inputs=[f64(X)])


# --------------------------------------------------------------------------------------------
# the comparison and its report, on hand-made Jacobians


def test_compare_jacobians_pass_fail_and_worst_entry() -> None:
    fd = {(0, 0): np.diag([2.0, 4.0, -6.0]), (0, 1): np.ones((2, 3))}
    ad = {(0, 0): np.diag([2.0, 4.0, -9.0]), (0, 1): np.ones((2, 3)) + 5e-4}
    checks = ag.compare_jacobians(ad, fd, input_labels=["x"], output_labels=["y", "z"])
    bad, good = checks
    assert (bad.input_label, bad.output_label, bad.passed, bad.has_nan) == ("x", "y", False, False)
    assert bad.worst == (2, 2) and bad.ad_value == -9.0 and bad.fd_value == -6.0
    assert bad.max_abs_error == pytest.approx(3.0) and bad.max_rel_error == pytest.approx(0.5)
    assert good.passed and good.max_abs_error == pytest.approx(5e-4)


def test_compare_jacobians_tolerance_rule_is_atol_plus_rtol_fd() -> None:
    fd = {(0, 0): np.array([[100.0]])}
    assert ag.compare_jacobians({(0, 0): np.array([[101.0]])}, fd)[0].passed  # 1 <= 1e-3 + 1
    assert not ag.compare_jacobians({(0, 0): np.array([[101.1]])}, fd)[0].passed
    assert not ag.compare_jacobians({(0, 0): np.array([[1.1e-3]])}, {(0, 0): np.zeros((1, 1))})[
        0].passed


def test_compare_jacobians_nan_fails() -> None:
    fd = {(0, 0): np.eye(2)}
    check = ag.compare_jacobians({(0, 0): np.array([[1.0, np.nan], [0.0, 1.0]])}, fd)[0]
    assert check.has_nan and not check.passed and check.worst == (0, 1)
    assert "NaN" in ag.format_report("kernel 'k'", [check], atol=1e-3, rtol=1e-2)


def test_compare_jacobians_respects_max_per_var_cuts() -> None:
    fd = {(0, 0): np.eye(3)}
    ad = {(0, 0): np.eye(3)}
    ad[0, 0][2, 2] = 10.0
    assert not ag.compare_jacobians(ad, fd)[0].passed
    assert ag.compare_jacobians(ad, fd, max_outputs_per_var=2)[0].passed
    assert ag.compare_jacobians(ad, fd, max_inputs_per_var=2)[0].passed


def test_compare_jacobians_shape_mismatch_and_missing_pair() -> None:
    with pytest.raises(wp.GradloomError, match="shapes differ"):
        ag.compare_jacobians({(0, 0): np.eye(2)}, {(0, 0): np.eye(3)})
    with pytest.raises(wp.GradloomError, match=r"no autodiff Jacobian for the pair \(input 0, output 1\)"):
        ag.compare_jacobians({(0, 0): np.eye(2)}, {(0, 1): np.eye(2)})


def test_format_report_rows_and_default_labels() -> None:
    fd = {(0, 0): np.eye(2), (1, 0): np.eye(2)}
    ad = {(0, 0): np.eye(2), (1, 0): 2 * np.eye(2)}
    report = ag.format_report("function 'f'", ag.compare_jacobians(ad, fd), atol=1e-3, rtol=1e-2,
                              eps=1e-4)
    head, header, row0, row1 = report.splitlines()
    assert head.startswith("gradcheck of function 'f': FAILED") and "eps=0.0001" in head
    assert header.split()[:2] == ["input", "output"]
    assert row0.startswith("input 0") and "output 0" in row0 and row0.endswith("PASS")
    assert row1.startswith("input 1") and row1.endswith("FAIL") and "1.000e+00" in row1


def test_gradcheck_error_is_an_assertion_and_a_value_error() -> None:
    assert issubclass(ag.GradcheckError, AssertionError)
    assert issubclass(ag.GradcheckError, ValueError)
    assert issubclass(ag.GradcheckError, wp.GradloomError)


# --------------------------------------------------------------------------------------------
# reverse-mode orchestration with a stand-in tape (runs before wp.Tape exists)


def test_jacobian_seeds_one_hot_rows_with_a_stand_in_tape(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    tape = FakeTape(seen, lambda x, seed: 2 * x * seed)
    monkeypatch.setattr(ag, "_new_tape", lambda: tape)
    x = f64(X)
    jac = ag.jacobian(square_function(seen), inputs=[x])[0, 0].numpy()
    np.testing.assert_allclose(jac, np.diag(2 * np.array(X)), atol=0)
    assert tape.backward_calls == 4
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)  # ran on a copy
    np.testing.assert_array_equal(x.numpy(), X)


def test_jacobian_rows_of_vector_inputs_with_a_stand_in_tape(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    def f(v: Any) -> Any:
        y = out64(v.shape[0])
        wp.launch(sum_sq_vec, v.shape[0], inputs=[v], outputs=[y])
        seen.append((v, y))
        return y

    tape = FakeTape(seen, lambda v, seed: 2 * v * seed[:, None])
    monkeypatch.setattr(ag, "_new_tape", lambda: tape)
    v_np = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])
    v = wp.array(v_np, dtype=wp.vec3d, requires_grad=True)
    jac = ag.jacobian(f, inputs=[v], max_outputs_per_var=1)[0, 0].numpy()
    assert jac.shape == (2, 6)
    nan = np.nan
    np.testing.assert_allclose(jac, [[2.0, 4.0, 6.0, 0, 0, 0], [nan] * 6])  # row 1 capped: NaN


@pytest.mark.parametrize("factor", [1.0, 1.5])
def test_gradcheck_with_a_stand_in_tape(monkeypatch: pytest.MonkeyPatch, capsys: Any,
                                        factor: float) -> None:
    seen: list[Any] = []
    monkeypatch.setattr(ag, "_new_tape", lambda: FakeTape(seen, lambda x, s: 2 * x * s, factor))
    f = square_function(seen)
    ok = ag.gradcheck(f, inputs=[f64(X)], raise_exception=False)
    printed = capsys.readouterr().out
    assert ok is (factor == 1.0)
    assert "gradcheck of function" in printed
    row = printed.splitlines()[2]
    assert row.startswith("x ") and "output 0" in row
    assert row.endswith("PASS" if factor == 1.0 else "FAIL")


def test_gradcheck_raises_with_the_report(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    seen: list[Any] = []
    monkeypatch.setattr(ag, "_new_tape", lambda: FakeTape(seen, lambda x, s: 2 * x * s, 0.0))
    with pytest.raises(AssertionError) as info:
        ag.gradcheck(square_function(seen), inputs=[f64(X)], show_summary=False)
    assert isinstance(info.value, ag.GradcheckError)
    message = str(info.value)
    assert "FAILED" in message and "FAIL" in message.splitlines()[2]
    assert capsys.readouterr().out == ""  # show_summary=False prints nothing




# --------------------------------------------------------------------------------------------
# optional plots


def test_plot_jacobians_writes_a_png_or_says_why_not(tmp_path: Any, capsys: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    ag.jacobian_fd(square, 4, inputs=[f64(X)], outputs=[out64(4)], plot_jacobians=True)
    printed = capsys.readouterr().out
    if importlib.util.find_spec("matplotlib") is None:
        assert "matplotlib is not installed; skipped the plot" in printed
    else:
        assert [p.name for p in tmp_path.iterdir()] == [
            "kernel_square_Jacobian_finite_differences.png"]


# --------------------------------------------------------------------------------------------
# reverse mode with the real tape (skipped until wp.Tape exists)


def test_jacobian_of_square_is_diag_2x() -> None:
    x, y = f64(X), out64(4)
    jac = ag.jacobian(square, 4, inputs=[x], outputs=[y])[0, 0].numpy()
    np.testing.assert_allclose(jac, np.diag(2 * np.array(X)), rtol=1e-12, atol=0)
    np.testing.assert_array_equal(x.numpy(), X)
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)


def test_jacobian_matches_fd_for_vectors_and_several_outputs() -> None:
    v_np = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [3.0, 1.0, -2.0]])
    v = wp.array(v_np, dtype=wp.vec3d, requires_grad=True)
    args = {"inputs": [v, wp.vec3d(0.3, -1.2, 2.0), 2.5],
            "outputs": [out64(3), wp.zeros(3, dtype=wp.vec3d, requires_grad=True)]}
    ad = ag.jacobian(dot_cross, 3, **args)
    fd = ag.jacobian_fd(dot_cross, 3, **args)
    assert set(ad) == set(fd) == {(0, 0), (0, 1)}
    for key in fd:
        np.testing.assert_allclose(ad[key].numpy(), fd[key].numpy(), atol=1e-8)


def test_gradcheck_passes_on_kernels_and_functions(capsys: Any) -> None:
    a, b = f64([1.0, 2.0]), f64([3.0, 4.0])
    idx = wp.array(np.array([1, 0], dtype=np.int32), dtype=wp.int32)
    assert ag.gradcheck(mixed, 2, inputs=[a, b, idx, 1.0], outputs=[out64(2), out64(2)],
                        atol=1e-6, rtol=1e-6)
    assert ag.gradcheck(consume, 4, inputs=[f64(X)], outputs=[out64(4)], atol=1e-6, rtol=1e-6)

    def f(x: Any) -> Any:
        y, z = out64(4), out64(4)
        wp.launch(square, 4, inputs=[x], outputs=[y])
        wp.launch(scale, 4, inputs=[y, 3.0], outputs=[z])
        return z

    assert ag.gradcheck(f, inputs=[f64(X)], atol=1e-6, rtol=1e-6)
    assert "FAIL" not in capsys.readouterr().out


def test_gradcheck_float32_with_default_tolerances() -> None:
    x = wp.array(np.array([1.3, -0.7, 2.1], dtype=np.float32), dtype=wp.float32,
                 requires_grad=True)
    assert ag.gradcheck(cube32, 3, inputs=[x], outputs=[wp.zeros(3, dtype=wp.float32,
                                                                 requires_grad=True)], eps=1e-2)


def test_gradcheck_fails_when_part_of_the_function_bypasses_the_tape() -> None:
    # y = x*x is computed in numpy, out of the tape's sight: autodiff sees z = 3*y with y a
    # leaf, so dz/dx = 0, while finite differences see 6x. The check must catch it.
    def f(x: Any) -> Any:
        y = f64(x.numpy() ** 2)
        z = out64(4)
        wp.launch(scale, 4, inputs=[y, 3.0], outputs=[z])
        return z

    assert not ag.gradcheck(f, inputs=[f64(X)], raise_exception=False, show_summary=False)
    with pytest.raises(ag.GradcheckError, match="FAIL"):
        ag.gradcheck(f, inputs=[f64(X)], show_summary=False)
    ad = ag.jacobian(f, inputs=[f64(X)])[0, 0].numpy()
    np.testing.assert_array_equal(ad, 0.0)


def test_jacobian_of_function_writing_captured_outputs_restores_them() -> None:
    y = out64(4)
    y.numpy()[...] = 5.0
    grad_before = y.grad

    def f(x: Any) -> None:
        wp.launch(accumulate, 4, inputs=[x], outputs=[y])

    jac = ag.jacobian(f, inputs=[f64(X)], outputs=[y])[0, 0].numpy()
    np.testing.assert_allclose(jac, np.diag(2 * np.array(X)), rtol=1e-12, atol=0)
    np.testing.assert_array_equal(y.numpy(), 5.0)
    assert y.grad is grad_before
    np.testing.assert_array_equal(y.grad.numpy(), 0.0)
