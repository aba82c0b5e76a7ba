"""@wp.func_grad rules on functions that take arrays, wp.grad(f), wp.func_native stubs.

Gradients of such rules are checked against finite differences in the gradient corpus
(tests/test_grad_corpus.py, "custom gradients"); this file checks what the corpus
cannot: side effects of a rule, a rule that sets a gradient element, errors, and wp.grad.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradloom as wp
from gradloom.errors import CompileError, GradloomError

# -- a rule's side effects run once per backward -----------------------------------------------


@wp.func
def count_then(counter: wp.array(dtype=int), val: float) -> float:
    wp.atomic_add(counter, 0, 1)
    return val


@wp.func
def scaled(counter: wp.array(dtype=int), x: float, s: float) -> float:
    return x * s


@wp.func_grad(scaled)
def scaled_grad(counter: wp.array(dtype=int), x: float, s: float, adj_ret: float):
    wp.adjoint[x] += count_then(counter, adj_ret * s)
    wp.adjoint[s] += adj_ret * x


@wp.kernel
def scaled_kernel(counter: wp.array(dtype=int), x: wp.array(dtype=float),
                  s: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = scaled(counter, x[i], s[i])


def test_rule_side_effects_run_once_per_thread_in_backward():
    counter = wp.zeros(1, dtype=int)
    x = wp.array([3.0, -1.0, 2.0], dtype=float, requires_grad=True)
    s = wp.array([2.0, 0.5, -4.0], dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(scaled_kernel, 3, inputs=[counter, x, s, y])
    assert counter.numpy()[0] == 0  # the forward never runs the rule
    tape.backward(grads={y: wp.array([1.0, 2.0, 3.0], dtype=float)})
    assert counter.numpy()[0] == 3
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 1.0, -12.0])
    np.testing.assert_allclose(s.grad.numpy(), [3.0, -2.0, 6.0])


# -- writing (not adding) into wp.adjoint[array] sets the gradient element ------------------------


@wp.func
def pick(values: wp.array(dtype=float), j: int) -> float:
    return values[j]


@wp.func_grad(pick)
def pick_grad(values: wp.array(dtype=float), j: int, adj_ret: float):
    wp.adjoint[values][j] = adj_ret * 10.0


@wp.kernel
def pick_kernel(values: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = pick(values, i)


def test_rule_that_stores_into_the_gradient_sets_it():
    v = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    v.grad.fill_(5.0)
    tape = wp.Tape()
    with tape:
        wp.launch(pick_kernel, 2, inputs=[v, y])
    tape.backward(grads={y: wp.array([1.0, -1.0], dtype=float)})
    np.testing.assert_array_equal(v.grad.numpy(), [10.0, -10.0])  # set, not added to 5


# -- errors -----------------------------------------------------------------------------------------


def test_min_into_an_adjoint_array_is_refused_at_its_line():
    @wp.func
    def f(values: wp.array(dtype=float), j: int) -> float:
        return values[j]

    @wp.func_grad(f)
    def f_grad(values: wp.array(dtype=float), j: int, adj_ret: float):
        wp.atomic_min(wp.adjoint[values], j, adj_ret)

    @wp.kernel
    def k(values: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = f(values, i)

    v = wp.zeros(2, dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    with pytest.raises(CompileError, match=r"atomic_min\(\) on wp.adjoint\[array\]") as info:
        wp.launch(k, 2, inputs=[v, y])  # refused when the kernel compiles
    assert "test_custom_grad_arrays.py" in str(info.value)


def test_adjoint_of_something_else_than_a_parameter_is_an_error():
    @wp.func
    def f(x: float) -> float:
        return x

    @wp.func_grad(f)
    def f_grad(x: float, adj_ret: float):
        wp.adjoint[x * 2.0] += adj_ret

    @wp.kernel
    def k(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = f(a[i])

    with pytest.raises(GradloomError, match=r"wp.adjoint\[\.\.\.\] takes a parameter"):
        wp.launch(k, 1, inputs=[wp.zeros(1, dtype=float, requires_grad=True)])


def test_rule_of_a_function_without_results_takes_no_adjoints():
    @wp.func
    def store(i: int, a: wp.array(dtype=float)):
        a[i] = 1.0

    with pytest.raises(GradloomError, match="followed by the adjoints of its results"):
        @wp.func_grad(store)
        def store_grad(i: int, a: wp.array(dtype=float), adj_ret: float):
            pass


# -- wp.func_native ---------------------------------------------------------------------------------


@wp.func_native("return a + 2.0f;", adj_snippet="adj_a += adj_ret;")
def add_two_native(a: float) -> float: ...


@wp.kernel
def native_kernel(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = add_two_native(a[i])


def test_native_snippets_are_accepted_but_calling_one_is_a_clear_error():
    assert add_two_native.snippet == "return a + 2.0f;"
    with pytest.raises(CompileError, match=r"add_two_native\(\) is a @wp.func_native") as info:
        wp.launch(native_kernel, 1, inputs=[wp.zeros(1, dtype=float)])
    assert "test_custom_grad_arrays.py" in str(info.value)
    with pytest.raises(GradloomError, match="native snippets"):
        add_two_native(1.0)


@wp.func_native(snippet="WP_TILE_SYNC();")
def tile_barrier(): ...


@wp.func_native(snippet="  __syncthreads();  // all lanes wait\n")
def cuda_barrier(): ...


@wp.kernel
def barrier_kernel(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 1.0
    tile_barrier()
    cuda_barrier()
    a[i] = a[i] + 1.0


def test_standard_barrier_snippets_mean_nothing_with_one_thread_per_block():
    # MuJoCo Warp's solver calls a `WP_TILE_SYNC();` snippet between tile phases
    a = wp.zeros(3, dtype=float)
    wp.launch(barrier_kernel, 3, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), [2.0, 2.0, 2.0])


@wp.func_native(snippet="""
#if defined(__CUDA_ARCH__)
    return __ffsll((long long)x) - 1;
#else
    return __builtin_ctzll((unsigned long long)x);
#endif
""")
def ctz64(x: wp.uint64) -> int: ...


@wp.kernel
def ctz_kernel(masks: wp.array(dtype=wp.uint64), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = ctz64(masks[i])


def test_count_trailing_zeros_snippet_counts_them():
    # MuJoCo Warp's sparse blocked Cholesky walks bit masks with this snippet
    values = [1, 8, 2**40, 2**63, 0b1011000, 2**64 - 1, 0]
    out = wp.zeros(len(values), dtype=int)
    wp.launch(ctz_kernel, len(values), inputs=[wp.array(values, dtype=wp.uint64), out])
    expected = [(v & -v).bit_length() - 1 if v else 64 for v in values]  # 0: x86's tzcnt
    np.testing.assert_array_equal(out.numpy(), expected)


@wp.func_native("""
#if defined(__CUDA_ARCH__)
    float r = value;
    for (int offset = 16; offset > 0; offset >>= 1)
        r = fmaxf(r, __shfl_xor_sync(0xffffffffu, r, offset, 32));
    return r;
#else
    return value;
#endif
""")
def warp_max(value: float) -> float: ...


@wp.func_native("""
#if defined(__CUDA_ARCH__)
__syncwarp(0xffffffffu);
#endif
""")
def sync_warp(): ...


@wp.func_native("""return 0x7FFFFFFFFFFFFFFFull;""")
def sentinel() -> wp.uint64: ...


@wp.func_native("""
if (mask == 0) return -1;
int position = 0;
while ((mask & 1LL) == 0LL) { mask >>= 1; position++; }
return position;
""")
def lowest_bit(mask: wp.int64) -> wp.int32: ...


@wp.func_native("""return (uint64_t)arr.data;""")
def data_address(arr: wp.array(dtype=float)) -> wp.uint64: ...


@wp.kernel
def data_address_kernel(a: wp.array(dtype=float), out: wp.array(dtype=wp.uint64)):
    out[0] = data_address(a)
    out[1] = a.ptr


def test_array_data_address_snippet_is_the_arrays_ptr():
    # newton's Kamino offsets raw pointers from this snippet
    a, out = wp.zeros(8, dtype=float), wp.zeros(2, dtype=wp.uint64)
    wp.launch(data_address_kernel, 1, inputs=[a, out])
    assert out.numpy().tolist() == [a.ptr, a.ptr]


@wp.kernel
def cpu_branch_kernel(x: wp.array(dtype=float), keys: wp.array(dtype=wp.uint64)):
    i = wp.tid()
    sync_warp()
    x[i] = warp_max(x[i]) * 2.0
    keys[i] = sentinel()


@wp.kernel
def loop_snippet_kernel(masks: wp.array(dtype=wp.int64), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = lowest_bit(masks[i])


def test_cpu_branches_that_return_a_parameter_or_a_constant_or_nothing():
    # newton's Kamino: warp-shuffle reductions (one lane on the CPU: the value itself), a
    # warp barrier with no CPU code, a uint64 sort sentinel
    x, keys = wp.array([1.5, -2.0], dtype=float), wp.zeros(2, dtype=wp.uint64)
    wp.launch(cpu_branch_kernel, 2, inputs=[x, keys])
    np.testing.assert_array_equal(x.numpy(), [3.0, -4.0])
    np.testing.assert_array_equal(keys.numpy(), [2**63 - 1] * 2)
    # any other code (here a loop) stays the clear error, at the call's line
    with pytest.raises(CompileError, match=r"lowest_bit\(\) is a @wp.func_native"):
        wp.launch(loop_snippet_kernel, 1, inputs=[wp.zeros(1, dtype=wp.int64), wp.zeros(1, dtype=int)])


@wp.func_native("""
#if defined(__CUDA_ARCH__)
return __frsqrt_rn(value);
#else
return 1.0f / sqrtf(value);
#endif
""")
def rsqrt_rn(value: float) -> float: ...


@wp.kernel
def rsqrt_kernel(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = rsqrt_rn(x[i]) * x[i]


def test_reciprocal_square_root_snippet_is_computed_and_differentiated():
    # newton's support functions normalise directions with this snippet
    xs = np.array([0.25, 2.0, 9.0], dtype=np.float32)
    x, out = wp.array(xs, dtype=float, requires_grad=True), wp.zeros(3, dtype=float,
                                                                      requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(rsqrt_kernel, 3, inputs=[x, out])
    np.testing.assert_allclose(out.numpy(), np.sqrt(xs), rtol=1e-6)
    tape.backward(grads={out: wp.ones(3, dtype=float)})
    # d/dx (x / sqrt(x)) = 1 / (2 sqrt(x)): the snippet's meaning differentiated
    np.testing.assert_allclose(x.grad.numpy(), 0.5 / np.sqrt(xs.astype(np.float64)), rtol=1e-5)


# -- wp.grad ------------------------------------------------------------------------------------------


@wp.func
def square(x: float):
    return x * x


@wp.func
def two_outputs(x: float, y: float):
    return x * y, x + y


@wp.func
def branchy_power(x: float, n: int):
    p = float(1.0)
    for _k in range(n):  # a runtime loop, a branch in it
        if x > 0.0:
            p = p * x
        else:
            p = p * x * 2.0
    return p


@wp.func
def potential(d: wp.vec3):
    return 3.0 / (wp.length(d) + 0.1)


@wp.kernel
def grad_kernel(x: wp.array(dtype=float), n: int, out: wp.array(dtype=float),
                force: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    g = wp.grad(square)  # bound to a local, then called
    out[i * 6 + 0] = g(x[i])
    a, b = wp.grad(two_outputs)(x[i], 5.0)
    out[i * 6 + 1] = a
    out[i * 6 + 2] = b
    out[i * 6 + 3] = wp.grad(branchy_power)(x[i], n)[0]
    dy, dx = wp.grad(wp.atan2)(x[i], 2.0)
    out[i * 6 + 4] = dy
    out[i * 6 + 5] = dx
    force[i] = -wp.grad(potential)(wp.vec3(x[i], 1.0, 2.0))


def test_grad_of_funcs_and_builtins_in_a_kernel_matches_analytic_derivatives():
    xs = np.array([1.5, -0.5, 2.0], dtype=np.float32)
    out = wp.zeros(18, dtype=float)
    force = wp.zeros(3, dtype=wp.vec3)
    wp.launch(grad_kernel, 3, inputs=[wp.array(xs), 3, out, force])
    got = out.numpy().reshape(3, 6)
    for x, row in zip(xs.astype(np.float64), got, strict=True):
        want_pow = 3 * x**2 if x > 0 else 8 * 3 * x**2  # (2x)^3 for x <= 0
        want = [2 * x, 5 + 1, x + 1, want_pow, 2 / (x * x + 4), -x / (x * x + 4)]
        np.testing.assert_allclose(row, want, rtol=1e-5)
    for x, f in zip(xs.astype(np.float64), force.numpy(), strict=True):
        d = np.array([x, 1.0, 2.0])
        r = np.linalg.norm(d)
        np.testing.assert_allclose(f, 3.0 / (r + 0.1) ** 2 * d / r, rtol=1e-5)


def test_grad_from_python_scope():
    assert wp.grad(square)(3.0) == pytest.approx(6.0)
    a, b = wp.grad(two_outputs)(2.0, 5.0)
    assert (a, b) == (pytest.approx(6.0), pytest.approx(3.0))
    assert wp.grad(wp.sin)(0.5) == pytest.approx(math.cos(0.5), rel=1e-6)


def test_grad_takes_a_function():
    with pytest.raises(GradloomError, match="takes a @wp.func or a kernel builtin"):
        wp.grad(3.0)


@wp.func
def safe_sqrt(x: float):
    return wp.sqrt(x)


@wp.func_grad(safe_sqrt)
def safe_sqrt_grad(x: float, adj_ret: float):
    if x > 0.0:
        wp.adjoint[x] += wp.grad(wp.sqrt)(x) * adj_ret


@wp.kernel
def safe_sqrt_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = safe_sqrt(x[i])


def test_grad_inside_a_rule():
    x = wp.array([0.0, 1.0, 4.0], dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(safe_sqrt_kernel, 3, inputs=[x, y])
    tape.backward(grads={y: wp.ones(3, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.5, 0.25])  # finite at 0


# -- a rule must see the arrays as they were right after its call ---------------------------------


@wp.func
def scaled_by(a: wp.array(dtype=float), i: int, x: float) -> float:
    return a[i] * x


@wp.func_grad(scaled_by)
def scaled_by_grad(a: wp.array(dtype=float), i: int, x: float, adj_ret: float):
    wp.adjoint[x] += a[i] * adj_ret  # reads a in the backward pass


@wp.kernel
def rule_then_overwrite(a: wp.array(dtype=float), x: wp.array(dtype=float),
                        y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = scaled_by(a, i, x[i])
    a[i] = 0.0  # the rule would read this 0, not what the call used


@wp.kernel
def rule_in_loop_writing(a: wp.array(dtype=float), x: wp.array(dtype=float),
                         y: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(0.0)
    for _k in range(n):
        a[i] = a[i] * 2.0  # before the call, but also before the next trip's call
        s += scaled_by(a, i, x[i])
    y[i] = s


@wp.kernel
def rule_after_write(a: wp.array(dtype=float), x: wp.array(dtype=float),
                     y: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + 1.0
    y[i] = scaled_by(a, i, x[i])


@pytest.mark.parametrize("kernel,extra,where", [(rule_then_overwrite, [], "after the call"),
                                                (rule_in_loop_writing, [2], "in the loop")])
def test_rule_reading_an_array_written_later_is_refused(kernel, extra, where):
    a = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    x = wp.array([3.0, 4.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, 2, inputs=[a, x, y, *extra])
    with pytest.raises(CompileError, match=f"reads 'a', which the kernel writes again {where}"):
        tape.backward(grads={y: wp.ones(2, dtype=float)})


def test_rule_reading_an_array_written_before_the_call_sees_the_new_values():
    a = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    x = wp.array([3.0, 4.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(rule_after_write, 2, inputs=[a, x, y])
    tape.backward(grads={y: wp.ones(2, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 3.0])  # a[i] + 1
