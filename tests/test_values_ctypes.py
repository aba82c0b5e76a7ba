"""Python-scope vector/matrix/quat/transform values are ctypes arrays, as Warp's are: ctypes.byref,
from_buffer / from_buffer_copy, np.asarray as a writable view of the value's memory (newton's
host_transform.py relies on all three)."""

from __future__ import annotations

import copy
import ctypes
import pickle

import numpy as np
import pytest

import gradloom as wp

TYPES = [wp.vec3, wp.vec2d, wp.vec4i, wp.vec3ub, wp.mat22, wp.mat33d, wp.quat, wp.transform,
         wp.spatial_vector, wp.types.matrix((2, 3), wp.float32), wp.types.vector(5, wp.int64)]


@pytest.mark.parametrize("t", TYPES, ids=repr)
def test_values_are_ctypes_arrays_of_their_type(t) -> None:
    v = t()
    assert isinstance(v, ctypes.Array) and isinstance(v, t)
    assert type(v) is type(t()) and type(v).__name__ == repr(t)
    assert wp.types.types_equal(type(v), t)
    assert ctypes.sizeof(v) == t.length * t.dtype.size
    assert np.asarray(v).shape == t.shape and np.asarray(v).dtype == t.dtype.np_dtype


def test_identity_builtins_give_the_named_types() -> None:
    # Warp's TestSpatial.test_transform_identity_type: type(value) is the named type
    assert wp.types.types_equal(type(wp.transform_identity()), wp.transformf)
    assert wp.types.types_equal(type(wp.quat_identity()), wp.quatf)
    assert not wp.types.types_equal(type(wp.quat_identity()), wp.vec4f)


def test_byref_reaches_the_values_memory() -> None:
    v = wp.vec3(0.0, 0.0, 0.0)
    src = (ctypes.c_float * 3)(1.5, -2.0, 4.25)
    ctypes.memmove(ctypes.byref(v), src, ctypes.sizeof(src))
    assert v == (1.5, -2.0, 4.25) and v.y == -2.0
    m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    ptr = ctypes.cast(ctypes.byref(m), ctypes.POINTER(ctypes.c_float))
    assert [ptr[i] for i in range(4)] == [1.0, 2.0, 3.0, 4.0]  # row-major, as a kernel stores it


def test_numpy_view_is_writable_and_shares_memory() -> None:
    t = wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat_identity())
    view = np.asarray(t)
    view[:3] += np.float32(0.5)  # newton's transform_add_translation
    assert t.p == wp.vec3(1.5, 2.5, 3.5)
    t[6] = 0.5
    assert view[6] == 0.5
    m = wp.mat33(*range(9))
    np.asarray(m)[1, 2] = 40.0
    assert m[1, 2] == 40.0 and m[1] == wp.vec3(3.0, 4.0, 40.0)


def test_from_buffer_shares_and_from_buffer_copy_copies() -> None:
    rows = np.arange(14, dtype=np.float32).reshape(2, 7)
    shared = wp.transform.from_buffer(rows[1])
    copied = wp.transform.from_buffer_copy(rows[1])
    rows[1, 0] = 100.0
    assert shared[0] == 100.0 and copied[0] == 7.0
    shared[1] = -1.0
    assert rows[1, 1] == -1.0
    matrix = np.arange(16, dtype=np.float32).reshape(4, 4)
    m = wp.mat44.from_buffer(matrix)
    assert m[2, 3] == 11.0 and isinstance(m, wp.mat44)
    with pytest.raises(TypeError):
        wp.vec3.from_buffer(np.zeros(3, dtype=np.float32).tobytes())  # read-only bytes
    assert wp.vec3.from_buffer_copy(np.ones(3, dtype=np.float32).tobytes()) == (1.0, 1.0, 1.0)


def test_pickle_and_copies_keep_type_and_components() -> None:
    for v in (wp.vec3(1.0, 2.0, 3.0), wp.mat22d(1.0, 2.0, 3.0, 4.0), wp.transform_identity(),
              wp.vec3h(0.1, 2.0, 3.0)):
        for other in (pickle.loads(pickle.dumps(v)), copy.copy(v), copy.deepcopy(v), v.copy()):
            assert type(other) is type(v) and other == v
            np.asarray(other).flat[0] = 9.0
            assert np.asarray(v).flat[0] != 9.0  # a copy, not a view


def test_half_values_hold_rounded_float32_and_store_16_bit_bytes() -> None:
    h = wp.vec3h(0.1, 2.0, 65504.0)
    assert np.asarray(h).dtype == np.float32
    expected = np.array([0.1, 2.0, 65504.0], dtype=np.float16)
    assert bytes(h) == expected.tobytes()
    assert np.asarray(h).tolist() == expected.astype(np.float32).tolist()
    h[0] = 0.2
    assert np.asarray(h)[0] == np.float32(np.float16(0.2))


@wp.struct
class Pose:
    xform: wp.transform


@wp.kernel
def apply(t: wp.transform, pose: Pose, p: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.transform_point(pose.xform, wp.transform_point(t, p[i]))


def test_values_from_buffers_work_as_kernel_arguments_and_struct_fields() -> None:
    data = np.array([1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0], dtype=np.float32)
    t = wp.transform.from_buffer(data)  # a pure translation by (1, 2, 3)
    pose = Pose()
    pose.xform = wp.transform.from_buffer_copy(np.array([10, 0, 0, 0, 0, 0, 1], np.float32))
    p = wp.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]], dtype=wp.vec3)
    out = wp.zeros(2, dtype=wp.vec3)
    wp.launch(apply, 2, [t, pose, p, out])
    np.testing.assert_allclose(out.numpy(), [[11.0, 2.0, 3.0], [12.0, 3.0, 4.0]])


def test_array_list_gives_ctypes_values() -> None:
    # Warp's TestArray.test_to_list_vector / _matrix: elements are instances of the dtype
    for t in (wp.types.vector(5, wp.int8), wp.types.matrix((3, 2), wp.uint16), wp.vec3d):
        items = wp.full((2, 3), t(42), dtype=t).list()
        assert len(items) == 6 and all(x == t(42) for x in items)
        assert isinstance(items[0], t) and isinstance(items[0], ctypes.Array)


def test_numpy_scalar_on_the_left_gives_numpy_as_in_warp() -> None:
    v = wp.vec3(1.0, 2.0, 3.0)
    assert v * np.float32(2.0) == wp.vec3(2.0, 4.0, 6.0)  # the value's operator: the kernel's
    left = np.float32(2.0) * v  # numpy's operator reads the value through its buffer
    assert type(left) is np.ndarray and left.tolist() == [2.0, 4.0, 6.0]


def test_captured_values_fingerprint_by_type_and_components() -> None:
    from gradloom.frontend.source import fingerprint_value

    def fp(v):
        return fingerprint_value(v, set())

    assert fp(wp.vec3(1.0, 2.0, 3.0)) == fp(wp.vec3(1.0, 2.0, 3.0))
    assert fp(wp.vec3(1.0, 2.0, 3.0)) != fp(wp.vec3(1.0, 2.0, 7.0))  # a kernel must recompile
    assert fp(wp.vec4(1.0, 2.0, 3.0, 4.0)) != fp(wp.quat(1.0, 2.0, 3.0, 4.0))  # same bytes
