"""Warp 1.19 forms behave as in warp-lang: arrays over raw addresses in kernels, array-store
index checks, declaration checks of kernel options, reprs, introspection, the 4x4 determinant.

Runs on gradloom by default and on warp-lang with GL_TEST_BACKEND=warp (wpcompat.py), which
checks the expectations themselves; gradloom-only tests are marked.
"""

import typing

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE, wp

gradloom_only = pytest.mark.skipif(BACKEND == "warp", reason="a gradloom-only check")


def run(kernel, dim, *args):
    wp.launch(kernel, dim=dim, inputs=list(args), device=DEVICE)


# =============================================================================================
# 1. wp.array(ptr=..., shape=..., dtype=...) and a.ptr in kernels


@wp.kernel
def view_by_address(a: wp.array2d(dtype=float), rows: int, cols: int):
    b = wp.array(ptr=a.ptr, shape=(rows, cols), dtype=float)  # the same memory, reshaped
    i = wp.tid()
    b[i // cols, i % cols] = float(i) * 2.0


def test_array_over_an_address_writes_the_source():
    a = wp.zeros((3, 4), dtype=float, device=DEVICE)
    run(view_by_address, 12, a, 2, 6)  # rows of 6 over the 3x4 array's memory
    np.testing.assert_array_equal(a.numpy().ravel(), np.arange(12) * 2.0)


@wp.kernel
def read_by_address(address: wp.uint64, n: int, out: wp.array(dtype=float)):
    b = wp.array(ptr=address, shape=(n,), dtype=wp.vec2)
    i = wp.tid()
    out[i] = b[i][0] - b[i][1]


def test_array_over_an_address_reinterprets_dtype():
    src = wp.array(np.arange(8, dtype=np.float32), dtype=float, device=DEVICE)
    out = wp.zeros(4, dtype=float, device=DEVICE)
    run(read_by_address, 4, src.ptr, 4, out)
    np.testing.assert_array_equal(out.numpy(), [-1.0, -1.0, -1.0, -1.0])


@wp.struct
class Pair:
    a: float
    b: wp.int32


@wp.kernel
def struct_by_address(items: wp.array(dtype=Pair)):
    view = wp.array(ptr=items.ptr, shape=(2,), dtype=Pair)
    view[1].a = 3.5
    view[0].b = 7


def test_array_over_an_address_of_structs():
    items = wp.zeros(2, dtype=Pair, device=DEVICE)
    run(struct_by_address, 1, items)
    got = items.numpy()
    assert got[1]["a"] == 3.5 and got[0]["b"] == 7 and got[0]["a"] == 0.0


@wp.kernel
def scale_by_address(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    view = wp.array(ptr=x.ptr, shape=(x.shape[0],), dtype=float)
    y[i] = view[i] * 2.0


@gradloom_only
def test_array_over_an_address_refuses_gradients():
    """Its memory has no gradient array: backward is refused, never a silent zero."""
    x = wp.ones(4, dtype=float, requires_grad=True, device=DEVICE)
    y = wp.zeros(4, dtype=float, requires_grad=True, device=DEVICE)
    tape = wp.Tape()
    with tape:
        run(scale_by_address, 4, x, y)
    np.testing.assert_array_equal(y.numpy(), [2.0] * 4)
    with pytest.raises(wp.CompileError, match="chosen at run time"):
        tape.backward(grads={y: wp.ones(4, dtype=float, device=DEVICE)})


# =============================================================================================
# 2. stores into arrays: index counts per subscript, integer indices


def test_subscript_of_a_row_view_takes_its_own_dimension_count():
    @wp.kernel(module="unique")
    def too_many(out: wp.array2d(dtype=wp.mat44)):
        out[0][2, 2] = 6.0  # out[0] is a 1-D array: two indices are one too many

    m = wp.zeros((1, 1), dtype=wp.mat44, device=DEVICE)
    with pytest.raises(wp.WarpCodegenError, match="Incorrect number of indices"):
        run(too_many, 1, m)


@wp.kernel
def row_then_element(out: wp.array3d(dtype=float), v: wp.array(dtype=wp.mat22)):
    out[1][0, 2] = 5.0  # a 2-D view, then both its indices
    v[1][0, 1] = 4.0  # an element, then a matrix component


def test_subscript_groups_that_fit_still_store():
    out = wp.zeros((2, 2, 3), dtype=float, device=DEVICE)
    v = wp.zeros(2, dtype=wp.mat22, device=DEVICE)
    run(row_then_element, 1, out, v)
    assert out.numpy()[1, 0, 2] == 5.0 and out.numpy().sum() == 5.0
    assert v.numpy()[1, 0, 1] == 4.0 and v.numpy().sum() == 4.0


def test_float_index_of_an_array_store_is_refused():
    @wp.kernel(module="unique")
    def float_index(dst: wp.array(dtype=wp.vec3), idx: wp.array(dtype=float)):
        dst[idx[0]].x += 1.0

    with pytest.raises(TypeError, match="Array slot write indices must be integers"):
        float_index.module.load(DEVICE)


# =============================================================================================
# 3. declaration checks of entry_point_abi


def test_entry_point_abi_is_checked_at_declaration():
    with pytest.raises(ValueError, match="must be 'warp' or 'external_constant_params'"):
        @wp.kernel(module="unique", enable_backward=False, entry_point_abi="external")
        def unknown():
            return

    with pytest.raises(ValueError, match="requires enable_backward=False"):
        @wp.kernel(module="unique", entry_point_abi="external_constant_params")
        def with_backward():
            return


# =============================================================================================
# 4. Python-scope reprs, introspection, aliasing


def test_vector_repr_names_non_default_scalar_types():
    assert repr(wp.vec2i(1, 2)) == "vec2i([1, 2])"
    assert repr(wp.vec3f(1.0, 2.0, 3.0)) == "vec3f([1.0, 2.0, 3.0])"
    assert repr(wp.vec2d(1.5, 2.0)) == "vec2d([float64(1.5), float64(2.0)])"
    assert repr(wp.vec2ub(1, 2)) == "vec2ub([uint8(1), uint8(2)])"
    assert repr(wp.quatd(0.0, 0.0, 0.0, 1.0)) == \
        "quatd([float64(0.0), float64(0.0), float64(0.0), float64(1.0)])"
    assert str(wp.vec2d(1.5, 2.0)) == "[1.5, 2.0]"


def test_shapeless_fixedarray_is_an_array_annotation():
    assert wp.types.is_array(wp.fixedarray(dtype=int))
    assert not wp.types.type_is_array(wp.fixedarray(dtype=int))
    assert wp.types.type_is_array(wp.fixedarray)


def test_array_aliasing_numpy_keeps_the_source():
    src = np.ones(8, dtype=np.int32)
    a = wp.array(src, dtype=wp.int32, copy=False, device=DEVICE)
    assert a._ref is src and a.ptr == src.ctypes.data
    src[:] = 5
    assert (a.numpy() == 5).all()


# =============================================================================================
# 5. the 4x4 determinant: float32 finite differences as tight as Warp's


@wp.kernel
def det4(m: wp.array(dtype=wp.mat44), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.determinant(m[i])


def test_det4_matches_float64_and_its_gradient_the_cofactors():
    rng = np.random.default_rng(5)
    ms = rng.standard_normal((6, 4, 4)).astype(np.float32)
    m = wp.array(ms, dtype=wp.mat44, requires_grad=True, device=DEVICE)
    out = wp.zeros(6, dtype=float, requires_grad=True, device=DEVICE)
    tape = wp.Tape()
    with tape:
        run(det4, 6, m, out)
    tape.backward(grads={out: wp.ones(6, dtype=float, device=DEVICE)})
    exact = np.linalg.det(ms.astype(np.float64))
    np.testing.assert_allclose(out.numpy(), exact, rtol=2e-6, atol=2e-6)
    cof = np.array([d * np.linalg.inv(x).T for d, x in zip(exact, ms.astype(np.float64))])
    np.testing.assert_allclose(m.grad.numpy(), cof, rtol=1e-5, atol=1e-5)


def test_tile_called_with_dtype_and_shape_is_an_annotation():
    t = wp.tile(dtype=float, shape=(2, 2))
    assert wp.types.is_tile(t) and not wp.types.type_is_tile(t)
    assert wp.types.type_is_tile(wp.tile)


# =============================================================================================
# 6. ctypes views: cptr(), __ctype__(), recorded launches set from ctypes values


@wp.struct
class Knobs:
    i: int
    f: float
    v: wp.vec3


@wp.kernel
def knob_sum(k: Knobs, i: int, f: float, v: wp.vec3, out: wp.array(dtype=int)):
    out[wp.tid()] = k.i + i + int(f) + int(v[2]) + int(k.v[1])


def test_recorded_launch_takes_ctypes_values():
    k = Knobs()
    out = wp.zeros(1, dtype=int, device=DEVICE)
    cmd = wp.launch(knob_sum, dim=1, inputs=[k, 0, 0.0, wp.vec3(), out], device=DEVICE,
                    record_cmd=True)
    k.i, k.v = 10, wp.vec3(0.0, 5.0, 0.0)
    fresh = wp.zeros(1, dtype=int, device=DEVICE)
    cmd.set_param_at_index_from_ctype(0, k.__ctype__())
    cmd.set_param_at_index_from_ctype(1, 3)
    cmd.set_param_at_index_from_ctype(2, 4.0)
    cmd.set_param_at_index_from_ctype(3, wp.vec3(0.0, 0.0, 6.0))
    cmd.set_param_by_name_from_ctype("out", fresh.__ctype__())
    cmd.launch()
    assert fresh.numpy()[0] == 10 + 3 + 4 + 6 + 5 and out.numpy()[0] == 0


def test_cptr_reads_struct_elements():
    values = []
    for n in range(3):
        k = Knobs()
        k.i, k.f, k.v = n, 0.5 * n, wp.vec3(float(n), 0.0, 1.0)
        values.append(k)
    items = wp.array(values, dtype=Knobs, device=DEVICE)
    p = items.cptr()
    assert p[2].i == 2 and p[2].f == 1.0
    assert p[2].v == wp.vec3(2.0, 0.0, 1.0) and p[1].v != wp.vec3(2.0, 0.0, 1.0)


# =============================================================================================
# 7. annotations: a dtype-only tile in a @wp.func, a class no array can hold


@wp.func
def tile_twice(t: wp.tile[float]) -> wp.tile[float]:  # any shape
    return t * 2.0


@wp.kernel
def tile_through_dtype_only_func(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a, shape=(2, 4), offset=(i * 2, 0))
    wp.tile_store(out, tile_twice(t), offset=(i * 2, 0))


def test_dtype_only_tile_parameter_takes_the_tile():
    a = wp.array(np.arange(16, dtype=np.float32).reshape(4, 4), dtype=float, device=DEVICE)
    out = wp.zeros((4, 4), dtype=float, device=DEVICE)
    wp.launch_tiled(tile_through_dtype_only_func, dim=[2], inputs=[a, out], block_dim=1,
                    device=DEVICE)
    np.testing.assert_array_equal(out.numpy(), 2.0 * a.numpy())


class NotAnElementType:
    pass


@gradloom_only
def test_annotation_of_an_unknown_class_fails_where_used():
    ann = wp.array[NotAnElementType]  # as Warp: kept, checked when code uses it
    assert ann.dtype is NotAnElementType

    @wp.kernel(module="unique")
    def takes_it(x: ann):
        pass

    with pytest.raises(wp.GradloomError, match="unsupported array dtype"):
        run(takes_it, 1, wp.zeros(1, dtype=float, device=DEVICE))


@wp.func
def rows_of(a: wp.array[float, typing.Any]) -> float:
    return float(a.shape[0])


@wp.kernel(module="unique")  # its own module: warp-lang cannot build it (see below)
def any_ndim_kernel(a: wp.array(dtype=float), b: wp.array2d(dtype=float),
                    out: wp.array(dtype=float)):
    out[0] = rows_of(a)  # one function for arrays of any number of dimensions
    out[1] = rows_of(b)


def test_array_annotation_with_any_ndim():
    for family in (wp.array, wp.indexedarray, wp.fabricarray, wp.indexedfabricarray):
        ann = family[float, typing.Any]
        assert ann.ndim is typing.Any and ann.dtype == wp.float32


@gradloom_only
def test_function_parameter_with_any_ndim():
    """A superset: warp-lang 1.19 keeps the annotation but matches no array with it."""
    out = wp.zeros(2, dtype=float, device=DEVICE)
    run(any_ndim_kernel, 1, wp.zeros(5, dtype=float, device=DEVICE),
        wp.zeros((3, 2), dtype=float, device=DEVICE), out)
    np.testing.assert_array_equal(out.numpy(), [5.0, 3.0])
