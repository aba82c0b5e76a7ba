"""A Tape's watches on array contents (runtime/array/watch.py): launches that read an array
between two writes share one watch, a write in between starts a new one, and an array read at
every step keeps no growing list of watches from tapes or replays that are gone."""

from __future__ import annotations

import numpy as np

import gradloom as wp
from gradloom.runtime.tape.adjoint import LaunchRecord

F64 = wp.array(dtype=wp.float64)


@wp.kernel
def square(x: F64, y: F64):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def cube(x: F64, y: F64):
    i = wp.tid()
    y[i] = x[i] * x[i] * x[i]


@wp.kernel
def sine(x: F64, y: F64):
    i = wp.tid()
    y[i] = wp.sin(x[i])


@wp.kernel
def double_in_place(x: F64):
    i = wp.tid()
    x[i] = wp.float64(2.0) * x[i]


def _f64(values, grad=True):
    return wp.array(np.asarray(values, dtype=np.float64), dtype=wp.float64, requires_grad=grad)


def _launch_records(tape: wp.Tape) -> list[LaunchRecord]:
    return [r for r in tape.records if isinstance(r, LaunchRecord)]


def test_reads_between_writes_share_a_watch_and_gradients_stay_right():
    x0 = np.linspace(-1.2, 0.9, 7)
    x = _f64(x0)
    y1, y2, y3 = _f64(np.zeros(7)), _f64(np.zeros(7)), _f64(np.zeros(7))
    tape = wp.Tape()
    with tape:
        wp.launch(square, 7, inputs=[x, y1])
        wp.launch(cube, 7, inputs=[x, y2])
        wp.launch(double_in_place, 7, inputs=[x])  # x is overwritten: the shared watch copies
        wp.launch(sine, 7, inputs=[x, y3])
    first, second, _, third = _launch_records(tape)
    assert first.before[(0, None)] is second.before[(0, None)]
    assert third.before[(0, None)] is not first.before[(0, None)]
    w1, w2, w3 = np.linspace(0.5, 1.5, 7), np.linspace(-1.0, 1.0, 7), np.linspace(2.0, 3.0, 7)
    tape.backward(grads={y1: _f64(w1, False), y2: _f64(w2, False), y3: _f64(w3, False)})
    # L = w1.x0^2 + w2.x0^3 + w3.sin(2 x0): the adjoints of y1 and y2 read x0, not 2 x0
    want = 2 * x0 * w1 + 3 * x0**2 * w2 + 2 * np.cos(2 * x0) * w3
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
    assert tape.memory().snapshots == x.capacity  # one copy of x0 for both records


def test_an_array_read_under_many_tapes_keeps_no_growing_watch_list():
    x, y = _f64(np.linspace(0.0, 1.0, 5)), _f64(np.zeros(5))
    for _ in range(40):
        tape = wp.Tape()
        with tape:
            wp.launch(square, 5, inputs=[x, y])
            wp.launch(cube, 5, inputs=[x, y])
        tape.backward(grads={y: _f64(np.ones(5), False)})
        del tape
    assert len(x._mem.watchers) <= 2


def test_graph_replays_under_a_tape_keep_no_growing_watch_list():
    x0 = np.linspace(-0.5, 0.5, 6)
    x = _f64(x0)
    ys = [_f64(np.zeros(6)) for _ in range(3)]
    loss_seed = np.linspace(1.0, 2.0, 6)
    with wp.ScopedCapture() as capture:
        tape = wp.Tape()
        with tape:
            for y in ys:
                wp.launch(square, 6, inputs=[x, y])
    for _ in range(30):
        x.grad.zero_()
        wp.capture_launch(capture.graph)
        tape.backward(grads={y: _f64(loss_seed, False) for y in ys})
    assert len(x._mem.watchers) <= 2
    np.testing.assert_allclose(x.grad.numpy(), 3 * 2 * x0 * loss_seed, rtol=1e-12)
