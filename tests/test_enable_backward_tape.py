"""A kernel compiled with `enable_backward=False` launched inside a recorded region: as in
warp-lang, `backward()` warns, naming the kernel, and no gradient flows through that launch;
the other launches' gradients are right (analytic derivatives)."""

import warnings
from typing import Any

import numpy as np
import pytest
from cuda_env import device_env
from gradfd import arr, build, check_program

import gradloom as wp
from gradloom.errors import GradloomWarning, TapeError

f64 = wp.float64


@wp.kernel(enable_backward=False)
def prescribe(x: wp.array(dtype=f64), value: f64):
    i = wp.tid()
    x[i] = value


@wp.kernel
def square(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def scale_into(z: wp.array(dtype=f64), y: wp.array(dtype=f64), out: wp.array(dtype=f64)):
    i = wp.tid()
    out[i] = z[i] * y[i]


def _record(x0, z0):
    x = wp.array(x0, dtype=f64, requires_grad=True)
    z = wp.array(z0, dtype=f64, requires_grad=True)
    y = wp.zeros(3, dtype=f64, requires_grad=True)
    out = wp.zeros(3, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 3, inputs=[x, y])
        wp.launch(scale_into, 3, inputs=[z, y, out])
        wp.launch(prescribe, 3, inputs=[z, f64(2.0)])  # prescribed positions, each substep
    return tape, x, z, out


def test_backward_warns_and_skips_the_launch():
    x0, z0 = np.array([0.5, -1.0, 2.0]), np.array([3.0, 4.0, 5.0])
    tape, x, z, out = _record(x0, z0)
    with pytest.warns(GradloomWarning, match="'.*prescribe' was defined with enable_backward=False"):
        tape.backward(grads={out: wp.array(np.ones(3), dtype=f64), z: wp.array(np.ones(3),
                                                                                dtype=f64)})
    # out = z0 * x², so d/dx = 2 z0 x; z's gradient: its seed (the skipped launch consumed
    # nothing) plus x² from scale_into
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * z0 * x0, rtol=1e-15)
    np.testing.assert_allclose(z.grad.numpy(), 1.0 + x0 * x0, rtol=1e-15)


def test_the_warning_points_at_the_callers_line():
    tape, _, _, out = _record(np.ones(3), np.ones(3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tape.backward(grads={out: wp.array(np.ones(3), dtype=f64)})
    assert len(caught) == 1 and caught[0].filename == __file__


def test_module_option_disables_backward_too():
    @wp.kernel(module="unique")
    def double(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
        i = wp.tid()
        y[i] = x[i] * f64(2.0)

    wp.set_module_options({"enable_backward": False}, module=double.module)
    x = wp.array(np.array([1.0, 2.0]), dtype=f64, requires_grad=True)
    y = wp.zeros(2, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(double, 2, inputs=[x, y])
    with pytest.warns(GradloomWarning, match="'.*double' .*by its module's options"):
        tape.backward(grads={y: wp.array(np.ones(2), dtype=f64)})
    assert not np.any(x.grad.numpy())


# -- substeps with prescribed targets (a kinematic driver, as simulators write them) -----------

@wp.kernel(enable_backward=False)
def set_target(target: wp.array(dtype=f64), t: f64):
    target[0] = wp.sin(t)
    target[1] = t * f64(0.5)


@wp.kernel
def spring_step(x: wp.array(dtype=f64), target: wp.array(dtype=f64), k: wp.array(dtype=f64),
                x_new: wp.array(dtype=f64)):
    i = wp.tid()
    x_new[i] = x[i] + f64(0.1) * k[0] * (target[i] - x[i]) * x[i]


def _substeps(arrays, record_targets=True, steps=4):
    x, k, target = arrays
    for s in range(steps):
        wp.launch(set_target, 1, inputs=[target, f64(0.3 * (s + 1))], record_tape=record_targets)
        x_new = wp.zeros(x.shape[0], dtype=f64, requires_grad=True)
        wp.launch(spring_step, x.shape[0], inputs=[x, target, k, x_new])
        x = x_new
    return [x]


def _substep_args():
    return [arr([0.4, -0.8, 1.2]), arr([2.5]), arr([0.0, 0.0, 0.7])]


def test_substeps_with_a_prescribed_target_match_finite_differences():
    # the targets are set before anything reads them: the gradients of the initial state and
    # the stiffness are exact although set_target's launches have no adjoint
    with pytest.warns(GradloomWarning, match="set_target"):
        check_program(_substeps, _substep_args(), wrt=[0, 1], arg_names=["x", "k", "target"])


def _substep_grads(record_targets: bool) -> tuple[list[Any], list[Any]]:
    arrays = build(_substep_args())
    tape = wp.Tape()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tape:
            (out,) = _substeps(arrays, record_targets)
        tape.backward(grads={out: wp.array(np.array([1.0, -2.0, 0.5]), dtype=f64)})
    return [a.grad.numpy() for a in arrays], caught


def test_the_skipped_launches_contribute_nothing():
    """Recorded or not recorded at all, the targets' launches change no gradient (the target's
    own included: no adjoint zeroes what they overwrote); one warning per recorded launch."""
    recorded, caught = _substep_grads(True)
    unrecorded, none = _substep_grads(False)
    for a, b in zip(recorded, unrecorded, strict=True):
        np.testing.assert_array_equal(a, b)
    assert np.any(recorded[2][:2])  # the targets' gradient really is left where it was
    assert len(none) == 0 and len(caught) == 4
    assert all("'set_target'" in str(w.message) and "on the kernel" in str(w.message)
               for w in caught)


def _copy_into(src: wp.array(dtype=f64), dst: wp.array(dtype=f64)):
    i = wp.tid()
    dst[i] = src[i]


copy_into = wp.kernel(_copy_into, enable_backward=False)
copy_into_differentiable = wp.kernel(_copy_into, module="unique")


def test_checks_that_protect_an_adjoint_do_not_refuse_a_kernel_without_one():
    # two views of one array, one written: a differentiable kernel is refused when recorded
    # (its adjoint would treat two arrays); one without an adjoint records and is skipped
    x = wp.array(np.array([1.0, 2.0, 3.0, 4.0]), dtype=f64, requires_grad=True)
    y = wp.zeros(4, dtype=f64, requires_grad=True)
    with wp.Tape(), pytest.raises(TapeError, match="same array"):
        wp.launch(copy_into_differentiable, 2, inputs=[x[0:2], x[2:4]])
    tape = wp.Tape()
    with tape:
        wp.launch(copy_into, 2, inputs=[x[0:2], x[2:4]])
        wp.launch(square, 4, inputs=[x, y])
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 1.0, 2.0])
    with pytest.warns(GradloomWarning, match="copy_into"):
        tape.backward(grads={y: wp.array(np.ones(4), dtype=f64)})
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 2.0, 4.0])  # d(x²)/dx, nothing more


def test_a_kernel_option_enabling_backward_wins_over_its_module():
    @wp.kernel(module="unique", enable_backward=True,
               module_options={"enable_backward": False})
    def cube(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
        i = wp.tid()
        y[i] = x[i] * x[i] * x[i]

    x = wp.array(np.array([0.5, -2.0]), dtype=f64, requires_grad=True)
    y = wp.zeros(2, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(cube, 2, inputs=[x, y])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tape.backward(grads={y: wp.array(np.ones(2), dtype=f64)})
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * np.array([0.25, 4.0]), rtol=1e-15)


@wp.kernel(enable_backward=False)
def fill_any(x: wp.array(dtype=Any), value: Any):
    i = wp.tid()
    x[i] = value


def test_generic_kernels_and_replayed_commands():
    x = wp.array(np.array([0.5, -1.0, 2.0]), dtype=f64, requires_grad=True)
    y = wp.zeros(3, dtype=f64, requires_grad=True)
    out = wp.zeros(3, dtype=f64, requires_grad=True)
    z = wp.array(np.array([3.0, 4.0, 5.0]), dtype=f64, requires_grad=True)
    cmd = wp.launch(prescribe, 3, inputs=[z, f64(2.0)], record_cmd=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 3, inputs=[x, y])
        wp.launch(scale_into, 3, inputs=[z, y, out])
        cmd.launch()  # recorded on the tape, like a plain launch (docs/differences.md)
        wp.launch(fill_any, 3, inputs=[y, f64(0.0)])  # an overload of a generic kernel
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tape.backward(grads={out: wp.array(np.ones(3), dtype=f64)})
    assert [str(w.message).split("'")[1].split(".")[-1] for w in caught] == \
        ["fill_any", "prescribe"]
    # out = z x² with z's values before the replay: d/dx = 2 z x, d/dz = x²
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * np.array([3.0, 4.0, 5.0]) * x.numpy())
    np.testing.assert_allclose(z.grad.numpy(), x.numpy() ** 2)


def test_visualize_zero_and_reset_with_a_skipped_launch():
    x0, z0 = np.array([0.5, -1.0, 2.0]), np.array([3.0, 4.0, 5.0])
    tape, x, z, out = _record(x0, z0)
    assert "prescribe" in tape.visualize()
    with pytest.warns(GradloomWarning):
        tape.backward(grads={out: wp.array(np.ones(3), dtype=f64)})
    tape.zero()
    assert not np.any(x.grad.numpy()) and not np.any(z.grad.numpy())
    tape.reset()
    assert tape.records == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tape.backward(grads={out: wp.array(np.ones(3), dtype=f64)})  # nothing left to skip


# -- CUDA records (on the GPU, and on tests/fake_cuda.py's stand-in driver) -------------------

@pytest.fixture(params=["fake", "gpu"])
def env(request):
    yield from device_env(request.param, [prescribe, square, scale_into])


def test_cuda_launches_are_skipped_the_same_way(env):
    x0, z0 = np.array([0.5, -1.0, 2.0]), np.array([3.0, 4.0, 5.0])
    x = wp.array(x0, dtype=f64, device="cuda", requires_grad=True)
    z = wp.array(z0, dtype=f64, device="cuda", requires_grad=True)
    y = wp.zeros(3, dtype=f64, device="cuda", requires_grad=True)
    out = wp.zeros(3, dtype=f64, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 3, inputs=[x, y], device="cuda")
        wp.launch(scale_into, 3, inputs=[z, y, out], device="cuda")
        wp.launch(prescribe, 3, inputs=[z, f64(2.0)], device="cuda")
    assert type(tape.records[-1]).__name__ == "CudaLaunchRecord"
    with pytest.warns(GradloomWarning, match="prescribe"):
        tape.backward(grads={out: wp.ones(3, dtype=f64, device="cuda")})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * z0 * x0, rtol=1e-14)
    np.testing.assert_allclose(z.grad.numpy(), x0 * x0, rtol=1e-14)
