"""Graph capture on the CPU, streams and events, `wp.ScopedTimer`, `clear_kernel_cache`, `n=`.

Tests not marked gradloom-only also run on warp-lang (GL_TEST_BACKEND=warp) to check that they
describe Warp 1.19's CPU behaviour: a CPU capture records and does not run.
"""

from __future__ import annotations

import contextlib
import io
import re
import time

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE, wp

gradloom_only = pytest.mark.skipif(BACKEND != "gradloom", reason="gradloom behaviour (superset)")


@wp.kernel
def add_value(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] + s


@wp.kernel
def square_into(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def accumulate(x: wp.array(dtype=float), total: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(total, 0, x[i])


@wp.kernel
def count_down(c: wp.array(dtype=wp.int32), n: wp.array(dtype=float)):
    c[0] = c[0] - 1
    n[0] = n[0] + 1.0


def f32(*values):
    return np.array(values, dtype=np.float32)


# --------------------------------------------------------------------------------------------
# Capture records; replay runs against the arrays' current contents


def test_capture_records_without_running_and_replays():
    a = wp.zeros(4, dtype=float, device=DEVICE)
    b = wp.zeros(4, dtype=float, device=DEVICE)
    assert not wp.get_device(DEVICE).is_capturing
    with wp.ScopedCapture(device=DEVICE) as capture:
        assert wp.get_device(DEVICE).is_capturing
        wp.launch(add_value, dim=4, inputs=[a, 1.0], device=DEVICE)
        wp.copy(b, a)
    assert not wp.get_device(DEVICE).is_capturing
    np.testing.assert_array_equal(a.numpy(), f32(0, 0, 0, 0))  # nothing ran yet
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(a.numpy(), f32(1, 1, 1, 1))
    np.testing.assert_array_equal(b.numpy(), f32(1, 1, 1, 1))
    a.assign(f32(5, 6, 7, 8))  # replay reads the current contents of the same arrays
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(a.numpy(), f32(6, 7, 8, 9))
    np.testing.assert_array_equal(b.numpy(), f32(6, 7, 8, 9))


def test_capture_scalars_are_fixed_at_capture():
    a = wp.zeros(2, dtype=float, device=DEVICE)
    step = 1.0
    with wp.ScopedCapture(device=DEVICE) as capture:
        for _ in range(3):
            wp.launch(add_value, dim=2, inputs=[a, step], device=DEVICE)
            step *= 10.0
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(a.numpy(), f32(111, 111))


def test_capture_fill_zero_assign_copy_offsets():
    a = wp.array(np.arange(6, dtype=np.float32), device=DEVICE)
    b = wp.zeros(6, dtype=float, device=DEVICE)
    c = wp.zeros(3, dtype=float, device=DEVICE)
    with wp.ScopedCapture(device=DEVICE) as capture:
        c.fill_(7.0)
        wp.copy(b, a, dest_offset=1, src_offset=2, count=3)
        c.assign(f32(1, 2, 3))
    np.testing.assert_array_equal(c.numpy(), f32(0, 0, 0))
    np.testing.assert_array_equal(b.numpy(), np.zeros(6, np.float32))
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(b.numpy(), f32(0, 2, 3, 4, 0, 0))
    np.testing.assert_array_equal(c.numpy(), f32(1, 2, 3))
    with wp.ScopedCapture(device=DEVICE) as capture:
        c.zero_()
    np.testing.assert_array_equal(c.numpy(), f32(1, 2, 3))
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(c.numpy(), f32(0, 0, 0))


def test_host_data_is_read_when_the_graph_runs():
    src = f32(1, 2, 3)
    c = wp.zeros(3, dtype=float, device=DEVICE)
    with wp.ScopedCapture(device=DEVICE) as capture:
        c.assign(src)
    src[:] = 9.0  # the numpy array's memory was captured, not its values
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(c.numpy(), f32(9, 9, 9))


@gradloom_only
def test_item_assignment_is_captured():
    c = wp.zeros(3, dtype=float, device=DEVICE)
    row = wp.array(f32(4, 5), device=DEVICE)
    with wp.ScopedCapture(device=DEVICE) as capture:
        c[0] = 7.0
        c[1:] = row
    np.testing.assert_array_equal(c.numpy(), f32(0, 0, 0))
    row.assign(f32(6, 8))  # arrays are read when the graph runs
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(c.numpy(), f32(7, 6, 8))

def test_zeros_allocated_in_capture_are_zeroed_on_every_replay():
    x = wp.array(f32(1, 2, 3), device=DEVICE)
    with wp.ScopedCapture(device=DEVICE) as capture:
        total = wp.zeros(1, dtype=float, device=DEVICE)
        wp.launch(accumulate, dim=3, inputs=[x, total], device=DEVICE)
    for _ in range(3):
        wp.capture_launch(capture.graph)
        np.testing.assert_array_equal(total.numpy(), f32(6))


def test_capture_begin_end_and_errors():
    a = wp.zeros(1, dtype=float, device=DEVICE)
    wp.capture_begin(device=DEVICE)
    try:
        with pytest.raises(RuntimeError, match="already in progress"):
            wp.capture_begin(device=DEVICE)
        wp.launch(add_value, dim=1, inputs=[a, 2.0], device=DEVICE)
    finally:
        graph = wp.capture_end(device=DEVICE)
    wp.capture_launch(graph)
    wp.capture_launch(graph)
    np.testing.assert_array_equal(a.numpy(), f32(4))
    with pytest.raises(RuntimeError):
        wp.capture_end(device=DEVICE)


def test_exception_inside_scoped_capture_ends_it():
    with pytest.raises(ValueError, match="boom"), wp.ScopedCapture(device=DEVICE):
        raise ValueError("boom")
    assert not wp.get_device(DEVICE).is_capturing


def test_empty_graph_replays():
    with wp.ScopedCapture(device=DEVICE) as capture:
        pass
    wp.capture_launch(capture.graph)


def test_recorded_command_launched_inside_capture():
    x = wp.array(f32(1, 2, 3), device=DEVICE)
    y = wp.zeros(3, dtype=float, device=DEVICE)
    cmd = wp.launch(square_into, dim=3, inputs=[x, y], device=DEVICE, record_cmd=True)
    with wp.ScopedCapture(device=DEVICE) as capture:
        cmd.launch()
    np.testing.assert_array_equal(y.numpy(), f32(0, 0, 0))
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(y.numpy(), f32(1, 4, 9))


def test_large_and_adjoint_launches_replay():
    # large enough to split across threads (gradloom), and an explicit adjoint launch
    n = 200_000
    x = wp.array(np.arange(n, dtype=np.float32) / n, requires_grad=True, device=DEVICE)
    y = wp.zeros(n, dtype=float, requires_grad=True, device=DEVICE)
    with wp.ScopedCapture(device=DEVICE) as capture:
        wp.launch(square_into, dim=n, inputs=[x, y], device=DEVICE)
        wp.launch(square_into, dim=n, inputs=[x, y], adj_inputs=[x.grad, y.grad],
                  adjoint=True, device=DEVICE)
    y.grad.fill_(1.0)
    wp.capture_launch(capture.graph)
    np.testing.assert_allclose(y.numpy(), x.numpy() ** 2, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.numpy(), rtol=1e-6)

def test_capture_if_and_while():
    cond = wp.zeros(1, dtype=wp.int32, device=DEVICE)
    n = wp.zeros(1, dtype=float, device=DEVICE)
    with wp.ScopedCapture(device=DEVICE) as capture:
        wp.capture_if(cond,
                      on_true=lambda: wp.launch(add_value, dim=1, inputs=[n, 1.0], device=DEVICE),
                      on_false=lambda: n.fill_(7.0))
    np.testing.assert_array_equal(n.numpy(), f32(0))
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(n.numpy(), f32(7))
    cond.fill_(1)
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(n.numpy(), f32(8))

    n.zero_()
    with wp.ScopedCapture(device=DEVICE) as capture:
        wp.capture_while(cond, lambda: wp.launch(count_down, dim=1, inputs=[cond, n],
                                                 device=DEVICE))
    cond.fill_(3)
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(n.numpy(), f32(3))
    np.testing.assert_array_equal(cond.numpy(), np.zeros(1, np.int32))
    # without a capture both run at once
    cond.fill_(2)
    wp.capture_while(cond, lambda: wp.launch(count_down, dim=1, inputs=[cond, n], device=DEVICE))
    np.testing.assert_array_equal(n.numpy(), f32(5))
    with pytest.raises(TypeError, match="int32"):
        wp.capture_if(n, on_true=lambda: None)


# --------------------------------------------------------------------------------------------
# Capture and the Tape (replay under a Tape records; a tape inside a capture records each replay)


@gradloom_only
def test_capture_launch_under_tape_records_gradients():
    x = wp.array(f32(1, 2, 3), dtype=float, requires_grad=True, device=DEVICE)
    y = wp.zeros(3, dtype=float, requires_grad=True, device=DEVICE)
    z = wp.zeros(3, dtype=float, requires_grad=True, device=DEVICE)
    with wp.ScopedCapture(device=DEVICE) as capture:
        wp.launch(square_into, dim=3, inputs=[x, y], device=DEVICE)
        wp.copy(z, y)
    tape = wp.Tape()
    with tape:
        wp.capture_launch(capture.graph)
    tape.backward(grads={z: wp.array(f32(1, 10, 100), device=DEVICE)})
    np.testing.assert_allclose(x.grad.numpy(), 2 * f32(1, 2, 3) * f32(1, 10, 100))


@wp.kernel
def sum_into(y: wp.array(dtype=float), total: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(total, 0, y[i])


def test_a_tape_recording_inside_a_capture_differentiates_each_replay():
    # newton's diffsim examples capture `with tape: forward()` and `tape.backward(loss)` in one
    # graph, then replay it every training step, zeroing the tape between steps (as Warp)
    x = wp.array(f32(1, 2, 3), dtype=float, requires_grad=True, device=DEVICE)
    y = wp.zeros(3, dtype=float, requires_grad=True, device=DEVICE)
    loss = wp.zeros(1, dtype=float, requires_grad=True, device=DEVICE)
    with wp.ScopedCapture(device=DEVICE) as capture:
        tape = wp.Tape()
        with tape:
            loss.zero_()
            wp.launch(square_into, dim=3, inputs=[x, y], device=DEVICE)
            wp.launch(sum_into, dim=3, inputs=[y, loss], device=DEVICE)
        tape.backward(loss)
    assert loss.numpy()[0] == 0.0  # captured, not run
    for step in range(3):
        wp.capture_launch(capture.graph)
        xs = f32(1, 2, 3) + step
        np.testing.assert_allclose(loss.numpy(), [np.sum(xs * xs)])
        np.testing.assert_allclose(x.grad.numpy(), 2 * xs)  # d/dx sum(x^2), each replay alone
        tape.zero()
        x.assign(x.numpy() + 1.0)


@gradloom_only
def test_replay_respects_copy_on_write_of_taped_arrays():
    # a launch recorded on a tape reads x; a replayed graph then overwrites x: the tape must
    # still differentiate at the old x
    x = wp.array(f32(1, 2), dtype=float, requires_grad=True, device=DEVICE)
    y = wp.zeros(2, dtype=float, requires_grad=True, device=DEVICE)
    with wp.ScopedCapture(device=DEVICE) as capture:
        wp.launch(add_value, dim=2, inputs=[x, 5.0], device=DEVICE)
    tape = wp.Tape()
    with tape:
        wp.launch(square_into, dim=2, inputs=[x, y], device=DEVICE)
    wp.capture_launch(capture.graph)
    tape.backward(grads={y: wp.array(f32(1, 1), device=DEVICE)})
    np.testing.assert_allclose(x.grad.numpy(), f32(2, 4))


# --------------------------------------------------------------------------------------------
# Streams and events


def test_cpu_synchronization_functions_are_no_ops():
    wp.synchronize()
    wp.synchronize_device(DEVICE)
    wp.synchronize_stream(DEVICE)
    with wp.ScopedStream(None) as s:
        assert s is None


@gradloom_only
def test_cpu_streams_and_events():
    stream = wp.Stream(DEVICE)
    assert stream.device == wp.get_device(DEVICE) and stream.is_complete
    default = wp.get_stream(DEVICE)
    with wp.ScopedStream(stream):
        assert wp.get_stream() is stream
        start = wp.record_event(wp.Event(enable_timing=True))
        time.sleep(0.02)
        end = stream.record_event(wp.Event(enable_timing=True))
        wp.wait_event(start)
        wp.wait_stream(default)
    assert wp.get_stream() is default
    wp.synchronize_event(end)
    wp.synchronize_stream(stream)
    assert end.is_complete
    assert wp.get_event_elapsed_time(start, end) >= 15.0
    with pytest.raises(RuntimeError, match="enable_timing"):
        wp.get_event_elapsed_time(wp.record_event(), end)
    with pytest.raises(ValueError):
        wp.Event(enable_timing=True, interprocess=True)
    with pytest.raises(TypeError):
        wp.Stream(priority=1.5)


@gradloom_only
def test_event_recorded_in_a_capture_is_stamped_on_replay():
    event = wp.Event(enable_timing=True)
    with wp.ScopedCapture(device=DEVICE) as capture:
        wp.record_event(event)
        with pytest.raises(RuntimeError, match="capture"):
            wp.synchronize_event(event)
    first = wp.Event(enable_timing=True)
    wp.record_event(first)
    wp.capture_launch(capture.graph)
    assert wp.get_event_elapsed_time(first, event) >= 0.0


# --------------------------------------------------------------------------------------------
# ScopedTimer, clear_kernel_cache, legacy n=


def test_scoped_timer_prints_and_accumulates():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), wp.ScopedTimer("outer") as outer, wp.ScopedTimer(
            "inner"):
        time.sleep(0.01)
    lines = out.getvalue().splitlines()
    assert re.fullmatch(r"    inner took \d+\.\d\d ms", lines[-2])
    assert re.fullmatch(r"outer took \d+\.\d\d ms", lines[-1])
    assert outer.elapsed >= 10.0
    timings: dict = {}
    for _ in range(3):
        with wp.ScopedTimer("k", dict=timings, print=False):
            pass
    assert list(timings) == ["k"] and len(timings["k"]) == 3
    with contextlib.redirect_stdout(io.StringIO()) as quiet, wp.ScopedTimer(
            "off", active=False, dict=timings) as off:
        pass
    assert quiet.getvalue() == "" and off.elapsed == 0.0 and timings["off"] == []


def test_scoped_timer_detailed_prints_profile():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), wp.ScopedTimer("hello", detailed=True):
        pass
    assert "function calls" in out.getvalue()
    assert re.search(r"hello took \d+\.\d+ ms$", out.getvalue().strip())


def test_legacy_n_keyword():
    for make in (wp.zeros, wp.empty, wp.ones):
        a = make(n=4, dtype=wp.int32, device=DEVICE)
        assert a.shape == (4,) and a.dtype == wp.int32
    np.testing.assert_array_equal(wp.ones(n=2, dtype=float, device=DEVICE).numpy(), f32(1, 1))
    np.testing.assert_array_equal(wp.full(n=3, value=2.0, dtype=float, device=DEVICE).numpy(),
                                  f32(2, 2, 2))


@gradloom_only
def test_clear_kernel_cache_removes_disk_entries(tmp_path, monkeypatch):
    from gradloom import config

    monkeypatch.setattr(config, "cache_dir", tmp_path)
    entry = tmp_path / "kernels" / "ab" / "abcd.bin"
    entry.parent.mkdir(parents=True)
    entry.write_bytes(b"x")
    wp.clear_kernel_cache()
    assert not (tmp_path / "kernels").exists()
    a = wp.zeros(2, dtype=float, device=DEVICE)  # compiled kernels keep working
    wp.launch(add_value, dim=2, inputs=[a, 1.0], device=DEVICE)
    np.testing.assert_array_equal(a.numpy(), f32(1, 1))
