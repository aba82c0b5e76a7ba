"""`wp.from_dlpack` on the host: bool data read as int8/uint8 without a copy, and Warp's errors
(type and words) for another dtype, a device DLPack does not name, and a producer whose
`__dlpack__` hands back something other than a capsule."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp


def test_bool_data_reads_as_int8_and_uint8_in_place() -> None:
    values = np.array([True, False, True, True])
    source = wp.array(values, dtype=wp.bool)
    for dtype in (wp.int8, wp.uint8):
        out = wp.from_dlpack(wp.to_dlpack(source), dtype=dtype)
        assert out.ptr == source.ptr and out.dtype == dtype
        np.testing.assert_array_equal(out.numpy(), values.astype(np.int8))
    same = wp.from_dlpack(wp.to_dlpack(source), dtype=wp.bool)
    assert same.dtype == wp.bool and same.ptr == source.ptr


def test_bool_data_as_another_type_is_refused() -> None:
    source = wp.zeros(2, dtype=wp.bool)
    with pytest.raises(RuntimeError, match=r"^Incompatible data types: DLPack bool8 and Warp "
                                           r"float32$"):
        wp.from_dlpack(wp.to_dlpack(source), dtype=wp.float32)


class _Elsewhere:
    def __dlpack_device__(self) -> tuple[int, int]:
        return (123, 7)

    def __dlpack__(self, stream: object = None) -> object:
        raise AssertionError("not called for a device DLPack does not name")


class _NotACapsule:
    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)

    def __dlpack__(self, stream: object = None, **kwargs: object) -> object:
        return object()


def test_unknown_devices_and_non_capsules_are_type_errors() -> None:
    with pytest.raises(TypeError, match="Unsupported source device for DLPack: device_type=123, "
                                        "device_id=7"):
        wp.from_dlpack(_Elsewhere())
    with pytest.raises(TypeError, match="Expected a valid DLPack capsule, got object"):
        wp.from_dlpack(_NotACapsule())


def test_bfloat16_travels_as_dlpack_bfloat() -> None:
    values = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    a = wp.array(values, dtype=wp.bfloat16)
    back = wp.from_dlpack(wp.to_dlpack(a))
    assert back.dtype == wp.bfloat16 and back.ptr == a.ptr and back.shape == (4,)
    np.testing.assert_array_equal(back.list(), values)
    vec3bf = wp.types.vector(3, dtype=wp.bfloat16)
    rows = wp.zeros((5, 3), dtype=wp.bfloat16)
    as_vectors = wp.from_dlpack(wp.to_dlpack(rows), dtype=vec3bf)
    assert as_vectors.shape == (5,) and as_vectors.dtype == vec3bf and as_vectors.ptr == rows.ptr
    assert wp.from_dlpack(wp.to_dlpack(wp.zeros(0, dtype=wp.bfloat16))).shape == (0,)
    torch = pytest.importorskip("torch")
    t = torch.from_dlpack(wp.to_dlpack(a))
    assert t.dtype == torch.bfloat16 and t.tolist() == values.tolist()


def test_integers_read_as_the_other_signedness_in_place() -> None:
    source = wp.array(np.array([-1, 2], np.int16), dtype=wp.int16)
    out = wp.from_dlpack(wp.to_dlpack(source), dtype=wp.uint16)
    assert out.dtype == wp.uint16 and out.ptr == source.ptr
    assert out.numpy().tolist() == [65535, 2]
