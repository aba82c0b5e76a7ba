"""CUDA graphs and recorded commands: `wp.launch(..., record_cmd=True)` on CUDA, and
`wp.ScopedCapture(device="cuda")` / `wp.capture_launch` through the driver's stream capture —
a forward step, `tape.backward()` and `tape.zero()` captured and replayed.

Runs on a GPU ("gpu", skipped without one) and against tests/fake_cuda.py ("fake"), which
records the work queued on a capturing stream, replays it at each graph launch, and refuses —
as the driver does — calls that are not stream work while a capture is active (unless the
thread's capture mode is relaxed), copies from pageable memory and copies to the host.
"""

from __future__ import annotations

import numpy as np
import pytest
from cuda_env import device_env
from test_cuda_tape import dot_loss, horner, program, square_in_place, wave

import gradloom as wp
from gradloom.errors import GradloomError, KernelRuntimeError, LaunchError
from gradloom.runtime.capturing import capturing

f64 = wp.float64


@wp.kernel
def axpy(a: f64, x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def read_ahead(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = x[i + 1]


KERNELS = [axpy, read_ahead, wave, horner, dot_loss, square_in_place]


@pytest.fixture(params=["fake", "gpu"])
def env(request):
    yield from device_env(request.param, KERNELS)


def darr(values):
    return wp.array(np.asarray(values, dtype=np.float64), dtype=f64, device="cuda")


# --------------------------------------------------------------------------------------------
# record_cmd


def test_record_cmd_runs_when_launched_and_takes_new_parameters(env):
    x, y = darr([1.0, 2.0, 3.0]), darr([0.0, 0.0, 0.0])
    cmd = wp.launch(axpy, 3, inputs=[2.0, x, y], device="cuda", record_cmd=True)
    np.testing.assert_array_equal(y.numpy(), [0, 0, 0])  # not run yet
    cmd.launch()
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [4, 8, 12])
    cmd.set_param_by_name("a", -1.0)
    cmd.set_dim(2)
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [3, 6, 12])
    with pytest.raises(LaunchError, match="argument 'x'"):
        cmd.set_param_at_index(1, wp.zeros(3, dtype=f64))  # a host array: refused, kept
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [2, 4, 12])
    with pytest.raises(LaunchError, match="no parameter 'b'"):
        cmd.set_param_by_name("b", 1.0)


def test_record_cmd_of_an_adjoint(env):
    x = wp.array(np.array([0.5, -0.25]), dtype=f64, device="cuda", requires_grad=True)
    y = wp.zeros(2, dtype=f64, device="cuda", requires_grad=True)
    y.grad.fill_(1.0)
    cmd = wp.launch(wave, 2, inputs=[x, y], device="cuda", adjoint=True, record_cmd=True)
    assert not x.grad.numpy().any()
    cmd.launch()
    t = np.array([0.5, -0.25])
    np.testing.assert_allclose(x.grad.numpy(), 2 * t * np.sin(t) + t * t * np.cos(t),
                               rtol=1e-12)


# --------------------------------------------------------------------------------------------
# capture


def test_captured_launches_run_at_each_graph_launch(env):
    x, y = darr([1.0, 2.0]), darr([0.0, 0.0])
    with wp.ScopedCapture(device="cuda") as capture:
        wp.launch(axpy, 2, inputs=[3.0, x, y], device="cuda")
    np.testing.assert_array_equal(y.numpy(), [0, 0])  # captured, not run
    graph = capture.graph
    assert graph is not None and graph.is_loaded
    wp.capture_launch(graph)
    wp.capture_launch(graph)
    np.testing.assert_array_equal(y.numpy(), [6, 12])
    x.assign(np.array([10.0, 20.0]))  # arrays are read when the graph runs
    wp.capture_launch(graph)
    np.testing.assert_array_equal(y.numpy(), [36, 72])
    if env is not None:
        assert "cuStreamBeginCapture" in env.calls and "cuGraphInstantiate" in env.calls


def test_captured_fills_copies_and_host_data(env):
    """A fill with an 8-byte pattern, a host-to-device assign (staged through pinned memory:
    its values are those of capture time) and a device copy, replayed."""
    a, b = darr([0.0, 0.0, 0.0]), darr([0.0, 0.0, 0.0])
    host = np.array([1.0, 2.0, 3.0])
    with wp.ScopedCapture(device="cuda") as capture:
        a.fill_(1.5)
        b.assign(host)
        wp.copy(a, b, dest_offset=1, src_offset=0, count=2)
    host[:] = -1.0  # changed after the capture: the graph keeps what it captured
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(a.numpy(), [1.5, 1.0, 2.0])
    np.testing.assert_array_equal(b.numpy(), [1.0, 2.0, 3.0])


def test_forward_backward_and_zero_captured(env):
    """Warp's pattern: the forward step on a Tape and tape.backward() in one graph, and
    tape.zero() in another; each replay gives the gradients an eager run gives. The step
    overwrites an array it read (a device snapshot in the graph), copies (gradients added on
    the device) and uses the adjoint stack."""
    rng = np.random.default_rng(5)
    x0, c0 = rng.uniform(-0.9, 0.9, 5), rng.uniform(-1.0, 1.0, 5)
    eager = wp.Tape()
    loss_e, x_e, c_e = program("cuda", x0, c0, eager)  # first eagerly: the stack grows
    eager.backward(loss=loss_e)
    with wp.ScopedCapture(device="cuda") as step:
        tape = wp.Tape()
        loss, x, c = program("cuda", x0, c0, tape)
        tape.backward(loss=loss)
    with wp.ScopedCapture(device="cuda") as zero:
        tape.zero()
    for _ in range(3):
        wp.capture_launch(step.graph)
        np.testing.assert_allclose(loss.numpy(), loss_e.numpy(), rtol=1e-14)
        np.testing.assert_allclose(x.grad.numpy(), x_e.grad.numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(c.grad.numpy(), c_e.grad.numpy(), rtol=1e-12, atol=1e-14)
        wp.capture_launch(zero.graph)
        assert not c.grad.numpy().any() and not x.grad.numpy().any()
    if env is not None:  # the copies' gradients were added by kernels inside the graph
        assert any(L["symbol"].startswith("gl_map") for L in env.launches[-40:])


def test_a_captured_stack_that_fills_up_is_reported(env):
    x = wp.array(np.full(3, 0.5), dtype=f64, device="cuda", requires_grad=True)
    h = wp.zeros(3, dtype=f64, device="cuda", requires_grad=True)
    h.grad.fill_(1.0)
    from gradloom.runtime.cuda.launch import prepared as prepared_for

    prepared = prepared_for(horner, "adjoint", wp.get_device("cuda"))
    prepared.stack_capacity = 256  # as at a kernel's first launch
    with wp.ScopedCapture(device="cuda") as capture:
        wp.launch(horner, 3, inputs=[x, 60, h], device="cuda", adjoint=True)
    with pytest.raises(KernelRuntimeError, match=r"horner.*stack.*graph launch.*outside"):
        wp.capture_launch(capture.graph)


def test_debug_errors_of_captured_launches_are_raised_after_the_graph(env, monkeypatch):
    monkeypatch.setattr(wp.config, "mode", "debug")
    x, y = darr([1.0, 2.0, 3.0]), darr([0.0, 0.0, 0.0])
    with wp.ScopedCapture(device="cuda") as capture:
        wp.launch(read_ahead, 3, inputs=[x, y], device="cuda")
    with pytest.raises(KernelRuntimeError, match=r"index 3 is out of bounds.*'x'"):
        wp.capture_launch(capture.graph)


def test_what_a_capture_cannot_hold_is_refused(env):
    y = darr([1.0, 2.0])
    with pytest.raises(GradloomError, match="cannot be captured"), \
            wp.ScopedCapture(device="cuda"):
        y.numpy()
    # the capture ended with the error; the device works as before
    np.testing.assert_array_equal(y.numpy(), [1.0, 2.0])
    s = wp.get_stream("cuda")
    with wp.ScopedCapture(device="cuda") as capture:
        assert s.is_capturing
    assert not s.is_capturing and capture.graph is not None


def test_an_error_inside_a_capture_is_the_one_raised(env, monkeypatch):
    """An allocation the driver refuses inside a capture (here: the thread's capture mode is
    not relaxed for it) raises its own error, not the capture's end."""
    if env is None:
        pytest.skip("the fake driver refuses on demand")
    import contextlib

    from gradloom.runtime.cuda import memory as storage

    monkeypatch.setattr(storage, "relaxed", lambda driver: contextlib.nullcontext())
    with pytest.raises(GradloomError, match=r"cannot allocate.*CAPTURE_UNSUPPORTED"), \
            wp.ScopedCapture(device="cuda"):
        wp.zeros(4, dtype=f64, device="cuda")


def test_graphs_nest_and_cuda_launches_join_cpu_graphs(env):
    x, y = darr([1.0, 1.0]), darr([0.0, 0.0])
    with wp.ScopedCapture(device="cuda") as inner:
        wp.launch(axpy, 2, inputs=[1.0, x, y], device="cuda")
    with wp.ScopedCapture(device="cuda") as outer:
        wp.capture_launch(inner.graph)
        wp.capture_launch(inner.graph)
    wp.capture_launch(outer.graph)
    np.testing.assert_array_equal(y.numpy(), [2, 2])
    with wp.ScopedCapture(device="cpu") as cpu_graph:  # a CPU graph holding a CUDA launch
        wp.launch(axpy, 2, inputs=[5.0, x, y], device="cuda")
    np.testing.assert_array_equal(y.numpy(), [2, 2])
    wp.capture_launch(cpu_graph.graph)
    np.testing.assert_array_equal(y.numpy(), [7, 7])


def test_one_capture_state_names_its_device(env):
    """One capture at a time in a context, asked through `capturing(device)`: a CUDA capture
    is on its device only (CPU operations run now), a second capture of either kind is
    refused, and the devices and streams report it (as in Warp, per device)."""
    cuda, cpu = wp.get_device("cuda"), wp.get_device("cpu")
    host = wp.zeros(2, dtype=f64, device="cpu")
    with wp.ScopedCapture(device="cuda") as capture:
        assert capturing() is capturing(cuda) is not None and capturing(cpu) is None
        assert cuda.is_capturing and wp.get_stream("cuda").is_capturing
        assert not cpu.is_capturing and not wp.get_stream("cpu").is_capturing
        host.fill_(3.0)  # not recorded: CPU work runs as issued
        np.testing.assert_array_equal(host.numpy(), [3, 3])
        for device in ("cpu", "cuda"):
            with pytest.raises(RuntimeError, match="already in progress"):
                wp.capture_begin(device=device)
    assert capturing() is None and capture.graph is not None and not cuda.is_capturing
    with wp.ScopedCapture(device="cpu"):
        assert capturing(cpu) is not None and capturing(cuda) is None and cpu.is_capturing
        with pytest.raises(RuntimeError, match="already in progress"):
            wp.capture_begin(device="cuda")
    with pytest.raises(RuntimeError, match="not active"):
        wp.capture_end(device="cuda")
