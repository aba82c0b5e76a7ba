"""Warp 1.19 kernel-language and kernel-object forms behave as in warp-lang.

Runs on gradloom by default and on warp-lang with GL_TEST_BACKEND=warp (wpcompat.py), which
checks the expectations themselves; tests of deliberate differences (docs/differences.md) run
on gradloom only. Gradients of these forms are in the gradient corpus (test_grad_corpus.py,
section "language forms").
"""

# ruff: noqa: UP018
import typing
from typing import Any

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE, wp

gradloom_only = pytest.mark.skipif(BACKEND == "warp", reason="a deliberate gradloom difference")

# builtins and types referenced by a bare name, as `from warp import expect_eq, mat22` gives
expect_eq = wp.expect_eq
mat22 = wp.mat22
length = wp.length


def run(kernel, dim, *args):
    wp.launch(kernel, dim=dim, inputs=list(args), device=DEVICE)


def zeros(n, dtype=float):
    return wp.zeros(n, dtype=dtype, device=DEVICE)


# =============================================================================================
# 1. subscripted array annotations


@wp.kernel
def sub_annotations(a: wp.array[float], b: wp.array2d[wp.vec3], c: wp.array3d[float],
                    d: wp.array4d[wp.int32], e: wp.array[float, 2], out: wp.array[float]):
    out[0] = a[1] + b[1, 0][2] + c[0, 1, 1] + float(d[0, 0, 0, 1]) + e[1, 1]


def test_subscripted_array_annotations():
    a = wp.array([1.0, 2.0], dtype=float, device=DEVICE)
    b = wp.array(np.arange(12, dtype=np.float32).reshape(2, 2, 3), dtype=wp.vec3, device=DEVICE)
    c = wp.array(np.full((1, 2, 2), 4.0, np.float32), dtype=float, device=DEVICE)
    d = wp.array(np.arange(2, dtype=np.int32).reshape(1, 1, 1, 2), dtype=wp.int32, device=DEVICE)
    e = wp.array(np.eye(2, dtype=np.float32) * 8.0, dtype=float, device=DEVICE)
    out = zeros(1)
    run(sub_annotations, 1, a, b, c, d, e, out)
    assert out.numpy()[0] == 2.0 + 8.0 + 4.0 + 1.0 + 8.0


def test_subscripted_annotation_objects():
    assert wp.array[float].dtype == wp.float32 and wp.array[float].ndim == 1
    assert wp.array2d[wp.vec3].dtype == wp.vec3 and wp.array2d[wp.vec3].ndim == 2
    assert wp.array[float, 3].ndim == 3
    assert wp.array4d[wp.int8].ndim == 4
    assert wp.array[Any].dtype is Any
    with pytest.raises(TypeError):
        wp.array2d[float, 3]


# =============================================================================================
# 2. kernel objects, modules, module options


def _double(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 2.0


def test_kernel_constructor_key_module():
    k = wp.Kernel(func=_double, key="double_it")
    assert k.key == "double_it"
    assert k.module is wp.get_module(__name__)
    assert k.module.name == __name__
    x = wp.array([1.0, 2.0], dtype=float, device=DEVICE)
    run(k, 2, x)
    np.testing.assert_array_equal(x.numpy(), [2.0, 4.0])
    named = wp.Kernel(func=_double, module=wp.get_module("named_module_test"))
    assert named.module.name == "named_module_test"
    assert named.key == "_double"


def test_default_key_of_a_nested_kernel():
    @wp.kernel
    def nested(x: wp.array(dtype=float)):
        x[0] = 1.0

    assert nested.key == "test_default_key_of_a_nested_kernel__locals__nested"


def test_module_options_roundtrip():
    opts = wp.get_module_options()  # the caller's module
    assert opts is wp.get_module(__name__).options
    assert wp.get_module_options(__name__) is opts
    assert opts["enable_backward"] is True

    @wp.kernel(module="unique", module_options={"max_unroll": 3})
    def k(x: wp.array(dtype=float)):
        x[0] = 1.0

    assert k.module.name != __name__
    assert k.module.options["max_unroll"] == 3
    assert opts["max_unroll"] != 3  # a unique module's options stay its own
    wp.set_module_options({"max_unroll": 5}, k.module)
    assert wp.get_module_options(k.module)["max_unroll"] == 5


def test_module_options_need_a_unique_module():
    with pytest.raises(ValueError):
        @wp.kernel(module_options={"enable_backward": False})
        def k(x: wp.array(dtype=float)):
            x[0] = 1.0


def test_kernel_name_must_be_an_identifier():
    with pytest.raises(ValueError, match="identifier"):
        @wp.kernel(module="unique", name="1bad")
        def k():
            pass


@wp.kernel(module="unique", name="custom_named")
def custom_named_kernel(x: wp.array(dtype=float)):
    x[0] = 3.0


def test_kernel_name_and_module_load():
    assert custom_named_kernel.key == "custom_named"
    custom_named_kernel.module.load(DEVICE)
    x = zeros(1)
    run(custom_named_kernel, 1, x)
    assert x.numpy()[0] == 3.0


def _square_into(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@gradloom_only
def test_enable_backward_false_from_options_and_module():
    x = wp.array([1.0, 2.0], dtype=float, device=DEVICE, requires_grad=True)
    for k in (wp.Kernel(func=_square_into, key="sq_opts", options={"enable_backward": False}),
              wp.kernel(module="unique", module_options={"enable_backward": False})(_square_into),
              wp.kernel(enable_backward=False, module="unique")(_square_into)):
        y = wp.zeros(2, dtype=float, device=DEVICE, requires_grad=True)
        tape = wp.Tape()
        with tape:
            run(k, 2, x, y)
        with pytest.warns(UserWarning, match="enable_backward=False"):
            tape.backward(grads={y: wp.ones(2, dtype=float, device=DEVICE)})
        assert not np.any(x.grad.numpy())  # no gradient through the launch, as in Warp
    # the module's option read when the adjoint is built: switching it back on works
    k = wp.kernel(module="unique", module_options={"enable_backward": False})(_square_into)
    k.module.options["enable_backward"] = True
    y = wp.zeros(2, dtype=float, device=DEVICE, requires_grad=True)
    tape = wp.Tape()
    with tape:
        run(k, 2, x, y)
    tape.backward(grads={y: wp.ones(2, dtype=float, device=DEVICE)})
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


@gradloom_only
def test_module_load_keeps_good_kernels_when_one_fails():
    module = wp.get_module("module_load_test")

    def good(x: wp.array(dtype=float)):
        x[0] = 5.0

    def bad(x: wp.array(dtype=float)):
        x[0] = undefined_name  # noqa: F821

    k_good = wp.Kernel(func=good, module=module)
    k_bad = wp.Kernel(func=bad, module=module)
    assert module.load() is False
    assert k_good.built("forward") and not k_bad.built("forward")
    with pytest.raises(wp.UnknownNameError, match="undefined_name"):
        run(k_bad, 1, zeros(1))


# =============================================================================================
# 3. generic kernels: explicit and implicit overloads


@wp.kernel
def scale_any(x: wp.array(dtype=Any), s: Any):
    i = wp.tid()
    x[i] = x[i] * s


def test_documented_generic_kernel_example():
    # the example of Warp's generics documentation: one kernel, three element types
    x32 = wp.ones(3, dtype=wp.float32, device=DEVICE)
    x64 = wp.ones(3, dtype=wp.float64, device=DEVICE)
    xi = wp.ones(3, dtype=wp.int32, device=DEVICE)
    run(scale_any, 3, x32, 2.5)
    run(scale_any, 3, x64, wp.float64(1.5))
    run(scale_any, 3, xi, 4)
    np.testing.assert_array_equal(x32.numpy(), [2.5] * 3)
    assert x64.numpy().dtype == np.float64
    np.testing.assert_array_equal(x64.numpy(), [1.5] * 3)
    np.testing.assert_array_equal(xi.numpy(), [4] * 3)
    assert len(scale_any.overloads) >= 3


@wp.kernel
def fill_any(a: wp.array[Any], value: Any):
    a[wp.tid()] = value


fill_int = wp.overload(fill_any, [wp.array[int], int])
fill_vec3 = wp.overload(fill_any, {"a": wp.array[wp.vec3], "value": wp.vec3})


def test_explicit_overloads():
    ai = zeros(3, int)
    a3 = zeros(3, wp.vec3)
    run(fill_int, 3, ai, 7)
    run(fill_vec3, 3, a3, wp.vec3(1.0, 2.0, 3.0))
    np.testing.assert_array_equal(ai.numpy(), [7, 7, 7])
    np.testing.assert_array_equal(a3.numpy(), np.tile([1.0, 2.0, 3.0], (3, 1)))
    # the same signature gives the same overload
    assert wp.overload(fill_any, [wp.array[int], int]) is fill_int


@wp.kernel
def mul_any(v: Any, m: Any, out: wp.array[float]):
    r = m * v
    out[0] = r[0] + r[1]


@wp.overload
def mul_any(v: wp.vec2, m: wp.mat22, out: wp.array[float]):  # noqa: F811
    ...


def test_overload_stub_decorator():
    assert isinstance(mul_any, wp.Kernel) and len(mul_any.overloads) == 1
    out = zeros(1)
    run(mul_any, 1, wp.vec2(1.0, 2.0), wp.mat22(2.0, 0.0, 0.0, 3.0), out)
    assert out.numpy()[0] == 8.0


def test_overload_errors():
    with pytest.raises(RuntimeError, match="generic"):
        wp.overload(sub_annotations, [wp.array[float]])
    with pytest.raises(RuntimeError, match="Invalid argument name"):
        wp.overload(fill_any, {"nope": int})
    with pytest.raises(TypeError):
        wp.overload(fill_any, [wp.array2d[int], int])  # ndim differs from the template
    with pytest.raises(TypeError, match="Return annotations"):
        wp.overload(stub_with_return)


@wp.kernel
def stub_with_return(x: Any):
    pass


def stub_with_return(x: float) -> float:  # noqa: F811
    ...


@wp.kernel
def float_set_kernel(x: wp.array(dtype=wp.Float), s: wp.Float):
    x[0] = x[0] * s


@wp.func
def int_sum(v: wp.types.vector(3, wp.Int)):
    return v[0] + v[1] + v[2]


vec3_int16 = wp.types.vector(3, wp.int16)


@wp.kernel
def int_sum_kernel(out: wp.array(dtype=int)):
    out[0] = int_sum(wp.vec3i(1, 2, 3)) + int(int_sum(vec3_int16(wp.int16(4), wp.int16(5),
                                                                  wp.int16(6))))


def test_constrained_generic_annotations():
    a = wp.ones(1, dtype=wp.float64, device=DEVICE)
    run(float_set_kernel, 1, a, wp.float64(3.0))
    assert a.numpy()[0] == 3.0
    out = zeros(1, int)
    run(int_sum_kernel, 1, out)
    assert out.numpy()[0] == 21


def test_generic_func_with_generic_array_parameter():
    @wp.func
    def first_len(x: wp.array(dtype=Any)):
        return x.shape[0]

    @wp.kernel
    def k(x: wp.array(dtype=wp.float64), y: wp.array(dtype=int)):
        y[0] = first_len(x) + first_len(y)

    y = zeros(2, int)
    run(k, 1, wp.zeros(5, dtype=wp.float64, device=DEVICE), y)
    assert y.numpy()[0] == 7


@gradloom_only
def test_generic_kernel_errors_name_the_problem():
    with pytest.raises(wp.LaunchError, match="generic argument 's'"):
        run(scale_any, 1, zeros(1), "text")

    @wp.kernel
    def untyped(x):
        pass

    with pytest.raises(wp.KernelTypeError, match="needs a type annotation") as info:
        run(untyped, 1, zeros(1))
    assert "test_warp_lang_compat.py" in str(info.value)


# =============================================================================================
# 4. @wp.func_replay


@wp.func
def counted_increment(counter: wp.array[int], tid: int, seen: wp.array[int]):
    i = wp.atomic_add(counter, 0, 1)
    seen[tid] = i
    return i


@wp.func_replay(counted_increment)
def replay_counted_increment(counter: wp.array[int], tid: int, seen: wp.array[int]):
    return seen[tid]


@wp.kernel
def replay_kernel(x: wp.array[float], counter: wp.array[int], seen: wp.array[int],
                  y: wp.array[float]):
    tid = wp.tid()
    i = counted_increment(counter, tid, seen)
    y[i] = x[i] * x[i]


def test_func_replay_gradient_and_side_effects_once():
    n = 16
    x = wp.array(np.arange(n, dtype=np.float32), device=DEVICE, requires_grad=True)
    counter, seen = zeros(1, int), zeros(n, int)
    y = wp.zeros(n, dtype=float, device=DEVICE, requires_grad=True)
    tape = wp.Tape()
    with tape:
        run(replay_kernel, n, x, counter, seen, y)
    tape.backward(grads={y: wp.ones(n, dtype=float, device=DEVICE)})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * np.arange(n))
    assert counter.numpy()[0] == n


@gradloom_only  # warp-lang raises AttributeError while formatting this error's message
def test_func_replay_must_match_an_overload():
    with pytest.raises(RuntimeError, match="replay"):
        @wp.func_replay(counted_increment)
        def wrong(counter: wp.array[int], tid: float, seen: wp.array[int]):
            return seen[0]


# =============================================================================================
# 5. language forms


@wp.struct
class Body:
    mass: float
    vel: wp.vec3
    count: int


@wp.kernel
def struct_args_kernel(out: wp.array[float]):
    b = Body(1.5, wp.vec3(0.0, 2.0, 0.0), 3)
    c = Body(2.0, b.vel * 2.0, b.count + 1)
    out[0] = b.mass + b.vel[1] + float(b.count) + c.mass + c.vel[1] + float(c.count)


def test_struct_constructed_with_arguments():
    out = zeros(1)
    run(struct_args_kernel, 1, out)
    assert out.numpy()[0] == 1.5 + 2.0 + 3.0 + 2.0 + 4.0 + 4.0


@gradloom_only
def test_struct_keywords_and_errors():
    # keywords and leaving trailing fields out (zero) go beyond warp-lang, which takes all fields
    @wp.kernel
    def kw(out: wp.array[float]):
        b = Body(vel=wp.vec3(1.0), mass=4.0)
        c = Body(2.0)
        out[0] = b.mass + b.vel[0] + c.mass + c.vel[2] + float(b.count)

    out = zeros(1)
    run(kw, 1, out)
    assert out.numpy()[0] == 7.0

    @wp.kernel
    def bad(out: wp.array[float]):
        b = Body(1.5, 2.0)
        out[0] = b.mass

    with pytest.raises(wp.CompileError, match="field 'vel' is vec3f") as info:
        run(bad, 1, out)
    assert "test_warp_lang_compat.py" in str(info.value)


@wp.kernel
def reversed_kernel(a: int, b: int, out: wp.array[int]):
    n = int(0)
    for i in reversed(range(a, b)):
        out[n] = i
        n += 1
    for i in reversed(range(a, b, 3)):
        out[n] = i
        n += 1
    for i in reversed(range(b, a, -2)):
        out[n] = i
        n += 1
    out[63] = n


@pytest.mark.parametrize("a,b", [(0, 5), (2, 3), (3, 3), (5, 0), (-4, 7)])
def test_reversed_range(a, b):
    out = zeros(64, int)
    run(reversed_kernel, 1, a, b, out)
    want = [*reversed(range(a, b)), *reversed(range(a, b, 3)), *reversed(range(b, a, -2))]
    got = out.numpy()
    assert list(got[: got[63]]) == want


@wp.kernel
def slices_kernel(out: wp.array[float]):
    v = wp.vec4(1.0, 2.0, 3.0, 4.0)
    s = v[1:3]
    out[0] = s[0] + s[1] * 10.0
    m = wp.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    r = m[0, 1:3]
    out[1] = r[0] + r[1] * 10.0
    t = m[1:]
    out[2] = t[0, 0] + t[1, 2] * 10.0
    u = v[::-1]
    out[3] = u[0]
    w = v[-2:]
    out[4] = w[0]
    c = m[:, 1]
    out[5] = c[0] + c[2] * 10.0
    sub = m[1:, :2]
    out[6] = sub[1, 1]
    v[1:] = wp.vec3(5.0, 6.0, 7.0)
    v[::2] += wp.vec2(10.0, 20.0)
    out[7] = v[0] + v[1] * 10.0 + v[2] * 100.0 + v[3] * 1000.0
    m[1:, 0] = wp.vec2(-1.0, -2.0)
    m[0, 1:] *= 2.0
    out[8] = m[1, 0] + m[2, 0] * 10.0 + m[0, 2] * 100.0


def test_vector_and_matrix_slices():
    out = zeros(9)
    run(slices_kernel, 1, out)
    # values printed by warp-lang 1.19 for out[0:7]; the writes by hand
    np.testing.assert_array_equal(out.numpy(), [32.0, 32.0, 94.0, 4.0, 3.0, 82.0, 8.0,
                                                11.0 + 50.0 + 2600.0 + 7000.0,
                                                -1.0 - 20.0 + 600.0])


@gradloom_only
def test_slice_errors():
    @wp.kernel
    def runtime_bound(n: int, out: wp.array[float]):
        v = wp.vec4(1.0)
        s = v[0:n]
        out[0] = s[0]

    with pytest.raises(wp.CompileError, match="must be a compile-time constant"):
        run(runtime_bound, 1, 2, zeros(1))


@wp.kernel
def dtype_kernel(x: wp.array[wp.float64], out: wp.array[wp.float64]):
    one = x.dtype(1)
    v = wp.vec3d(1.0, 2.0, 3.0)
    two = v.dtype(2.0)
    three = type(x[0])(3)
    out[0] = one + two + three + x[0]


def test_dtype_and_type_as_constructors():
    x = wp.array([0.5], dtype=wp.float64, device=DEVICE)
    out = zeros(1, wp.float64)
    run(dtype_kernel, 1, x, out)
    assert out.numpy()[0] == 6.5


@wp.kernel
def mixed_compare(d: float, radius: int, big: wp.int64, out: wp.array[int]):
    out[0] = int(d < radius)
    out[1] = int(radius < d)
    out[2] = int(radius < big)
    out[3] = int(wp.float64(d) > d)


def test_float_compared_with_int_variable():
    out = zeros(4, int)
    run(mixed_compare, 1, 2.5, 3, wp.int64(3_000_000_000), out)
    np.testing.assert_array_equal(out.numpy(), [1, 0, 1, 0])
    run(mixed_compare, 1, 3.5, 3, wp.int64(3), out)
    np.testing.assert_array_equal(out.numpy(), [0, 1, 0, 0])


@gradloom_only
def test_signed_unsigned_compare_is_rejected():
    @wp.kernel
    def k(a: int, b: wp.uint32, out: wp.array[int]):
        out[0] = int(a < b)

    with pytest.raises(wp.KernelTypeError, match="different types"):
        run(k, 1, -1, wp.uint32(1), zeros(1, int))


@wp.kernel
def after_loop_kernel(n: int, out: wp.array[float]):
    for i in range(n):
        y = float(i) * 4.0
    out[0] = y
    out[1] = float(i)
    j = int(0)
    while j < n:
        w = float(j) + 0.5
        j += 1
    out[2] = w


def test_variable_assigned_in_loop_used_after():
    out = zeros(3)
    run(after_loop_kernel, 1, 3, out)
    np.testing.assert_array_equal(out.numpy(), [8.0, 2.0, 2.5])  # warp-lang gives the same


@gradloom_only
def test_variable_from_a_loop_that_ran_no_trip_is_zero():
    out = wp.array([7.0, 7.0, 7.0], dtype=float, device=DEVICE)
    run(after_loop_kernel, 1, 0, out)
    np.testing.assert_array_equal(out.numpy(), [0.0, 0.0, 0.0])


@gradloom_only
def test_loop_local_read_before_its_first_assignment():
    @wp.kernel
    def k(out: wp.array[float]):
        s = float(0.0)
        for i in range(4):
            if i > 0:
                s += prev  # noqa: F821 - set by the previous trip
            prev = float(i) * 10.0
        out[0] = s + prev

    out = zeros(1)
    run(k, 1, out)
    assert out.numpy()[0] == 0.0 + 10.0 + 20.0 + 30.0


@wp.kernel
def ifexp_kernel(x: float, n: int, a: wp.array[float], counts: wp.array[int],
                 out: wp.array[float]):
    wp.atomic_add(counts, 0, 1) if x > 0.0 else wp.atomic_add(counts, 1, 1)
    i = wp.tid()
    out[i] = a[i + 1] if i + 1 < n else 0.5


def test_conditional_expression_runs_one_branch():
    counts = zeros(2, int)
    a = wp.array([1.0, 2.0, 3.0], dtype=float, device=DEVICE)
    out = zeros(3)
    run(ifexp_kernel, 3, 1.0, 3, a, counts, out)
    np.testing.assert_array_equal(counts.numpy(), [3, 0])
    np.testing.assert_array_equal(out.numpy(), [2.0, 3.0, 0.5])


@wp.kernel
def bare_names_kernel(out: wp.array[float]):
    m = mat22(1.0, 2.0, 3.0, 4.0)
    expect_eq(m[0, 1], 2.0)
    out[0] = length(wp.vec3(3.0, 4.0, 0.0))


def test_builtins_imported_by_bare_name():
    out = zeros(1)
    run(bare_names_kernel, 1, out)
    assert out.numpy()[0] == 5.0


@wp.kernel
def expect_near_kw(out: wp.array[float]):
    wp.expect_near(out[0], 1.0, tolerance=0.01)


def test_builtin_keyword_value(capfd):
    out = wp.array([1.005], dtype=float, device=DEVICE)
    run(expect_near_kw, 1, out)
    assert "expect_near" not in capfd.readouterr().out


def test_func_decorator_with_arguments():
    @wp.func(name="triple_it")
    def triple(x: float):
        return 3.0 * x

    @wp.kernel
    def k(out: wp.array[float]):
        out[0] = triple(2.0)

    out = zeros(1)
    run(k, 1, out)
    assert out.numpy()[0] == 6.0
    assert len(typing.get_overloads(wp.func)) >= 2


# =============================================================================================
# 6. wp.static over locals, *-unpacking, tuples


@wp.func
def one() -> int:
    return 1


@wp.func
def two() -> int:
    return 2


STATIC_FUNCS = [one, two]


@wp.kernel
def static_locals_kernel(v1: wp.vec2, out: wp.array[int]):
    s = int(0)
    for i in range(2):  # unrolled: a static expression reads i
        s += wp.static(STATIC_FUNCS[i])() * 10 + wp.static(i)
    out[0] = s
    v2 = wp.vec3()
    out[1] = wp.static(len(v1) + len(v2) + 1)
    t = (1, 2.5, wp.vec3(1.0))
    out[2] = wp.static(len(t))
    n = 4
    out[3] = wp.static(n * 2)


def test_static_sees_locals_and_unrolled_indices():
    out = zeros(4, int)
    run(static_locals_kernel, 1, wp.vec2(), out)
    np.testing.assert_array_equal(out.numpy(), [31, 6, 3, 8])


@gradloom_only  # warp-lang 1.19 fails to compile break/continue in such an unrolled loop
def test_break_and_continue_in_an_unrolled_loop():
    @wp.kernel
    def k(out: wp.array[int]):
        acc = int(0)
        for j in range(5):
            if j == 3:
                break
            if j == 1:
                continue
            acc += wp.static(j) * 100
        out[0] = acc

    out = zeros(1, int)
    run(k, 1, out)
    assert out.numpy()[0] == 200


@wp.kernel
def starred_kernel(a: wp.array[int], out: wp.array[float]):
    v3 = wp.vec3(1.0, 2.0, 3.0)
    v4 = wp.vec4(*v3, 4.0)
    m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    m2 = wp.matrix_from_rows(*m)
    iv = wp.vec3i(*a[0:6:2])
    out[0] = v4[3] + v4[0] * 10.0 + m2[1, 0] * 100.0 + float(iv[2]) * 1000.0
    out[1] = wp.max(*v3[1:])


def test_starred_arguments():
    out = zeros(2)
    run(starred_kernel, 1, wp.array(np.arange(6, dtype=np.int32), device=DEVICE), out)
    np.testing.assert_array_equal(out.numpy(), [4.0 + 10.0 + 300.0 + 4000.0, 3.0])


@wp.func
def tuple_sum(values: tuple[int, ...]):
    out = int(0)
    for i in range(wp.static(len(values))):
        out += values[i]
    return out


@wp.func
def tuple_scale(values: tuple[wp.vec3, float]) -> float:
    return wp.length(values[0]) * values[1]


@wp.kernel(module="unique")
def tuple_kernel(out: wp.array[float]):
    t = (1, 2, 3, 4)
    out[0] = float(tuple_sum(t))
    out[1] = tuple_scale((wp.vec3(3.0, 4.0, 0.0), 2.0))


def test_tuple_parameters():
    out = zeros(2)
    run(tuple_kernel, 1, out)
    np.testing.assert_array_equal(out.numpy(), [10.0, 10.0])


@gradloom_only
def test_tuple_run_time_index():
    @wp.kernel
    def k(n: int, out: wp.array[float]):
        t = (1.0, 2.0, 4.0)
        s = float(0.0)
        for i in range(n):
            s += t[i]  # one item type: picked at run time
        out[0] = s

    out = zeros(1)
    run(k, 1, 3, out)
    assert out.numpy()[0] == 7.0


@wp.func
def bump(counts: wp.array[int], k: int) -> int:
    return wp.atomic_add(counts, k, 1)


@wp.kernel
def short_circuit_kernel(x: wp.array[float], counts: wp.array[int], out: wp.array[int]):
    i = wp.tid()
    if x[i] > 0.0 and bump(counts, 0) >= 0:
        out[i] = 1
    if x[i] > 0.0 or bump(counts, 1) >= 0:
        out[i] = out[i] + 10


def test_and_or_stop_at_the_deciding_operand():
    x = wp.array([1.0, -1.0, 2.0, -3.0, -4.0], dtype=float, device=DEVICE)
    counts, out = zeros(2, int), zeros(5, int)
    run(short_circuit_kernel, 5, x, counts, out)
    np.testing.assert_array_equal(counts.numpy(), [2, 3])  # bump ran only where needed
    np.testing.assert_array_equal(out.numpy(), [11, 10, 11, 10, 10])
