"""Integer kernel arguments take integer-like objects that are no ints (`__index__`), as Warp's
ctypes packing does: newton passes MuJoCo's pybind11 enum members (`mjtGeom.mjGEOM_MESH`) as
int32 arguments of `update_geom_properties_kernel`."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
from gradloom.errors import LaunchError


class EnumMember:
    """Like a pybind11 enum member: an integer through __index__ / __int__, not an int."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __int__(self) -> int:
        return self.value


@wp.kernel
def store_code(out: wp.array(dtype=wp.int32), code: wp.int32, wide: wp.uint64):
    out[wp.tid()] = code + wp.int32(wide)


def test_an_index_object_is_an_integer_argument():
    out = wp.zeros(3, dtype=wp.int32, device="cpu")
    for _ in range(2):  # the first launch and a repeated one (packing may be reused)
        wp.launch(store_code, 3, inputs=[out, EnumMember(7), EnumMember(5)], device="cpu")
        np.testing.assert_array_equal(out.numpy(), [12, 12, 12])


def test_an_index_object_out_of_range_is_refused():
    out = wp.zeros(1, dtype=wp.int32, device="cpu")
    with pytest.raises(LaunchError, match="does not fit"):
        wp.launch(store_code, 1, inputs=[out, EnumMember(1 << 40), 0], device="cpu")


def test_a_float_is_still_no_integer_argument():
    out = wp.zeros(1, dtype=wp.int32, device="cpu")
    with pytest.raises(LaunchError, match="expected a int32 value"):
        wp.launch(store_code, 1, inputs=[out, 7.0, 0], device="cpu")

