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
    assert ratio <= 1.1 + 1e-6  # a float32 ratio, as warp-lang returns
    groups = wp.utils.graph_coloring_get_groups(colors, count, return_wp_array=False)
    np.testing.assert_array_equal(np.sort(np.concatenate(groups)), np.arange(n))
    for c, g in enumerate(groups):
        assert np.all(colors.numpy()[g] == c)
    as_arrays = wp.utils.graph_coloring_get_groups(colors, count)
    np.testing.assert_array_equal(as_arrays[0].numpy(), groups[0])


def test_bad_arrays_are_named():
    with pytest.raises(TypeError, match="edges must be a 2-D int32 array"):
        wp.utils.graph_coloring_assign(wp.zeros(4, dtype=wp.int32), wp.zeros(4, dtype=wp.int32))
    with pytest.raises(RuntimeError, match=r"Graph edge 0 has endpoints \(0, 7\), but valid node "
                       r"indices are in the range \[0, 3\)"):
        _colors(np.array([[0, 7]], np.int32), 3, wp.utils.GraphColoringAlgorithm.MCS)
    colors = wp.array([0, 5], dtype=wp.int32)
    with pytest.raises(RuntimeError, match=r"Node 1 has color 5, but valid colors are in the range"):
        wp.utils.graph_coloring_balance(wp.array([[0, 1]], dtype=wp.int32), colors, 2, 1.1)
    assert colors.numpy().tolist() == [0, 5]  # left as it was
    for bad, error in ((-1, ValueError), (2**31, ValueError), (True, TypeError), (1.5, TypeError)):
        with pytest.raises(error):
            wp.utils.graph_coloring_balance(wp.array([[0, 1]], dtype=wp.int32),
                                            wp.array([0, 1], dtype=wp.int32), 2, 1.1,
                                            max_iterations=bad)  # fmt: skip


# (edges, initial colors, color count, target, max_iterations) -> (colors, ratio, warned), each
# observed on warp-lang 1.19's CPU: which node moves where, the best coloring kept, the warning
_WARP_LANG_RUNS = [
    ([], [0] * 9 + [1, 2], 3, 1.1, None, [1, 0, 0, 0, 0, 0, 2, 1, 2, 1, 2], 5 / 3, False),
    ([], [0] * 9 + [1, 2], 3, 1.1, 2, [1, 0, 0, 0, 0, 0, 0, 0, 2, 1, 2], 3.5, True),
    ([], [0] * 9 + [1], 2, 1.0, None, [1, 0, 0, 0, 0, 0, 0, 1, 1, 1], 1.5, False),
    ([], [0] * 5 + [1] * 5 + [2], 3, 1.0, None, [2, 0, 0, 0, 0, 2, 1, 1, 1, 1, 2], 4 / 3, False),
    ([(0, 1), (0, 2), (0, 3), (0, 4), (0, 6), (1, 6), (2, 5), (4, 6)], [0, 1, 1, 1, 1, 2, 2], 3,
     1.1, 1, [0, 1, 1, 1, 1, 0, 2], 4.0, True),
    ([(0, 1), (0, 2), (0, 3), (0, 4), (0, 6), (1, 6), (2, 5), (4, 6)], [0, 1, 1, 1, 1, 2, 2], 3,
     1.1, None, [0, 1, 2, 1, 1, 0, 2], 1.5, False),
    ([(0, 2), (1, 2), (1, 4), (2, 3), (2, 5), (3, 4), (4, 5)], [1, 1, 0, 1, 2, 1], 3, 1.1, None,
     [1, 1, 0, 1, 2, 1], 4.0, False),
    ([(1, 5), (2, 5), (3, 5), (4, 5), (5, 6)], [1, 1, 1, 1, 1, 0, 1], 2, 1.01, 1,
     [0, 1, 1, 1, 1, 0, 1], 2.5, False),
]  # fmt: skip


@pytest.mark.parametrize("edges, colors, count, target, limit, want, ratio, warned", _WARP_LANG_RUNS)
def test_balance_moves_as_warp_lang_does(edges, colors, count, target, limit, want, ratio, warned):
    e = wp.array(np.array(edges, np.int32).reshape(-1, 2), dtype=wp.int32)
    c = wp.array(np.array(colors, np.int32), dtype=wp.int32)
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = wp.utils.graph_coloring_balance(e, c, count, target, max_iterations=limit)
    assert c.numpy().tolist() == want
    assert got == pytest.approx(ratio, rel=1e-6)
    assert any("iteration limit" in str(w.message) for w in caught) == warned
