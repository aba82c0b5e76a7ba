"""`wp.tid()` with fewer indices than the launch has dimensions (Warp 1.19: the leading ones,
every thread of the grid runs) through the other launch paths: a captured graph, an explicit
adjoint launch, and record_cmd (which refuses a grid whose threads would repeat). The plain
launch and its gradient are in test_warp_lang_compat3.py (both backends)."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
from gradloom.errors import LaunchError


@wp.kernel
def _count(counts: wp.array(dtype=int)):
    i = wp.tid()
    wp.atomic_add(counts, i, 1)


@wp.kernel
def _square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(y, i, x[i] * x[i])


def test_captured_graph_runs_every_thread_of_the_grid():
    counts = wp.zeros(6, dtype=int)
    with wp.ScopedCapture(device="cpu") as cap:
        wp.launch(_count, dim=(3, 2), inputs=[counts])
    np.testing.assert_array_equal(counts.numpy(), 0)  # captured, not run
    wp.capture_launch(cap.graph)
    wp.capture_launch(cap.graph)
    np.testing.assert_array_equal(counts.numpy(), [4, 4, 4, 0, 0, 0])


def test_explicit_adjoint_launch_repeats_as_the_forward():
    xs = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    x, y = wp.array(xs, dtype=float), wp.zeros(3, dtype=float)
    adj_x, adj_y = wp.zeros(3, dtype=float), wp.ones(3, dtype=float)
    wp.launch(_square, dim=(3, 4), inputs=[x, y], adjoint=True, adj_inputs=[adj_x, adj_y])
    np.testing.assert_allclose(adj_x.numpy(), 8 * xs, rtol=1e-6)  # 4 threads each: 4 * 2x


def test_record_cmd_refuses_repeated_threads_and_takes_a_width_of_one():
    counts = wp.zeros(3, dtype=int)
    with pytest.raises(LaunchError, match=r"unpacks 1 indices .* dim=\(3,\)"):
        wp.launch(_count, dim=(3, 2), inputs=[counts], record_cmd=True)
    cmd = wp.launch(_count, dim=(3, 1), inputs=[counts], record_cmd=True)
    cmd.launch()
    np.testing.assert_array_equal(counts.numpy(), [1, 1, 1])
