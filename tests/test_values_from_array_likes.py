"""Vector, matrix and transform values take array-likes that are not sequences (a torch
tensor: `__array__`, a `.size` method) where Warp takes them: constructors and slice writes."""

from __future__ import annotations

import pytest

import gradloom as wp

torch = pytest.importorskip("torch")


def test_slice_writes_take_a_tensor() -> None:
    v = wp.vec4()
    v[1:] = torch.tensor([1.0, 2.0, 3.0])
    assert list(v) == [0.0, 1.0, 2.0, 3.0]
    m = wp.mat22()
    m[1, 0:2] = torch.tensor([7.0, 8.0])
    assert (m[1, 0], m[1, 1], m[0, 0]) == (7.0, 8.0, 0.0)
    with pytest.raises(ValueError, match="same size"):
        v[1:] = torch.tensor([1.0, 2.0])


def test_a_transform_from_two_tensors() -> None:
    t = wp.transform(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([4.0, 5.0, 6.0, 7.0]))
    assert list(t) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    with pytest.raises(ValueError, match="p takes 3 components"):
        wp.transform(torch.tensor([1.0, 2.0]), torch.tensor([4.0, 5.0, 6.0, 7.0]))
