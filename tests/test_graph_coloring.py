"""`wp.utils.graph_coloring_*`: proper colorings (no edge within a color), balancing, groups."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp

ALGOS = list(wp.utils.GraphColoringAlgorithm)


def _colors(edges: np.ndarray, n: int, algo: wp.utils.GraphColoringAlgorithm) -> tuple[int, np.ndarray]:
    colors = wp.empty(n, dtype=wp.int32, device="cpu")
    count = wp.utils.graph_coloring_assign(wp.array(edges, dtype=wp.int32, device="cpu"), colors, algo)
    return count, colors.numpy()


def _assert_proper(edges: np.ndarray, colors: np.ndarray, count: int) -> None:
    assert colors.min() >= 0 and colors.max() == count - 1
    assert not np.any(colors[edges[:, 0]] == colors[edges[:, 1]])


@pytest.mark.parametrize("algo", ALGOS)
def test_random_graphs_are_colored_properly(algo):
    rng = np.random.default_rng(5)
    n = 300
    edges = rng.integers(0, n, size=(1500, 2)).astype(np.int32)
    edges = edges[edges[:, 0] != edges[:, 1]]
    count, colors = _colors(edges, n, algo)
    _assert_proper(edges, colors, count)
    degree = np.bincount(edges.ravel(), minlength=n).max()
    assert count <= degree + 1  # what any greedy coloring guarantees


def test_mcs_is_optimal_on_chordal_graphs():
    # greedy coloring in a maximum-cardinality-search order is optimal on chordal graphs: a
    # triangulated strip needs 3 colors, a path (a tree) 2
    strip = np.array([[i, i + 1] for i in range(19)] + [[i, i + 2] for i in range(18)], np.int32)
    count, colors = _colors(strip, 20, wp.utils.GraphColoringAlgorithm.MCS)
    _assert_proper(strip, colors, count)
    assert count == 3
    path = np.array([[i, i + 1] for i in range(9)], np.int32)
    assert _colors(path, 10, wp.utils.GraphColoringAlgorithm.MCS)[0] == 2


def test_balance_keeps_the_coloring_proper_and_groups_list_it():
    # one edge and 40 isolated nodes: greedy puts 41 nodes in color 0 and one in color 1
    edges = np.array([[0, 1]], np.int32)
    n = 42
    edges_wp = wp.array(edges, dtype=wp.int32, device="cpu")
    colors = wp.empty(n, dtype=wp.int32, device="cpu")
    count = wp.utils.graph_coloring_assign(edges_wp, colors)
    before = np.bincount(colors.numpy(), minlength=count)
    ratio = wp.utils.graph_coloring_balance(edges_wp, colors, count, 1.1)
    after = np.bincount(colors.numpy(), minlength=count)
    _assert_proper(edges, colors.numpy(), count)
    assert list(before) == [41, 1]
    assert ratio == pytest.approx(after.max() / after.min())
    assert ratio <= 1.1
    groups = wp.utils.graph_coloring_get_groups(colors, count, return_wp_array=False)
    np.testing.assert_array_equal(np.sort(np.concatenate(groups)), np.arange(n))
    for c, g in enumerate(groups):
        assert np.all(colors.numpy()[g] == c)
    as_arrays = wp.utils.graph_coloring_get_groups(colors, count)
    np.testing.assert_array_equal(as_arrays[0].numpy(), groups[0])


def test_bad_arrays_are_named():
    with pytest.raises(TypeError, match="edges must be a 2-D int32 array"):
        wp.utils.graph_coloring_assign(wp.zeros(4, dtype=wp.int32), wp.zeros(4, dtype=wp.int32))
    with pytest.raises(ValueError, match="outside"):
        _colors(np.array([[0, 7]], np.int32), 3, wp.utils.GraphColoringAlgorithm.MCS)
