"""A @wp.func called from Python with scalar arguments: a pure program's result is remembered by
the arguments' types and values (builtins/host.py `_memo_key`); anything else runs each time."""

from __future__ import annotations

import math
import sys

import numpy as np

import gradloom as wp

host = sys.modules["gradloom.builtins.host"]


@wp.func
def tri_index(n: int, i: int, j: int) -> int:  # mujoco-warp's upper_trid_index, in our words
    if j < i:
        i, j = j, i
    return (i * (2 * n - i - 1)) // 2 + j


@wp.func
def doubled(x: float) -> float:
    return x * 2.0


@wp.func
def spread(x: float) -> wp.vec3:
    return wp.vec3(x, 2.0 * x, 3.0 * x)


@wp.func
def noisy(x: int) -> int:
    wp.printf("noisy %d\n", x)
    return x + 1


def _count_evaluations(monkeypatch) -> list[int]:  # type: ignore[no-untyped-def]
    calls = [0]
    real = host.evaluate

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(host, "evaluate", counted)
    return calls


def test_repeated_scalar_calls_are_remembered_and_right(monkeypatch):  # type: ignore[no-untyped-def]
    calls = _count_evaluations(monkeypatch)
    for n in (3, 9):
        for i in range(n):
            for j in range(n):
                a, b = min(i, j), max(i, j)
                assert tri_index(n, i, j) == (a * (2 * n - a - 1)) // 2 + b
    first = calls[0]
    assert first == 9 + 81  # each distinct argument triple evaluated once
    assert tri_index(9, 4, 2) == tri_index(9, 2, 4)
    assert calls[0] == first  # remembered


def test_values_that_compare_equal_are_kept_apart():
    assert math.copysign(1.0, doubled(-0.0)) == -1.0
    assert math.copysign(1.0, doubled(0.0)) == 1.0
    assert doubled(np.float32(1.5)) == 3.0 and doubled(1.5) == 3.0


def test_mutable_results_are_made_afresh():
    a = spread(1.0)
    a[0] = 100.0
    np.testing.assert_allclose(np.asarray(spread(1.0)), [1.0, 2.0, 3.0])


def test_calls_with_effects_run_every_time(monkeypatch):  # type: ignore[no-untyped-def]
    calls = _count_evaluations(monkeypatch)
    assert noisy(4) == 5 and noisy(4) == 5
    assert calls[0] == 2


def test_a_remembered_result_follows_legacy_scalar_return_types() -> None:
    """The result's Python type is decided at each call by the config (regression: a result
    remembered as a float64 value came back with legacy_scalar_return_types on)."""
    x = wp.float64(1.25)
    assert isinstance(wp.sin(x), wp.float64) and type(wp.sin(x)) is not float
    old = wp.config.legacy_scalar_return_types
    try:
        wp.config.legacy_scalar_return_types = True
        assert type(wp.sin(x)) is float
        assert wp.sin(x) == math.sin(1.25)
    finally:
        wp.config.legacy_scalar_return_types = old
    assert isinstance(wp.sin(x), wp.float64) and type(wp.sin(x)) is not float
