"""Tape.visualize() and Warp's autograd array-access check (`verify_autograd_array_access`)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import gradloom as wp
from gradloom import config


@wp.kernel
def dot_product(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(z, 0, x[i] * y[i])


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def overwrite(src: wp.array(dtype=float), dst: wp.array(dtype=float)):
    i = wp.tid()
    dst[i] = src[i]


def arrays(n=4):
    return (wp.array(np.arange(1.0, n + 1.0), dtype=float, requires_grad=True),
            wp.zeros(n, dtype=float, requires_grad=True))


# -- visualize --------------------------------------------------------------------------------


def test_visualize_merges_repeated_launches_and_shows_scopes(tmp_path):
    x, y = arrays(8)
    z = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        tape.record_scope_begin("my loop")
        for _ in range(16):
            wp.launch(dot_product, 8, inputs=[x, y, z])
        tape.record_scope_end()
        c = wp.clone(z)
    path = tmp_path / "tape.dot"
    dot = tape.visualize(filename=str(path), array_labels={c: "copy of z"})
    assert path.read_text() == dot
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    assert dot.count("dot_product") == 1 and "repeated 16x" in dot
    assert 'subgraph cluster_0 {' in dot and 'label="my loop"' in dot
    assert "array: dtype=float32, shape=(8,)" in dot and 'label="copy of z"' in dot
    assert dot.count("{") == dot.count("}")
    unmerged = tape.visualize(simplify_graph=False)
    assert unmerged.count("dot_product") == 16


def test_visualize_edges_follow_reads_and_writes():
    x, y = arrays()
    tape = wp.Tape()
    with tape:
        wp.launch(square, 4, inputs=[x, y])
    dot = tape.visualize(hide_readonly_arrays=False)
    assert "a0 -> op0;" in dot and "op0 -> a1;" in dot
    only_written = tape.visualize(hide_readonly_arrays=True)
    assert 'label="x"' not in only_written and "a0 -> op0;" not in only_written


# -- verify_autograd_array_access ------------------------------------------------------------------


@pytest.fixture
def verify():
    config.verify_autograd_array_access = True
    try:
        yield
    finally:
        config.verify_autograd_array_access = False


def test_overwriting_an_array_a_recorded_launch_read_warns(verify, capsys):
    x, y = arrays()
    other = wp.array(np.zeros(4), dtype=float)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 4, inputs=[x, y])
        assert x._is_read and not y._is_read
        wp.launch(overwrite, 4, inputs=[other, x])
    err = capsys.readouterr().err
    assert "passed to argument dst in kernel" in err and "overwrite" in err
    assert "has already been read from in a previous launch" in err
    assert "gradients stay right" in err
    # gradloom's gradient is still right (the old contents were kept)
    tape.backward(grads={y: wp.ones(4, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * np.arange(1.0, 5.0))
    assert not x._is_read  # backward consumed the reads


def test_copy_over_a_read_array_names_the_call_site(verify, capsys):
    x, y = arrays()
    tape = wp.Tape()
    with tape:
        wp.launch(square, 4, inputs=[x, y])
        line = inspect.currentframe().f_lineno + 1
        wp.copy(x, y)
    assert f"written to by an array copy at {__file__}:{line}" in capsys.readouterr().err


def test_views_share_the_mark_and_reset_clears_it(verify, capsys):
    x, y = arrays()
    tape = wp.Tape()
    with tape:
        wp.launch(square, 2, inputs=[x[:2], y[:2]])
    assert x._is_read and x[2:]._is_read
    tape.reset()
    assert not x._is_read
    with wp.Tape():
        wp.launch(overwrite, 4, inputs=[y, x])
    assert capsys.readouterr().err == ""


def test_no_marks_or_warnings_when_off(capsys):
    x, y = arrays()
    with wp.Tape():
        wp.launch(square, 4, inputs=[x, y])
        wp.launch(overwrite, 4, inputs=[y, x])
    assert not x._is_read and capsys.readouterr().err == ""


def test_mark_methods_and_deterministic_mode():
    x, _ = arrays()
    x.mark_read()
    assert x._is_read
    x.mark_init()
    assert not x._is_read
    config.deterministic = wp.DeterministicMode.RUN_TO_RUN
    try:
        assert config.deterministic
    finally:
        config.deterministic = False
    with pytest.raises(ValueError, match="DeterministicMode"):
        config.deterministic = "yes"
