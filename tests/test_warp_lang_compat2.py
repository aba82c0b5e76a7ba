"""Warp 1.19 kernel-language forms, part 2: constructors, compile errors, wp.static,
wp.Launch, special values, Euler axes, numerics that must agree with warp-lang bit for bit.

Runs on gradloom by default and on warp-lang with GL_TEST_BACKEND=warp (wpcompat.py), which
checks the expectations themselves; tests of gradloom-only behaviour are marked. Gradients of
these forms are in the gradient corpus (test_grad_corpus.py, "language forms, part 2").
"""

# ruff: noqa: UP018
import ast
import enum
import importlib.util
import math
import re

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE, wp

gradloom_only = pytest.mark.skipif(BACKEND == "warp", reason="gradloom's own behaviour")


def run(kernel, dim, *args):
    wp.launch(kernel, dim=dim, inputs=list(args), device=DEVICE)


def zeros(n, dtype=float):
    return wp.zeros(n, dtype=dtype, device=DEVICE)


def compile_error(kernel, *args):
    """The error launching kernel raises (it must raise)."""
    with pytest.raises(Exception) as info:
        run(kernel, 1, *args)
    return info.value


def assert_raises_regex(exc_type, pattern, kernel, *args):
    """As unittest's assertRaisesRegex (Warp's tests use it): pattern searched in str(err)
    alone; pytest's match= also sees the note with the caret excerpt, after the message."""
    with pytest.raises(exc_type) as info:
        run(kernel, 1, *args)
    assert re.search(pattern, str(info.value)), str(info.value)
    return info.value


# =============================================================================================
# 1. constructors: the generic builtins, keywords, Warp's rules


@wp.kernel
def generic_constructors(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    q = wp.types.quaternion(x[0], x[1], x[2], x[3])
    q2 = wp.types.quaternion(wp.types.vector(x[0], x[1], x[2]), x[3])
    v = wp.types.vector(x[0], length=3)  # a fill
    t = wp.types.transformation(wp.types.vector(x[0], x[1], x[2]), q)
    m = wp.types.matrix(x[0], x[1], x[2], x[3], shape=(2, 2))
    out[0] = q[3] + q2[0] + v[2] + t[6] + m[1, 0]


def test_generic_constructor_builtins_in_kernels():
    x = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float, device=DEVICE)
    out = zeros(1)
    run(generic_constructors, 1, x, out)
    assert out.numpy()[0] == 4.0 + 1.0 + 1.0 + 4.0 + 3.0


@wp.kernel
def transform_keywords(out: wp.array(dtype=wp.transform)):
    out[0] = wp.transform(p=wp.vec3(1.0, 2.0, 3.0), q=wp.quat(0.0, 0.0, 1.0, 0.0))
    out[1] = wp.transform(p=wp.vec3(4.0, 5.0, 6.0))  # q: the identity
    out[2] = wp.transform(wp.vec3(7.0, 8.0, 9.0))
    out[3] = wp.types.transformation(out[0])
    t = wp.transform_identity()
    t.p = wp.vec3(1.5, 0.0, 0.0)
    out[4] = t
    out[5] = wp.transform_identity()
    out[5].q = wp.quat(1.0, 0.0, 0.0, 0.0)


def test_transform_keywords_defaults_and_parts():
    out = wp.zeros(6, dtype=wp.transform, device=DEVICE)
    run(transform_keywords, 1, out)
    got = out.numpy()
    np.testing.assert_array_equal(got[0], [1, 2, 3, 0, 0, 1, 0])
    np.testing.assert_array_equal(got[1], [4, 5, 6, 0, 0, 0, 1])
    np.testing.assert_array_equal(got[2], [7, 8, 9, 0, 0, 0, 1])
    np.testing.assert_array_equal(got[3], got[0])
    np.testing.assert_array_equal(got[4], [1.5, 0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(got[5], [0, 0, 0, 1, 0, 0, 0])


def _vec_from_vec2():
    wp.vec3(wp.vec2(1.0, 2.0))


def _vector_without_length():
    wp.types.vector()


def _vector_mixed_literals():
    wp.types.vector(1.0, 2)


def _vector_count_mismatch():
    wp.types.vector(1.0, 2.0, length=5)


def _vec_of_float64(x: wp.float64):
    wp.vec2(x, x)


def _transform_two_scalars():
    wp.transform(1.0, 2.0)


def _transform_copy_other_dtype():
    wp.transformd(wp.transform(1.0))


def _matrix_without_shape():
    wp.types.matrix(1.0, 2.0, 3.0)


def _matrix_fill_other_type(x: wp.float32):
    wp.types.matrix(x, shape=(3, 2), dtype=wp.float16)


@pytest.mark.parametrize("func,args,message", [
    (_vec_from_vec2, [], "incompatible vector of length 3 given when copy constructing a vector "
                         "of length 2"),
    (_vector_without_length, [], "the `length` argument must be specified when zero-initializing "
                                 "a vector"),
    (_vector_mixed_literals, [], "all values given when constructing a vector must have the same "
                                 "type"),
    (_vector_count_mismatch, [], r"incompatible number of values given \(2\) when constructing a "
                                 "vector of length 5"),
    (_vec_of_float64, [1.0], "all values used to initialize this vector are expected to be of the "
                             "type `float32`"),
    (_transform_two_scalars, [], r"incompatible number of values given \(2\) when constructing a "
                                 "transform; expected 0, 1, or 7"),
    (_transform_copy_other_dtype, [], "copy constructing a transform requires matching source and "
                                      "target dtypes, got `float32` and `float64`"),
    (_matrix_without_shape, [], "the `shape` argument must be specified when initializing a "
                                "matrix by value"),
    (_matrix_fill_other_type, [1.0], "the value used to fill this matrix is expected to be of the "
                                     "type `float16`"),
], ids=lambda v: getattr(v, "__name__", None) or "")
def test_constructor_errors_are_runtime_errors_ending_with_warps_words(func, args, message):
    assert_raises_regex(RuntimeError, message + "$", wp.kernel(func, module="unique"), *args)


mat32d = wp.types.matrix(shape=(3, 2), dtype=wp.float64)


@wp.kernel
def typed_with_keywords(out: wp.array(dtype=wp.float64)):
    c = mat32d(wp.float64(2.0))
    d = mat32d(c, shape=(3, 2))
    v = wp.vec3(1.5, length=3)
    out[0] = d[2, 1] + wp.float64(v[1])


def test_typed_constructors_take_matching_length_shape_dtype():
    out = zeros(1, wp.float64)
    run(typed_with_keywords, 1, out)
    assert out.numpy()[0] == 3.5


# =============================================================================================
# 2. compile errors: Warp's exception classes, message last


def _undefined_name():
    undefined_thing(1.0)  # noqa: F821


def _bad_slice(a: wp.array(dtype=int), n: int):
    wp.vec3i(*a[:n])


def _star_scalar(x: int):
    wp.vec3i(*x)


@wp.struct
class Pair:
    a: float
    b: float


def _missing_field(p: Pair):
    _ = p.nonexisting


def test_compile_errors_have_warps_exception_classes():
    k = wp.kernel(_undefined_name, module="unique")
    with pytest.raises(KeyError, match="Referencing undefined symbol: undefined_thing"):
        run(k, 1)
    k = wp.kernel(_bad_slice, module="unique")
    with pytest.raises(wp.WarpCodegenValueError, match="Slice component must be a compile-time "
                                                       "constant"):
        run(k, 1, wp.zeros(3, dtype=int, device=DEVICE), 2)
    k = wp.kernel(_star_scalar, module="unique")
    with pytest.raises(wp.WarpCodegenTypeError, match="Starred expressions are only supported for"):
        run(k, 1, 3)
    k = wp.kernel(_missing_field, module="unique")
    assert_raises_regex(AttributeError, r"`nonexisting` is not an attribute of 'p' "
                                        r"\([\w.]+\.Pair\)$", k, Pair())


@gradloom_only
def test_compile_error_message_layout():
    k = wp.kernel(_vec_from_vec2, module="unique")
    err = compile_error(k)
    assert isinstance(err, wp.WarpCodegenError) and isinstance(err, wp.CompileError)
    message = str(err)  # one line: file:line:col in func: the problem
    assert "\n" not in message and "test_warp_lang_compat2.py:" in message
    assert "in _vec_from_vec2: cannot convert vec2f to vec3f" in message
    note = err.__notes__[0].splitlines()  # the user's line with a caret under the column
    assert note[0].strip() == "wp.vec3(wp.vec2(1.0, 2.0))" and note[1].strip() == "^"


# =============================================================================================
# 3. wp.static


_STATIC_CALLS = []


def _counted(value):
    _STATIC_CALLS.append(value)
    return value


def test_static_is_evaluated_once_when_the_kernel_is_declared():
    _STATIC_CALLS.clear()

    @wp.kernel(module="unique")
    def k(out: wp.array(dtype=float)):
        out[0] = wp.static(_counted(2.5)) + wp.static(1.0 + wp.static(_counted(0.5)))

    assert _STATIC_CALLS == [2.5, 0.5]  # at declaration, the nested one once
    out = zeros(1)
    run(k, 1, out)
    assert out.numpy()[0] == 4.0 and _STATIC_CALLS == [2.5, 0.5]


def test_static_values_of_same_source_kernels_stay_apart():
    def make(v):
        @wp.kernel(module="unique")
        def k(a: wp.array(dtype=float)):
            a[0] = wp.static(v * 2.0)
        return k

    a = zeros(1)
    for v in (1.0, 2.0, 1.0):
        run(make(v), 1, a)
        assert a.numpy()[0] == 2.0 * v
    assert make(3.0) is make(3.0) and make(3.0) is not make(4.0)  # Warp's unique kernels


@wp.func
def _three() -> int:
    return 3


@wp.kernel
def static_int_loop_bound(out: wp.array(dtype=int)):
    s = int(0)
    for i in range(wp.static(_three())):  # a @wp.func called in Python: an int32 value
        s += wp.static(i * 10)
    out[0] = s


@wp.kernel
def nested_same_name(out: wp.array(dtype=int)):
    n = int(0)
    for j in range(2):
        for j in range(3):  # noqa: B007 (rebinds the outer index, as the test intends)
            pass
        out[n] = wp.static(j)
        n += 1


def test_static_loop_indices():
    out = zeros(2, int)
    run(static_int_loop_bound, 1, out)
    assert out.numpy()[0] == 30
    run(nested_same_name, 1, out)
    np.testing.assert_array_equal(out.numpy(), [2, 2])


def test_static_of_a_struct_value_and_unsupported_values():
    s = Pair()
    s.a, s.b = 1.25, 2.0

    @wp.kernel(module="unique")
    def k(out: wp.array(dtype=Pair)):
        out[0] = wp.static(s)

    out = wp.zeros(1, dtype=Pair, device=DEVICE)
    run(k, 1, out)
    assert tuple(out.numpy()[0]) == (1.25, 2.0)

    def none_static():
        wp.static(None)

    with pytest.raises(RuntimeError, match="Static expression returns an unsupported value: None "
                                           "is returned"):
        run(wp.kernel(none_static, module="unique"), 1)


_ALIAS = wp.static


def _alias_static(out: wp.array(dtype=int)):
    out[0] = _ALIAS(7)


def test_static_through_an_alias_rebound_after_declaration():
    global _ALIAS
    k = wp.kernel(_alias_static, module="unique")
    _ALIAS = lambda v: v + 1  # noqa: E731
    try:
        out = zeros(1, int)
        run(k, 1, out)
        assert out.numpy()[0] == 7
    finally:
        _ALIAS = wp.static


class _Double(ast.NodeTransformer):
    """Rewrites every float constant c to 2 c."""

    def visit_Constant(self, node):
        if isinstance(node.value, float):
            return ast.copy_location(ast.Constant(node.value * 2.0), node)
        return node


def _transformed(out: wp.array(dtype=float)):
    out[0] = 1.5


_BUMPS = []


def _bump():
    _BUMPS.append(1.0)
    return float(len(_BUMPS))


class _ReuseCall(ast.NodeTransformer):
    """Makes the second statement's value the first one's node itself (shared)."""

    def visit_FunctionDef(self, node):
        node.body[1].value = node.body[0].value
        return node


def _reused(out: wp.array(dtype=float)):
    x = wp.static(_bump())
    y = 0.0
    out[0] = 10.0 * x + y


def test_a_static_call_a_transformer_reuses_is_evaluated_per_occurrence():
    _BUMPS.clear()
    k = wp.Kernel(_reused, module=wp.get_module(f"{__name__}_reused"),
                  code_transformers=[_ReuseCall()])
    out = zeros(1)
    run(k, 1, out)
    assert out.numpy()[0] == 12.0


def test_code_transformers_rewrite_the_kernel():
    k = wp.Kernel(_transformed, module=wp.get_module(f"{__name__}_transformed"),
                  code_transformers=[_Double()])
    out = zeros(1)
    run(k, 1, out)
    assert out.numpy()[0] == 3.0


def test_hash_module_follows_the_code_and_its_constants(tmp_path):
    def load(name, value):
        path = tmp_path / f"{name}.py"
        path.write_text("import gradloom as wp\n" if BACKEND != "warp" else "import warp as wp\n")
        path.write_text(path.read_text() + f"C = {value}\n@wp.func\ndef f():\n    return C\n"
                        "@wp.kernel\ndef k(a: wp.array(dtype=float)):\n    a[0] = wp.static(f)()\n")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        path.unlink()  # hashing needs no file: the source was read at declaration
        return wp.get_module(module.__name__).hash_module()

    h1, h2, h3 = load("hm_a", 1.5), load("hm_b", 2.5), load("hm_c", 1.5)
    assert h1 != h2 and h1 == h3


# =============================================================================================
# 4. wp.Launch objects and None arrays


@wp.kernel
def arange_k(out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = i


@wp.kernel
def square_k(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


def test_launch_constructed_empty_then_filled():
    out = zeros(6, int)
    cmd = wp.Launch(arange_k, wp.get_device(DEVICE))
    cmd.set_param_by_name("out", out)
    cmd.set_dim(3)
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), [0, 1, 2, 0, 0, 0])

    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True, device=DEVICE)
    y = wp.zeros_like(x, requires_grad=True)
    y.grad.fill_(1.0)
    adj = wp.Launch(square_k, wp.get_device(DEVICE), adjoint=True)
    adj.set_param_by_name("x", x)
    adj.set_param_by_name("y", y)
    adj.set_dim(3)
    adj.launch()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])


@wp.struct
class WithArray:
    a: wp.array(dtype=int)
    i: int


@wp.kernel
def unset_array_k(p: WithArray, b: wp.array(dtype=int), out: wp.array(dtype=int)):
    out[0] = p.i + b.shape[0] + p.a.shape[0]


def test_none_arrays_are_unset():
    out = zeros(1, int)
    p = WithArray()
    p.i = 5
    run(unset_array_k, 1, p, None, out)
    assert out.numpy()[0] == 5


@wp.kernel
def vec3_param_k(v: wp.vec3):
    pass


def test_launch_argument_errors_in_warps_words():
    with pytest.raises(RuntimeError, match="argument 'p' expects WithArray but got None"):
        run(unset_array_k, 1, None, None, zeros(1, int))
    with pytest.raises(RuntimeError, match="argument 'v' expects vec3f but got a single value"):
        run(vec3_param_k, 1, 1.5)


# =============================================================================================
# 5. special values, printf, names


@wp.kernel
def special_constants(out: wp.array(dtype=float)):
    out[0] = 2.0 / 0.0
    out[1] = -1.0 / 0.0
    out[2] = 0.0 / 0.0
    out[3] = float(wp.NAN)
    out[4] = float(wp.INF)
    out[5] = wp.HALF_PI


def test_float_constant_division_by_zero_and_named_constants():
    out = zeros(6)
    run(special_constants, 1, out)
    got = out.numpy()
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2]) and np.isnan(got[3])
    assert got[4] == np.inf and got[5] == np.float32(math.pi / 2)


@wp.kernel
def clamp_k(x: wp.array(dtype=float), a: wp.array(dtype=float), b: wp.array(dtype=float),
            y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.clamp(x[i], a[i], b[i])


def test_clamp_gradient_goes_to_the_operand_chosen_past_a_nan():
    nan = float("nan")
    rows = [(0.5, nan, 1.0, 1, 0, 0), (2.0, nan, 1.0, 0, 0, 1), (-2.0, -1.0, nan, 0, 1, 0)]
    x, a, b = (wp.array([r[k] for r in rows], dtype=float, requires_grad=True, device=DEVICE)
               for k in range(3))
    y = wp.zeros(3, dtype=float, requires_grad=True, device=DEVICE)
    tape = wp.Tape()
    with tape:
        run(clamp_k, 3, x, a, b, y)
    tape.backward(grads={y: wp.ones(3, dtype=float, device=DEVICE)})
    want = np.array([r[3:] for r in rows], dtype=np.float32)
    np.testing.assert_array_equal(np.stack([x.grad.numpy(), a.grad.numpy(), b.grad.numpy()], 1),
                                  want)


@wp.kernel
def reversed_runtime(start: int, stop: int, step: int, out: wp.array(dtype=int),
                     count: wp.array(dtype=int)):
    n = int(0)
    for i in reversed(range(start, stop, step)):
        out[n] = i
        n += 1
    count[0] = n


def test_reversed_range_with_a_runtime_step():
    out, count = zeros(32, int), zeros(1, int)
    for start, stop, step in [(-2, 8, 3), (9, -3, -2), (10, 8, 4), (0, 5, -1), (5, 5, 2)]:
        run(reversed_runtime, 1, start, stop, step, out, count)
        want = list(reversed(range(start, stop, step)))
        assert count.numpy()[0] == len(want)
        assert list(out.numpy()[:len(want)]) == want


def _too_many_printf_values():
    wp.printf(
        "%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d"
        " %d %d %d %d %d %d %d %d %d %d %d %d %d \n",
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
    )


def test_printf_takes_at_most_32_values():
    k = wp.kernel(_too_many_printf_values, module="unique")
    assert_raises_regex(RuntimeError, "the maximum number of variadic arguments that can be "
                                      "passed to `printf` is 32$", k)


class Color(enum.IntEnum):
    RED = 1
    BLUE = 3


@wp.func
def add(a: Pair, b: Pair) -> Pair:  # `+` on Pair values, found by the operator's name
    return Pair(a.a + b.a, a.b + b.b)


@wp.kernel
def bare_names_and_operators(out: wp.array(dtype=float)):
    v = vec3(1.0, 2.0, 3.0)  # noqa: F821 (a type by its bare name, as in Warp)
    expect_eq(v[1], 2.0)  # noqa: F821
    p = Pair(1.0, 2.0) + Pair(0.5, 0.25)
    out[0] = p.a + p.b + float(Color.BLUE.value)


def test_bare_builtin_names_struct_operators_and_enum_values():
    out = zeros(1)
    run(bare_names_and_operators, 1, out)
    assert out.numpy()[0] == 1.5 + 2.25 + 3.0


# =============================================================================================
# 6. rotations: Warp's definitions, bit for bit where Warp's formula is followed


@wp.kernel
def euler_axes_k(e: wp.vec3, axes: wp.array(dtype=wp.vec3i), out: wp.array(dtype=wp.quat),
                 back: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    ax = axes[i]
    q = wp.quat_from_euler(e, ax[0], ax[1], ax[2])
    out[i] = q
    back[i] = wp.quat_to_euler(q, ax[0], ax[1], ax[2])


@wp.kernel
def euler_const_k(e: wp.vec3, out: wp.array(dtype=wp.quat), back: wp.array(dtype=wp.vec3)):
    out[0] = wp.quat_from_euler(e, 0, 1, 2)
    out[1] = wp.quat_from_euler(e, 2, 0, 2)
    back[0] = wp.quat_to_euler(out[0], 0, 1, 2)
    back[1] = wp.quat_to_euler(out[1], 2, 0, 2)


def test_euler_axes_at_run_time_equal_constant_axes():
    e = wp.vec3(0.31, -0.27, 0.41)
    axes = wp.array(np.array([[0, 1, 2], [2, 0, 2]], dtype=np.int32), dtype=wp.vec3i, device=DEVICE)
    q_rt, e_rt = wp.zeros(2, dtype=wp.quat, device=DEVICE), wp.zeros(2, dtype=wp.vec3, device=DEVICE)
    q_c, e_c = wp.zeros(2, dtype=wp.quat, device=DEVICE), wp.zeros(2, dtype=wp.vec3, device=DEVICE)
    run(euler_axes_k, 2, e, axes, q_rt, e_rt)
    run(euler_const_k, 1, e, q_c, e_c)
    np.testing.assert_allclose(q_rt.numpy(), q_c.numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(e_rt.numpy(), e_c.numpy(), rtol=0, atol=1e-5)
    np.testing.assert_allclose(e_rt.numpy()[0], [0.31, -0.27, 0.41], atol=1e-5)  # Tait-Bryan


@wp.kernel
def rotation_numerics(q: wp.array(dtype=wp.quat), v: wp.array(dtype=wp.vec3),
                      rot: wp.array(dtype=wp.vec3), nrm: wp.array(dtype=wp.vec3),
                      axis: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    rot[i] = wp.quat_rotate(q[i], v[i])
    nrm[i] = wp.normalize(v[i])
    ax = wp.vec3()
    angle = float(0.0)
    wp.quat_to_axis_angle(wp.quat_identity(), ax, angle)
    axis[i] = ax


def test_quat_rotate_and_normalize_round_as_warp():
    """Warp's formulas in float32, step by step: quat_rotate sums v c + u d + (u x v) 2w, and
    normalize divides each component by the length."""
    rng = np.random.default_rng(7)
    q = rng.standard_normal((64, 4)).astype(np.float32)
    v = rng.standard_normal((64, 3)).astype(np.float32)
    out = [wp.zeros(64, dtype=wp.vec3, device=DEVICE) for _ in range(3)]
    run(rotation_numerics, 64, wp.array(q, dtype=wp.quat, device=DEVICE),
        wp.array(v, dtype=wp.vec3, device=DEVICE), *out)
    f = np.float32
    u, w = q[:, :3], q[:, 3]
    c = f(2) * w * w - f(1)
    d = f(2) * ((u[:, 0] * v[:, 0] + u[:, 1] * v[:, 1]) + u[:, 2] * v[:, 2])
    cross = np.stack([u[:, 1] * v[:, 2] - u[:, 2] * v[:, 1], u[:, 2] * v[:, 0] - u[:, 0] * v[:, 2],
                      u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]], 1)
    want = (v * c[:, None] + u * d[:, None]) + (cross * w[:, None]) * f(2)
    np.testing.assert_array_equal(out[0].numpy(), want)
    n = np.sqrt((v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1]) + v[:, 2] * v[:, 2])
    np.testing.assert_array_equal(out[1].numpy(), v / n[:, None])
    np.testing.assert_array_equal(out[2].numpy(), np.zeros((64, 3)))  # zero rotation: zero axis


@wp.kernel
def slerp_k(a: wp.array(dtype=wp.quatd), b: wp.array(dtype=wp.quatd), t: wp.array(dtype=float),
            out: wp.array(dtype=wp.quatd)):
    i = wp.tid()
    out[i] = wp.quat_slerp(a[i], b[i], wp.float64(t[i]))


def _hamilton(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def test_slerp_is_warps_definition_off_the_unit_sphere():
    """quat_slerp(a, b, t) = a * from_axis_angle(axis, t angle) of quat_inverse(a) * b."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 4)) * 1.3
    b = rng.standard_normal((16, 4)) * 0.7
    t = rng.uniform(0, 1, 16).astype(np.float32)
    out = wp.zeros(16, dtype=wp.quatd, device=DEVICE)
    run(slerp_k, 16, wp.array(a, dtype=wp.quatd, device=DEVICE),
        wp.array(b, dtype=wp.quatd, device=DEVICE), wp.array(t, dtype=float, device=DEVICE), out)
    for n in range(16):
        r = _hamilton(a[n] * np.array([-1, -1, -1, 1]), b[n])
        vec = r[:3] if r[3] >= 0 else -r[:3]
        angle = 2.0 * math.atan2(np.linalg.norm(vec), abs(r[3]))
        axis = vec / np.linalg.norm(vec)
        half = float(t[n]) * angle / 2.0
        want = _hamilton(a[n], np.array([*(axis * math.sin(half)), math.cos(half)]))
        np.testing.assert_allclose(out.numpy()[n], want, rtol=1e-12, atol=1e-12)


# =============================================================================================
# 7. warp.fem's value types


@gradloom_only  # warp.fem's Sample: the same fields, checked here against Warp's definition
def test_fem_sample_struct():
    fields = [n for n, _ in wp.fem.Sample.__gl_type__.fields]
    assert fields == ["element_index", "element_coords", "qp_index", "qp_weight", "test_dof",
                      "trial_dof"]

    @wp.struct
    class Holder:
        s: wp.fem.Sample

    @wp.kernel(module="unique")
    def k(h: Holder, out: wp.array(dtype=float)):
        out[0] = h.s.element_coords[1] + h.s.qp_weight

    h = Holder()
    h.s.element_coords = wp.vec3(0.0, 1.5, 0.0)
    h.s.qp_weight = 0.25
    out = zeros(1)
    run(k, 1, h, out)
    assert out.numpy()[0] == 1.75


# =============================================================================================
# 8. per-component operators on vectors and matrices; vector slice assignment errors


@wp.kernel(module="unique")
def componentwise_ops(out: wp.array(dtype=wp.vec3ui), empty: wp.array(dtype=int)):
    a = wp.vec3ui(wp.uint32(12), wp.uint32(10), wp.uint32(7))
    b = wp.vec3ui(wp.uint32(5), wp.uint32(3), wp.uint32(2))
    out[0] = a % b
    out[1] = (a & b) | (a ^ b)
    out[2] = (b << wp.vec3ui(wp.uint32(1))) >> wp.vec3ui(wp.uint32(0))
    out[3] = ~a & wp.vec3ui(wp.uint32(15))
    v = wp.vec4(1.0, 2.0, 3.0, 4.0)
    empty[0] = int(v[4:] == wp.vec3()[3:])


def test_componentwise_remainder_and_bit_operators():
    out = wp.zeros(4, dtype=wp.vec3ui, device=DEVICE)
    empty = zeros(1, int)
    run(componentwise_ops, 1, out, empty)
    a, b = np.array([12, 10, 7], np.uint32), np.array([5, 3, 2], np.uint32)
    np.testing.assert_array_equal(out.numpy(), [a % b, (a & b) | (a ^ b), b << 1, ~a & 15])
    assert empty.numpy()[0] == 1


@gradloom_only  # a superset: Warp has no `%` between matrices
def test_matrix_remainder_per_component():
    @wp.kernel(module="unique")
    def k(m_out: wp.array(dtype=wp.mat22)):
        m_out[0] = wp.mat22(7.0, -7.5, 9.0, 4.0) % wp.mat22(2.0, 2.0, 4.0, 3.0)

    m_out = wp.zeros(1, dtype=wp.mat22, device=DEVICE)
    run(k, 1, m_out)
    np.testing.assert_array_equal(m_out.numpy()[0], np.fmod([[7.0, -7.5], [9.0, 4.0]],
                                                             [[2.0, 2.0], [4.0, 3.0]]))


def _slice_of_other_dtype():
    v = wp.vec4(1.0, 2.0, 3.0, 4.0)
    v[1:] = wp.vec3d(5.0, 6.0, 7.0)


def _slice_of_other_length():
    v = wp.vec4(1.0, 2.0, 3.0, 4.0)
    v[1:] = wp.vec2(5.0, 6.0)


def _slice_of_scalar():
    v = wp.vec4(1.0, 2.0, 3.0, 4.0)
    v[1:] = wp.float64(5.0)


@pytest.mark.parametrize("func,message", [
    (_slice_of_other_dtype, "The provided vector is expected to be of length 3 with dtype "
                            "float32."),
    (_slice_of_other_length, r"The length of the provided vector \(2\) isn't compatible with the "
                             r"given slice \(expected 3\)."),
    (_slice_of_scalar, "The provided value is expected to be a vector of length 3, with dtype "
                       "float32."),
], ids=lambda v: getattr(v, "__name__", None) or "")
def test_vector_slice_assignment_errors(func, message):
    assert_raises_regex(ValueError, message + "$", wp.kernel(func, module="unique"))


# =============================================================================================
# 9. a variable set once from a number is a constant of full precision


@wp.kernel(module="unique")
def constant_variables(values: wp.array(dtype=wp.float64), counts: wp.array(dtype=int)):
    x = 0.1
    n = 3
    d = wp.vec3d(x, 0.0, 0.0)
    values[0] = d[0]
    values[1] = wp.float64(x)
    f = wp.vec3f(4.0, 5.0, 6.0)
    counts[0] = n
    sliced = f[0:n]
    counts[1] = int(sliced[2])


def test_constant_variables_keep_their_exact_value():
    values, counts = zeros(2, wp.float64), zeros(2, int)
    run(constant_variables, 1, values, counts)
    assert list(values.numpy()) == [0.1, 0.1]  # not float32(0.1)
    assert list(counts.numpy()) == [3, 6]


# =============================================================================================
# 10. wp.grad(f)(x) in kernels


@wp.func
def _cube_sin(x: float):
    return x * x * x + wp.sin(x)


@wp.func
def _potential(d: wp.vec3):
    return 2.0 / (wp.length(d) + 0.5)


@wp.kernel
def grad_in_kernel(x: wp.array(dtype=float), d: wp.array(dtype=wp.vec3),
                   g: wp.array(dtype=float), gv: wp.array(dtype=wp.vec3),
                   ga: wp.array(dtype=wp.vec2)):
    i = wp.tid()
    grad_f = wp.grad(_cube_sin)
    g[i] = grad_f(x[i])
    gv[i] = wp.grad(_potential)(d[i])
    b, a = wp.grad(wp.atan2)(x[i], 2.0)
    ga[i] = wp.vec2(b, a)


def test_grad_of_funcs_and_builtins_in_kernels():
    xs = np.array([0.3, -1.2, 2.0], dtype=np.float32)
    ds = np.array([[1.0, 2.0, 2.0], [0.5, -0.5, 0.1], [3.0, 0.0, 4.0]], dtype=np.float32)
    g, gv, ga = zeros(3), wp.zeros(3, dtype=wp.vec3, device=DEVICE), \
        wp.zeros(3, dtype=wp.vec2, device=DEVICE)
    run(grad_in_kernel, 3, wp.array(xs, dtype=float, device=DEVICE),
        wp.array(ds, dtype=wp.vec3, device=DEVICE), g, gv, ga)
    x = xs.astype(np.float64)
    np.testing.assert_allclose(g.numpy(), 3 * x * x + np.cos(x), rtol=1e-6)
    r = np.linalg.norm(ds.astype(np.float64), axis=1)
    np.testing.assert_allclose(gv.numpy(), -2.0 / (r + 0.5)[:, None] ** 2 * ds / r[:, None],
                               rtol=1e-5)
    den = x * x + 4.0
    np.testing.assert_allclose(ga.numpy(), np.stack([2.0 / den, -x / den], 1), rtol=1e-6)


@wp.func
def _branchy(x: float):
    if x > 0.0:
        return x * x
    return -x


@wp.kernel
def grad_of_branchy(x: wp.array(dtype=float), g: wp.array(dtype=float)):
    i = wp.tid()
    g[i] = wp.grad(_branchy)(x[i])


def test_grad_of_a_func_with_a_branch():
    xs = np.array([1.5, -2.0, 0.25], dtype=np.float32)
    g = zeros(3)
    run(grad_of_branchy, 3, wp.array(xs, dtype=float, device=DEVICE), g)
    np.testing.assert_allclose(g.numpy(), np.where(xs > 0, 2.0 * xs, -1.0), rtol=1e-6)
