"""Warp 1.19 kernel-language forms, part 3: array views in kernels (`a[i:j:k, n]`, run-time
bounds), return annotations, rebinding function-valued locals, Warp's words for unsupported
constructs and missing module functions, module build options, struct field assignment.

Runs on gradloom by default and on warp-lang with GL_TEST_BACKEND=warp (wpcompat.py), which
checks the expectations themselves; tests of gradloom-only behaviour are marked. Gradients
through array views are in the gradient corpus (test_grad_corpus.py, "array views").
"""

import re
from typing import Any

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE, wp

gradloom_only = pytest.mark.skipif(BACKEND == "warp", reason="gradloom's own behaviour")


def run(kernel, dim, *args):
    wp.launch(kernel, dim=dim, inputs=list(args), device=DEVICE)


def ints(values, shape=None):
    a = np.asarray(values, dtype=np.int32)
    return wp.array(a if shape is None else a.reshape(shape), dtype=wp.int32, device=DEVICE)


def assert_raises_regex(exc_type, pattern, fn, *args):
    """As unittest's assertRaisesRegex (Warp's tests use it): pattern searched in str(err)
    alone; pytest's match= also sees the note with the caret excerpt, after the message."""
    with pytest.raises(exc_type) as info:
        fn(*args)
    assert re.search(pattern, str(info.value)), str(info.value)
    return info.value


def launch1(kernel, *args):
    run(kernel, 1, *args)


# =============================================================================================
# 1. array views in kernels


@wp.kernel
def views_1d(a: wp.array(dtype=wp.int32), out: wp.array(dtype=wp.int32)):
    head = a[:3]
    out[0] = wp.int32(head.ndim)
    out[1] = head.shape[0]
    out[2] = head.shape[1]  # past the last dimension: 0, as in Warp
    out[3] = head[2]
    back = a[3::-1]  # 3, 2, 1, 0
    out[4] = back.shape[0]
    out[5] = back[0] * 10 + back[3]
    every = a[::-3][::2]  # 15, 9, 3
    out[6] = every.shape[0]
    out[7] = every[0] * 100 + every[1] * 10 + every[2]
    clamped = a[-100:100:5]  # bounds clamped to the array: 0, 5, 10, 15
    out[8] = clamped.shape[0]
    out[9] = a[20:].shape[0]  # empty


def test_slices_of_1d_arrays_follow_python_rules():
    out = wp.zeros(10, dtype=wp.int32, device=DEVICE)
    run(views_1d, 1, ints(np.arange(16)), out)
    np.testing.assert_array_equal(out.numpy(), [1, 3, 0, 2, 4, 30, 3, 1593, 4, 0])


@wp.kernel
def views_2d(a: wp.array2d(dtype=wp.int32), start: int, stop: int, step: int,
             out: wp.array(dtype=wp.int32)):
    col = a[start:stop:step, 1]  # run-time bounds, one column
    out[0] = wp.int32(col.ndim)
    out[1] = col.shape[0]
    out[2] = col[0]
    out[3] = col[col.shape[0] - 1]
    row = a[-2, 1:]  # a negative index counts from the end
    out[4] = row.shape[0] * 100 + row[0]
    block = a[1:3, 2:0:-1]
    out[5] = block.shape[0] * 10 + block.shape[1]
    out[6] = block[1, 1]


@pytest.mark.parametrize("start,stop,step,expected", [
    (1, 6, 2, [1, 3, 4, 16]),
    (5, 0, -2, [1, 3, 16, 4]),
    (-1, -7, -1, [1, 5, 16, 4]),  # Warp clamps stop to -6 (row 0 is left out)
])
def test_slices_of_2d_arrays_with_run_time_bounds(start, stop, step, expected):
    a = ints(np.arange(18), (6, 3))  # a[r, c] = 3 r + c
    out = wp.zeros(7, dtype=wp.int32, device=DEVICE)
    run(views_2d, 1, a, start, stop, step, out)
    np.testing.assert_array_equal(out.numpy(), [*expected, 2 * 100 + 13, 22, 7])


@wp.kernel
def write_through_views(a: wp.array(dtype=wp.vec3), src: wp.array(dtype=float), start: int,
                        stop: int, step: int):
    i = wp.tid()
    picked = a[start:stop:step]
    picked[i] = wp.vec3(src[i], 0.0, 0.0)
    a[start:stop:step][i][1] += src[i]  # an inline view, then a component


@pytest.mark.parametrize("start,stop,step,selected", [(0, 4, 2, [0, 2]), (3, -5, -2, [3, 1])])
def test_stores_through_views_reach_the_source_array(start, stop, step, selected):
    a = wp.full(4, wp.vec3(7.0, 7.0, 7.0), dtype=wp.vec3, device=DEVICE)
    src = wp.array([3.0, 5.0], dtype=float, device=DEVICE)
    run(write_through_views, 2, a, src, start, stop, step)
    expected = np.full((4, 3), 7.0)
    expected[selected, 0] = [3.0, 5.0]
    expected[selected, 1] = [3.0, 5.0]
    expected[selected, 2] = 0.0
    np.testing.assert_array_equal(a.numpy(), expected)


def _zero_step(a: wp.array(dtype=wp.int32)):
    view = a[0:2:0]  # noqa: F841


def _runtime_slice_of_vector(n: int, out: wp.array(dtype=float)):
    v = wp.vec3(1.0, 2.0, 3.0)
    out[0] = v[:n][0]


def test_view_errors_are_warps():
    assert_raises_regex(ValueError, "Slice step cannot be zero", launch1,
                        wp.kernel(_zero_step, module="unique"), ints([1, 2]))
    assert_raises_regex(ValueError, "Slice component must be a compile-time constant",
                        launch1, wp.kernel(_runtime_slice_of_vector, module="unique"), 2,
                        wp.zeros(1, dtype=float, device=DEVICE))


@wp.kernel
def zero_step_at_run_time(a: wp.array(dtype=wp.int32), step: int, out: wp.array(dtype=wp.int32)):
    out[0] = a[0:2:step].shape[0]


@gradloom_only  # Warp stops the process ("slice step cannot be zero")
def test_a_zero_step_at_run_time_selects_nothing():
    out = wp.full(1, 7, dtype=wp.int32, device=DEVICE)
    run(zero_step_at_run_time, 1, ints([1, 2, 3]), 0, out)
    assert out.numpy()[0] == 0


# =============================================================================================
# 2. return annotations


def _returns_a_value(x: float):
    return x


def _annotated_float(x: float) -> float:
    return


def _annotated_none(x: float) -> None:
    return


def test_kernels_cannot_return_values():
    pattern = (r"Warp kernels cannot return values\. Write results to output arguments, and "
               r"omit the return annotation or use `-> None`\.$")
    for fn in (_returns_a_value, _annotated_float):
        assert_raises_regex(wp.WarpCodegenTypeError, pattern, run,
                            wp.kernel(fn, module="unique"), 1, 1.0)
    run(wp.kernel(_annotated_none, module="unique"), 1, 1.0)


def test_a_changed_return_annotation_is_a_new_kernel():
    ret = None

    def aliased(x: float) -> ret:
        return

    run(wp.kernel(aliased, module="unique"), 1, 1.0)
    ret = float

    def aliased(x: float) -> ret:  # noqa: F811 (the same source, another annotation)
        return

    with pytest.raises(wp.WarpCodegenTypeError):
        run(wp.kernel(aliased, module="unique"), 1, 1.0)


@wp.func
def _int8_as_int16(x: wp.int32) -> wp.int16:
    return wp.int8(x)


@wp.func
def _pair_as_int(x: int) -> int:
    return (x + x, x * x)


@wp.func
def _mixed_pair(x: int) -> tuple[int, int]:
    return (x, 1.23)


@wp.func
def _pair_as_triple(x: int) -> tuple[int, int, int]:
    return (x + x, x * x)


@wp.func
def _good_pair(x: int) -> tuple[int, float]:
    return (x, 1.5)


def _call_int8_as_int16():
    _int8_as_int16(123)


def _call_pair_as_int():
    _pair_as_int(123)


def _call_mixed_pair():
    _x, _y = _mixed_pair(123)


def _call_pair_as_triple():
    _x, _y, _z = _pair_as_triple(123)


@pytest.mark.parametrize("fn,message", [
    (_call_int8_as_int16, "The function `_int8_as_int16` has its return type annotated as "
                          "`int16` but the code returns a value of type `int8`."),
    (_call_pair_as_int, "The function `_pair_as_int` has its return type annotated as `int` "
                        "but the code returns 2 values."),
    (_call_mixed_pair, r"The function `_mixed_pair` has its return type annotated as "
                       r"`tuple\[int, int\]` but the code returns a tuple with types "
                       r"`\(int32, float32\)`."),
    (_call_pair_as_triple, "The function `_pair_as_triple` has its return type annotated as a "
                           "tuple of 3 elements but the code returns 2 values."),
], ids=lambda v: getattr(v, "__name__", None) or "")
def test_func_return_annotations_are_checked(fn, message):
    assert_raises_regex(wp.WarpCodegenError, message, launch1, wp.kernel(fn, module="unique"))


@wp.kernel
def good_pair_kernel(out: wp.array(dtype=float)):
    i, f = _good_pair(3)
    out[0] = float(i) + f


def test_matching_return_annotations_compile():
    out = wp.zeros(1, dtype=float, device=DEVICE)
    run(good_pair_kernel, 1, out)
    assert out.numpy()[0] == 4.5


_mat66 = wp.types.matrix(shape=(6, 6), dtype=wp.float32)
_vec6 = wp.types.vector(length=6, dtype=wp.float32)


@wp.func
def _plain_as_spatial(x: float) -> wp.spatial_matrix:
    # Warp's type equality: a 6x6 float32 matrix is a spatial matrix (newton's Kamino)
    return _mat66(x)


@wp.func
def _plain_pair_as_spatial(x: float) -> tuple[wp.spatial_vector, float]:
    return _vec6(x, x, x, x, x, x), x


@wp.kernel
def spatial_returns_kernel(out: wp.array(dtype=float)):
    m = _plain_as_spatial(2.0)
    v, y = _plain_pair_as_spatial(3.0)
    out[0] = m[5, 4] + v[5] + y


def test_plain_matrix_returned_as_spatial_compiles():
    out = wp.zeros(1, dtype=float, device=DEVICE)
    run(spatial_returns_kernel, 1, out)
    assert out.numpy()[0] == 8.0


@wp.kernel
def spatial_rebinding_kernel(flag: int, out: wp.array(dtype=float)):
    m = wp.spatial_matrix()
    if flag > 0:
        m = _mat66(1.0)  # a plain 6x6 matrix on one branch, a spatial one on the other
    else:
        m = -m
    for _ in range(2):
        m = m + _mat66(1.0)  # and in a loop's body
    m += _mat66(0.5)
    out[0] = m[2, 3]


@wp.kernel
def spatial_and_plain_builtins_kernel(out: wp.array(dtype=float)):
    v = _vec6(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    s = wp.spatial_vector(1.0, 1.0, 1.0, 1.0, 1.0, 2.0)
    out[0] = wp.dot(v, s) + wp.dot(s, v)  # newton's Kamino dots a vec6f with a spatial_vectorf


def test_builtins_take_spatial_and_plain_vectors_together():
    out = wp.zeros(1, dtype=float, device=DEVICE)
    run(spatial_and_plain_builtins_kernel, 1, out)
    assert out.numpy()[0] == 54.0


def test_variable_rebound_between_spatial_and_plain_matrices():
    out = wp.zeros(1, dtype=float, device=DEVICE)
    run(spatial_rebinding_kernel, 1, 1, out)
    assert out.numpy()[0] == 3.5
    run(spatial_rebinding_kernel, 1, 0, out)
    assert out.numpy()[0] == 2.5


@wp.kernel
def scalar_tid_count_kernel(counts: wp.array(dtype=int)):
    i = wp.tid()
    wp.atomic_add(counts, i, 1)


@wp.kernel
def mixed_tid_kernel(first: wp.array2d(dtype=int)):
    t = wp.tid()
    i, j = wp.tid()
    first[i, j] = t


@wp.kernel
def pair_tid_count_kernel(counts: wp.array2d(dtype=int)):
    i, j = wp.tid()
    wp.atomic_add(counts, i, j, 1)


@wp.kernel
def scalar_tid_square_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(y, i, x[i] * x[i])


def test_fewer_tid_indices_than_launch_dimensions_are_the_leading_ones():
    # Warp 1.19's documented rule: `i = wp.tid()` is the first index, `i, j = wp.tid()` the
    # first two; every thread of the whole grid runs
    counts = wp.zeros(12, dtype=int, device=DEVICE)
    run(scalar_tid_count_kernel, (3, 4), counts)
    np.testing.assert_array_equal(counts.numpy(), [4, 4, 4] + [0] * 9)
    first = wp.zeros((3, 4), dtype=int, device=DEVICE)
    run(mixed_tid_kernel, (3, 4), first)
    np.testing.assert_array_equal(first.numpy(), np.repeat(np.arange(3), 4).reshape(3, 4))
    pairs = wp.zeros((2, 3), dtype=int, device=DEVICE)
    run(pair_tid_count_kernel, (2, 3, 5), pairs)
    np.testing.assert_array_equal(pairs.numpy(), np.full((2, 3), 5))


def test_gradient_of_a_launch_with_repeated_leading_indices():
    # each x[i] is read by the 4 threads (i, 0..3): y = 4 x^2, dy/dx = 8 x
    xs = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    x = wp.array(xs, dtype=float, requires_grad=True, device=DEVICE)
    y = wp.zeros(3, dtype=float, requires_grad=True, device=DEVICE)
    tape = wp.Tape()
    with tape:
        wp.launch(scalar_tid_square_kernel, dim=(3, 4), inputs=[x, y], device=DEVICE)
    tape.backward(grads={y: wp.ones(3, dtype=float, device=DEVICE)})
    np.testing.assert_allclose(y.numpy(), 4 * xs * xs, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 8 * xs, rtol=1e-6)


# =============================================================================================
# 3. function-valued locals, unsupported constructs, missing functions


@wp.func
def _double(x: float):
    return 2.0 * x


@wp.func
def _halve(x: float):
    return 0.5 * x


def _rebind_function(out: wp.array(dtype=float)):
    f = _double
    f = _halve
    out[0] = f(3.0)


def _rebind_function_to_value(out: wp.array(dtype=float)):
    f = _double
    f = 1.0
    out[0] = f


def _same_function_twice(out: wp.array(dtype=float)):
    f = _double
    f = _double
    out[0] = f(3.0)


def _rebind_grad(out: wp.array(dtype=float)):
    g = wp.grad(_double)
    g, x = (1.0, 2.0)  # noqa: F841
    out[0] = x


def test_function_valued_locals_cannot_be_rebound():
    out = wp.zeros(1, dtype=float, device=DEVICE)
    assert_raises_regex(wp.WarpCodegenError, "rebinding function-valued local 'f' to a "
                        "different function", launch1, wp.kernel(_rebind_function,
                                                                 module="unique"), out)
    assert_raises_regex(wp.WarpCodegenError, "rebinding function-valued local.*non-function",
                        launch1, wp.kernel(_rebind_function_to_value, module="unique"), out)
    assert_raises_regex(wp.WarpCodegenError, "Cannot reassign local 'g'.*wp.grad", launch1,
                        wp.kernel(_rebind_grad, module="unique", enable_backward=False), out)
    launch1(wp.kernel(_same_function_twice, module="unique"), out)
    assert out.numpy()[0] == 6.0


def _list_literal():
    x = [1.0, 2.0, 3.0]  # noqa: F841


def _dict_literal():
    x = {"a": 1.0}  # noqa: F841


def _missing_function():
    wp.no_such_function_here()


def test_unsupported_constructs_and_missing_functions_in_warps_words():
    assert_raises_regex(RuntimeError, r"List constructs are not supported in kernels\. Use "
                        r"vectors like `wp\.vec3\(\)`", launch1,
                        wp.kernel(_list_literal, module="unique"))
    assert_raises_regex(RuntimeError, r"Construct `ast\.Dict` not supported in kernels\.",
                        launch1, wp.kernel(_dict_literal, module="unique"))
    assert_raises_regex(AttributeError, r"Could not find function wp\.no_such_function_here",
                        launch1, wp.kernel(_missing_function, module="unique"))


# =============================================================================================
# 4. module build options


def test_module_build_options_and_resolved_options():
    opts = wp.ModuleBuildOptions(extra_cpu_preamble="#define A 1")
    merged = opts.merged(wp.ModuleBuildOptions(extra_cpu_preamble="#define B 2",
                                               extra_cpu_include_dirs=["/tmp"]))
    assert merged.extra_cpu_preamble.splitlines() == ["#define A 1", "#define B 2"]
    assert merged.extra_cpu_include_dirs == ["/tmp"] and opts.extra_cpu_include_dirs == []
    with pytest.raises(TypeError):
        wp.ModuleBuildOptions(extra_cuda_preamble=3)

    @wp.kernel(module="unique")
    def k(x: wp.array(dtype=float)):
        x[0] = 1.0

    resolved = k.module.resolve_options(wp.config)
    assert resolved["mode"] == wp.config.mode
    assert "optimization_level" in resolved and resolved["block_dim"] == k.module.options["block_dim"]
    assert k.module.resolve_options(wp.config, block_dim=64)["block_dim"] == 64


# =============================================================================================
# 5. struct fields


@wp.struct
class Fields:
    v: wp.vec3
    m: wp.mat22
    values: wp.array(dtype=wp.int32)
    grid: wp.array2d(dtype=wp.int32)


def test_struct_fields_convert_or_refuse_what_is_assigned():
    s = Fields()
    assert isinstance(s, Fields.cls)
    for value in (123, 1.5):
        assert_raises_regex(TypeError, "Struct field 'v' expects vec3f but got a single value",
                            setattr, s, "v", value)
    s.v = [4.0, 5.0, 6.0]
    np.testing.assert_array_equal(np.array(s.v), [4.0, 5.0, 6.0])
    s.m = [[1.0, 2.0], [3.0, 4.0]]
    np.testing.assert_array_equal(np.array(s.m).reshape(2, 2), [[1.0, 2.0], [3.0, 4.0]])
    s.v = None
    np.testing.assert_array_equal(np.array(s.v), [0.0, 0.0, 0.0])
    assert_raises_regex(TypeError, "Struct field 'values' expects a Warp array, got list",
                        setattr, s, "values", [1, 2, 3])
    assert_raises_regex(TypeError, "Struct field 'values' expects dtype int32, got float32",
                        setattr, s, "values", wp.zeros(2, dtype=float, device=DEVICE))
    assert_raises_regex(TypeError, r"Struct field 'grid' expects an array with 2 dimension\(s\), "
                        r"got 1 dimension\(s\)", setattr, s, "grid", ints([1]))


def test_structs_cannot_inherit():
    with pytest.raises(RuntimeError, match="Warp structs must be defined as base classes"):
        @wp.struct
        class Child(Fields):
            y: int


# =============================================================================================
# 6. launch arguments, wp.Launch defaults, Python-scope calls


@wp.kernel
def vec3_param(v: wp.vec3, out: wp.array(dtype=float)):
    out[0] = v[0] + v[1] + v[2]


def test_launch_refuses_single_values_and_none_for_vectors():
    out = wp.zeros(1, dtype=float, device=DEVICE)
    for value in (123, 1.5):
        assert_raises_regex(RuntimeError, "argument 'v' expects vec3f but got a single value",
                            run, vec3_param, 1, value, out)
    assert_raises_regex(ValueError, "Failed to convert argument for param v to vec3f", run,
                        vec3_param, 1, None, out)
    for value in ((1.0, 2.0, 3.0), [1.0, 2.0, 3.0], np.array([1.0, 2.0, 3.0])):
        run(vec3_param, 1, value, out)
        assert out.numpy()[0] == 6.0


@wp.kernel
def composite_params(v: wp.vec3, q: wp.quat, t: wp.transform, out: wp.array(dtype=float)):
    out[0] = v[0] + v[1] + v[2]
    out[1] = q[0] + q[1] + q[2] + q[3]
    out[2] = t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6]


def test_a_default_constructed_launch_zeroes_composite_parameters():
    out = wp.full(3, -1.0, dtype=float, device=DEVICE)
    cmd = wp.Launch(composite_params, wp.get_device(DEVICE))
    cmd.set_param_by_name("out", out)
    cmd.set_dim(1)
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), [0.0, 0.0, 0.0])  # not identity rotations


def _bit_count_of_float(value: float, out: wp.array(dtype=wp.int32)):
    out[0] = wp.bit_count(value)


def test_bit_count_of_a_non_integer_fits_no_overload():
    assert_raises_regex(RuntimeError, "Couldn't find function overload for 'bit_count'", run,
                        wp.kernel(_bit_count_of_float, module="unique"), 1, 1.0,
                        wp.zeros(1, dtype=wp.int32, device=DEVICE))
    for value in (wp.float32(0.0), wp.vec2i(0, 0)):
        assert_raises_regex(RuntimeError, "Couldn't find a function 'bit_count' compatible",
                            wp.bit_count, value)


def test_python_scope_transform_constructor_forms():
    comps = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    for t in (wp.transformf, wp.transformd):
        assert [float(x) for x in t()] == [0.0] * 6 + [1.0]
        assert [float(x) for x in t(1.5)] == [1.5] * 7
        assert [float(x) for x in t(True)] == [1.0] * 7
        assert [float(x) for x in t(*comps)] == comps
        assert [float(x) for x in t((1.0, 2.0, 3.0))] == [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]
        assert [float(x) for x in t(p=comps[:3], q=comps[3:])] == comps
        assert [float(x) for x in t(wp.transformd(*comps))] == comps
        assert_raises_regex(TypeError, "Invalid argument in transformation constructor: expected "
                            "a scalar value, got object", t, object())
        assert_raises_regex(TypeError, "Invalid argument 'p' in transformation constructor: "
                            "expected a sequence, got float", t, 1.5, 2.5)
        assert_raises_regex(TypeError, "Invalid argument 'q' in transformation constructor: "
                            "expected a sequence, got float", lambda t=t: t(q=1.0))
        assert_raises_regex(TypeError, "^multiple values for argument 'q'$",
                            lambda t=t: t(*comps, q=comps[3:]))
        assert_raises_regex(TypeError, "^got an unexpected keyword argument 'pos'$",
                            lambda t=t: t(pos=comps[:3]))


# =============================================================================================
# 7. hash grids in graph captures


@wp.kernel
def count_neighbours(grid: wp.uint64, radius: float, pts: wp.array(dtype=wp.vec3),
                     counts: wp.array(dtype=wp.int32)):
    i = wp.tid()
    n = int(0)
    for index in wp.hash_grid_query(grid, pts[i], radius):
        if wp.length(pts[index] - pts[i]) <= radius:
            n += 1
    counts[i] = n


def test_a_captured_hash_grid_build_runs_again_on_each_replay():
    radius = 0.25
    points = wp.array([[0.0, 0.0, 0.0], [3.0, 0.0, 0.0]], dtype=wp.vec3, device=DEVICE)
    source = wp.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0]], dtype=wp.vec3, device=DEVICE)
    counts = wp.zeros(2, dtype=wp.int32, device=DEVICE)
    grid = wp.HashGrid(16, 16, 16, device=DEVICE)
    grid.build(points, radius)
    wp.load_module(device=DEVICE)
    with wp.ScopedCapture(device=DEVICE, force_module_load=False) as capture:
        wp.copy(points, source)
        grid.build(points, radius)
        wp.launch(count_neighbours, dim=2, inputs=[wp.uint64(grid.id), radius, points, counts],
                  device=DEVICE)
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(counts.numpy(), [2, 2])  # built from the copied points
    source.assign([[0.0, 0.0, 0.0], [5.0, 0.0, 0.0]])
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(counts.numpy(), [1, 1])  # rebuilt from the new points
    with pytest.raises(NotImplementedError, match="reserve before capture"), \
            wp.ScopedCapture(device=DEVICE, force_module_load=False):
        grid.reserve(8)


# =============================================================================================
# 8. struct arrays: seeded gradients, component stores, arrays held in array elements


@wp.struct
class State:
    position: wp.vec3
    velocity: wp.vec3


@wp.kernel
def seed_state_grads(g: wp.array(dtype=State), pos: wp.vec3):
    i = wp.tid()
    s = State()
    s.position = pos
    g[i] = s


@wp.kernel
def write_positions(y: wp.array(dtype=State), p: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    y[i].position = 2.0 * p[i]


def test_backward_seeded_through_struct_array_gradients():
    # regression: backward() from user-set .grad of a struct array failed in numpy (`any()` of
    # a structured array)
    p = wp.array(np.ones((2, 3), dtype=np.float32), dtype=wp.vec3, requires_grad=True,
                 device=DEVICE)
    y = wp.zeros(2, dtype=State, requires_grad=True, device=DEVICE)
    run(seed_state_grads, 2, y.grad, wp.vec3(1.0, 2.0, 3.0))
    tape = wp.Tape()
    with tape:
        run(write_positions, 2, y, p)
    tape.backward()
    np.testing.assert_array_equal(p.grad.numpy(), [[2.0, 4.0, 6.0]] * 2)


def _vec_into_component(y: wp.array(dtype=wp.vec3), src: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    y[i].y = src[i]


def test_a_component_store_of_another_type_is_refused_in_warps_words():
    assert_raises_regex(TypeError, "Composite slot assignment expects value of type float32",
                        launch1, wp.kernel(_vec_into_component, module="unique"),
                        wp.zeros(1, dtype=wp.vec3, device=DEVICE),
                        wp.zeros(1, dtype=wp.vec3, device=DEVICE))


@wp.struct
class Holder:
    values: wp.array(dtype=wp.vec3)


@wp.kernel
def write_held_array(holders: wp.array(dtype=Holder), src: wp.array(dtype=float)):
    holders[0].values[1].x = src[0]


def test_stores_into_an_array_held_by_an_array_element():
    holder = Holder()
    holder.values = wp.zeros(2, dtype=wp.vec3, device=DEVICE)
    holders = wp.array([holder], dtype=Holder, device=DEVICE)
    run(write_held_array, 1, holders, wp.array([5.0], dtype=float, device=DEVICE))
    np.testing.assert_array_equal(holder.values.numpy(), [[0.0, 0.0, 0.0], [5.0, 0.0, 0.0]])


# =============================================================================================
# 9. indexed arrays: generic kernels, wp.map, operators


@wp.kernel
def increment_2d(a: Any):
    i, j = wp.tid()
    a[i, j] = a[i, j] + 1


def test_indexed_arrays_choose_a_generic_kernels_overload():
    data = wp.zeros((3, 3), dtype=int, device=DEVICE)
    idx = wp.array([0, 2], dtype=int, device=DEVICE)
    view = wp.indexedarray(data, [idx, idx])
    run(increment_2d, data.shape, data)
    run(increment_2d, view.shape, view)
    np.testing.assert_array_equal(data.numpy(), [[2, 1, 2], [1, 1, 1], [2, 1, 2]])


def test_indexed_arrays_in_wp_map_and_operators():
    base = wp.array(np.arange(10, dtype=np.float32), dtype=float, device=DEVICE)
    view = wp.indexedarray1d(base, [wp.array([1, 3, 5], dtype=int, device=DEVICE)])
    out = wp.map(lambda x: x * 10.0, view)
    assert isinstance(out, wp.array)
    np.testing.assert_array_equal(out.numpy(), [10.0, 30.0, 50.0])
    wp.map(lambda x: x + 1.0, view, out=view)  # written through the indices
    np.testing.assert_array_equal(base.numpy()[[1, 3, 5]], [2.0, 4.0, 6.0])
    np.testing.assert_array_equal((2.0 * view).numpy(), [4.0, 8.0, 12.0])
    view += 1.0
    assert isinstance(view, wp.indexedarray)
    np.testing.assert_array_equal(base.numpy()[[0, 1, 2, 3]], [0.0, 3.0, 2.0, 5.0])


# =============================================================================================
# 10. type factories and annotations


def test_matrix_types_have_two_dimensions():
    with pytest.raises(ValueError, match=r"Matrix shape must have exactly two dimensions, got 1 "
                                         r"dimension in shape \(2,\)"):
        wp.types.matrix((2,), wp.float32)


def test_funcs_refuse_union_annotations():
    with pytest.raises(RuntimeError, match="Union type annotations are only supported at Python "
                                           "scope"):
        @wp.func
        def _union(a: int | float) -> float:
            return 0.0


# =============================================================================================
# 11. evaluation order of augmented assignments


@wp.func
def _bump_index(state: wp.array(dtype=wp.int32)) -> int:
    i = state[0]
    state[0] = 1
    return i


@wp.func
def _read_state(state: wp.array(dtype=wp.int32)) -> float:
    return float(state[0]) * 100.0


@wp.kernel
def target_before_value(dst: wp.array(dtype=wp.mat33), state: wp.array(dtype=wp.int32)):
    dst[_bump_index(state)][1] += wp.vec3(_read_state(state), 0.0, 0.0)


def test_an_augmented_assignment_evaluates_its_target_first():
    dst = wp.zeros(2, dtype=wp.mat33, device=DEVICE)
    state = wp.zeros(1, dtype=wp.int32, device=DEVICE)
    run(target_before_value, 1, dst, state)
    expected = np.zeros((2, 3, 3), dtype=np.float32)
    expected[0, 1, 0] = 100.0  # index 0 taken first, then the value reads state == 1
    np.testing.assert_array_equal(dst.numpy(), expected)
