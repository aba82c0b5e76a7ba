"""`wp.launch` takes, for an array parameter, any object offering numpy's array interface
(`__array_interface__`), zero-copy as it takes numpy arrays; an object is judged by its real
class, so one claiming to be a `wp.array` through `__class__` is still read as foreign memory."""

from __future__ import annotations

import numpy as np

import gradloom as wp


@wp.kernel
def _double(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] * 2.0


@wp.kernel
def _bump(a: wp.array(dtype=float)):
    a[wp.tid()] += 1.0


class _Interface:
    def __init__(self, data: np.ndarray) -> None:
        self._data = data

    @property
    def __array_interface__(self) -> dict:
        return self._data.__array_interface__


class _Spoof(_Interface):
    @property
    def __class__(self) -> type:  # type: ignore[override]
        return wp.array


def test_array_interface_objects_are_read_and_written_in_place() -> None:
    values = np.arange(1, 5, dtype=np.float32)
    out = wp.empty(4, dtype=float)
    wp.launch(_double, 4, inputs=[_Interface(values)], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), values * 2.0)
    wp.launch(_bump, 4, inputs=[_Interface(values)])
    np.testing.assert_array_equal(values, [2.0, 3.0, 4.0, 5.0])  # the same memory


def test_a_spoofed_class_is_still_foreign_memory() -> None:
    values = np.arange(1, 5, dtype=np.float32)
    spoof = _Spoof(values)
    assert isinstance(spoof, wp.array)
    out = wp.empty(4, dtype=float)
    wp.launch(_double, 4, inputs=[spoof], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), values * 2.0)
