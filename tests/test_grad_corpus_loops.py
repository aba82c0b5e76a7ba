"""Gradient corpus, part 2: aliases carried by loops, primitives with effects inside loops, and
in-place updates in nested regions (known bugs A, C, D, E of docs/fuzzing.md). Checked like tests/test_grad_corpus.py:
Tape gradients of a random weighted sum of the outputs against float64 central differences.
"""

# ruff: noqa: UP018, RUF046

import numpy as np
import pytest
from gradfd import Case, arr, check_kernel
from wpcompat import BACKEND, DEVICE, wp

f64 = wp.float64
vec3d = wp.vec3d
mat33d = wp.mat33d

X3 = np.array([0.7, -0.45, 1.1])
WARP_REPLAY = "warp-lang replays loops in its adjoint (the seeds' dynamic-loop bug class)"


# --- A: a loop-carried variable that starts as a plain copy of another variable -------------


@wp.kernel
def copy_then_loop_kernel(x: wp.array(dtype=f64), n: int, out: wp.array(dtype=f64)):
    tid = wp.tid()
    t = x[tid]
    s = t
    for _j in range(n):
        s = s * t
    out[tid] = s


@wp.kernel
def copy_then_const_loop_kernel(x: wp.array(dtype=f64), out: wp.array(dtype=f64)):
    tid = wp.tid()
    t = x[tid]
    s = t
    for _j in range(2):
        s = s * t
    out[tid] = s


@wp.kernel
def copy_then_while_kernel(x: wp.array(dtype=f64), n: int, out: wp.array(dtype=f64)):
    tid = wp.tid()
    t = x[tid]
    s = t
    j = int(0)
    while j < n:
        s = s * t + f64(0.25)
        j = j + 1
    out[tid] = s


@wp.kernel
def component_copy_loop_kernel(a: wp.array(dtype=vec3d), n: int, out: wp.array(dtype=f64)):
    tid = wp.tid()
    a0 = a[tid]
    s0 = a0[1]
    for _j in range(n):
        s0 = s0 * a0[1] + a0[0]
    out[tid] = s0


@wp.kernel
def matrix_copy_loop_kernel(m: wp.array(dtype=mat33d), n: int, out: wp.array(dtype=mat33d)):
    tid = wp.tid()
    q0 = m[tid]
    q3 = q0
    for _j in range(n):
        q3[0, 0] *= q0[0, 0]
        q3[1, 2] = q3[1, 2] + q0[2, 1] * q3[0, 0]
    out[tid] = q3 + q0


@wp.kernel
def vector_from_scalar_loop_kernel(x: wp.array(dtype=f64), n: int, out: wp.array(dtype=vec3d)):
    tid = wp.tid()
    t = x[tid]
    v = vec3d(t, t, t)
    for j in range(n):
        v[j % 3] = v[j % 3] * t
    out[tid] = v


@wp.kernel
def zero_trip_copy_kernel(x: wp.array(dtype=f64), n: int, out: wp.array(dtype=f64)):
    tid = wp.tid()
    s0 = x[tid]
    s4 = s0
    for _j in range(n):
        s4 = wp.sin(s0)
    out[tid] = s0 + s4


@wp.kernel
def nested_copy_loop_kernel(x: wp.array(dtype=f64), n: int, out: wp.array(dtype=f64)):
    tid = wp.tid()
    t = x[tid]
    s = t
    for _i in range(n):
        u = s
        for _j in range(2):
            u = u * t
        s = u + s
    out[tid] = s


# --- C: atomics whose value is used, inside loops: never re-executed by the reverse sweep ---


@wp.kernel
def exch_in_loop_kernel(x: wp.array(dtype=f64), slots: wp.array(dtype=int),
                        y: wp.array(dtype=f64)):
    s = f64(0.0)
    for i in range(3):
        j = wp.atomic_exch(slots, i, i + 10)
        s = s + x[j] * x[j]
    y[0] = s


@wp.kernel
def bitwise_atomics_in_loop_kernel(x: wp.array(dtype=f64), bits: wp.array(dtype=int),
                                   y: wp.array(dtype=f64)):
    s = f64(0.0)
    for i in range(3):
        j = wp.atomic_or(bits, 0, 1 << i)  # returns 0, 1, 3
        k = wp.atomic_xor(bits, 1, 1)  # 4, 5, 4
        m = wp.atomic_and(bits, 2, 3)  # 7, 3, 3
        c = wp.atomic_cas(bits, 3, 0, 1)  # 0, 1, 1
        s = s + x[j] * x[k - 4] + x[m] * f64(c + 1)
    y[0] = s


# --- D: atomic adds as statements inside loops ----------------------------------------------


@wp.kernel
def atomic_statement_loop_kernel(x: wp.array(dtype=f64), n: int, acc: wp.array(dtype=f64)):
    i = wp.tid()
    for j in range(n):
        wp.atomic_add(acc, 0, x[i] * f64(j + 1))
        acc[1] += x[i] * x[i]


@wp.kernel
def atomic_statement_if_loop_kernel(x: wp.array(dtype=f64), n: int, acc: wp.array(dtype=f64)):
    i = wp.tid()
    for j in range(n):
        if x[i] > f64(0.0):
            acc[0] += wp.sin(x[i]) * f64(j)
        else:
            wp.atomic_add(acc, 1, x[i] * x[i])


# --- E: in-place updates in a constant loop nested inside another loop or an if --------------


@wp.kernel
def inplace_nested_loop_kernel(y: wp.array(dtype=f64), n: int):
    tid = wp.tid()
    for _k in range(n):
        for _j in range(2):
            y[tid] = wp.sin(y[tid]) + f64(0.5) * y[tid]


@wp.kernel
def inplace_loop_in_if_kernel(y: wp.array(dtype=f64), x: wp.array(dtype=f64)):
    tid = wp.tid()
    if x[tid] > f64(0.0):
        for _j in range(3):
            y[tid] = y[tid] * x[tid] + wp.cos(y[tid])


def _atomic_ok(case_id: str) -> str | None:
    return WARP_REPLAY if case_id.startswith(("exch", "bitwise")) else None


CASES = [
    *(Case(f"copy_then_loop_n{n}", kernel=copy_then_loop_kernel, dim=3,
           args=[arr(X3), n, arr(np.zeros(3))], wrt=[0], outputs=[2]) for n in (0, 1, 2, 5)),
    Case("copy_then_const_loop", kernel=copy_then_const_loop_kernel, dim=3,
         args=[arr(X3), arr(np.zeros(3))], wrt=[0], outputs=[1]),
    *(Case(f"copy_then_while_n{n}", kernel=copy_then_while_kernel, dim=3,
           args=[arr(X3), n, arr(np.zeros(3))], wrt=[0], outputs=[2]) for n in (0, 3)),
    *(Case(f"component_copy_loop_n{n}", kernel=component_copy_loop_kernel, dim=2,
           args=[arr(np.array([[0.3, 0.8, -0.2], [-0.6, 0.5, 0.9]]), vec3d), n,
                 arr(np.zeros(2))], wrt=[0], outputs=[2]) for n in (0, 1, 3)),
    *(Case(f"matrix_copy_loop_n{n}", kernel=matrix_copy_loop_kernel, dim=2,
           args=[arr(np.random.default_rng(3).uniform(-1, 1, (2, 3, 3)), mat33d), n,
                 arr(np.zeros((2, 3, 3)), mat33d)], wrt=[0], outputs=[2]) for n in (0, 2)),
    *(Case(f"vector_from_scalar_loop_n{n}", kernel=vector_from_scalar_loop_kernel, dim=3,
           args=[arr(X3), n, arr(np.zeros((3, 3)), vec3d)], wrt=[0], outputs=[2])
      for n in (0, 4)),
    *(Case(f"zero_trip_copy_n{n}", kernel=zero_trip_copy_kernel, dim=3,
           args=[arr(X3), n, arr(np.zeros(3))], wrt=[0], outputs=[2]) for n in (0, 2)),
    Case("nested_copy_loop", kernel=nested_copy_loop_kernel, dim=3,
         args=[arr(X3 * 0.5), 3, arr(np.zeros(3))], wrt=[0], outputs=[2]),
    Case("exch_in_loop", kernel=exch_in_loop_kernel, dim=1,
         args=[arr(np.linspace(0.5, 1.7, 13)), arr(np.array([0, 1, 2]), wp.int32),
               arr(np.zeros(1))], wrt=[0], outputs=[2]),
    Case("bitwise_atomics_in_loop", kernel=bitwise_atomics_in_loop_kernel, dim=1,
         args=[arr(np.linspace(0.5, 1.6, 12)), arr(np.array([0, 4, 7, 0]), wp.int32),
               arr(np.zeros(1))], wrt=[0], outputs=[2]),
    Case("atomic_statement_loop", kernel=atomic_statement_loop_kernel, dim=3,
         args=[arr(X3), 3, arr(np.zeros(2))], wrt=[0], outputs=[2]),
    Case("atomic_statement_if_loop", kernel=atomic_statement_if_loop_kernel, dim=3,
         args=[arr(X3), 2, arr(np.zeros(2))], wrt=[0], outputs=[2]),
    Case("inplace_nested_loop", kernel=inplace_nested_loop_kernel, dim=3,
         args=[arr(X3), 2], wrt=[0], outputs=[0]),
    Case("inplace_loop_in_if", kernel=inplace_loop_in_if_kernel, dim=3,
         args=[arr(np.array([0.2, 0.4, -0.3])), arr(X3)], wrt=[0, 1], outputs=[0]),
]


def _param(case):
    marks = []
    reason = _atomic_ok(case.id) or (WARP_REPLAY if "loop" in case.id else None)
    if reason:
        marks.append(pytest.mark.xfail(BACKEND == "warp", reason=reason, strict=False))
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_gradient_matches_fd(case):
    case.run()


def test_copy_then_loop_exact_values():
    # d/dx x^(n+1) = (n+1) x^n at x = 0.7, values once computed wrong
    for n, expected in ((0, 1.0), (1, 1.4), (2, 3 * 0.49)):
        result = check_kernel(copy_then_loop_kernel, 1, [arr([0.7]), n, arr(np.zeros(1))],
                              wrt=[0], outputs=[2], weights=[1.0])
        np.testing.assert_allclose(result.reverse[0], [expected], rtol=1e-12)


def test_exch_in_loop_gradient_goes_to_the_slots_read():
    # the forward reads x[0], x[1], x[2] (the old slot values): the gradient is 2 x there only
    x = np.linspace(0.5, 1.7, 13)
    result = check_kernel(exch_in_loop_kernel, 1,
                          [arr(x), arr(np.array([0, 1, 2]), wp.int32), arr(np.zeros(1))],
                          wrt=[0], outputs=[2], weights=[1.0])
    expected = np.zeros(13)
    expected[:3] = 2.0 * x[:3]
    np.testing.assert_allclose(result.reverse[0], expected, rtol=1e-12)


@wp.kernel
def read_other_overwritten_kernel(x: wp.array(dtype=f64), y: wp.array(dtype=f64),
                                  out: wp.array(dtype=f64)):
    tid = wp.tid()
    a = y[(tid + 3) % 4] * x[tid]
    y[tid] = wp.sin(y[tid])
    out[tid] = a


@pytest.mark.skipif(BACKEND != "gradloom", reason="gradloom's error for an undefined replay")
def test_read_of_element_another_thread_overwrites_is_an_error():
    # B: which value thread t read depends on whether thread t-1 ran first; the adjoint
    # cannot replay that, so backward refuses with the array's name and the user's line
    x = wp.array(np.array([0.1, 0.2, 0.3, 0.4]), dtype=f64, device=DEVICE, requires_grad=True)
    y = wp.array(np.array([0.5, 0.6, 0.7, 0.8]), dtype=f64, device=DEVICE, requires_grad=True)
    out = wp.zeros(4, dtype=f64, device=DEVICE, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(read_other_overwritten_kernel, dim=4, inputs=[x, y, out], device=DEVICE)
    with pytest.raises(wp.CompileError) as info:
        tape.backward(grads={out: wp.array(np.ones(4), dtype=f64, device=DEVICE)})
    message = str(info.value)
    excerpt = "\n".join(getattr(info.value, "__notes__", []))  # the user's line, with a caret
    assert "'y'" in message and "overwrite" in message
    assert "test_grad_corpus_loops.py" in message and "y[(tid + 3) % 4]" in excerpt
    assert x.grad.numpy().tolist() == [0.0] * 4  # nothing half-done


@wp.kernel
def shift_left_sin_kernel(x: wp.array(dtype=f64)):
    i = wp.tid()
    if i < 3:
        x[i] = wp.sin(x[i + 1])  # reads the element thread i + 1 overwrites afterwards


@pytest.mark.skipif(BACKEND != "gradloom", reason="gradloom's error for an undefined replay")
def test_nonlinear_read_of_a_later_overwritten_element_is_an_error():
    # the derivative cos(x[i + 1]) needs the value read, which the replay cannot reproduce;
    # the linear `x[i] = 2 * x[i + 1]` needs no value and stays exact (tests/test_tape.py)
    x = wp.array(np.array([0.5, 1.5, -0.7, 2.0]), dtype=f64, device=DEVICE, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(shift_left_sin_kernel, dim=4, inputs=[x], device=DEVICE)
    with pytest.raises(wp.CompileError, match="'x' that other threads overwrite"):
        tape.backward(grads={x: wp.array(np.ones(4), dtype=f64, device=DEVICE)})


@wp.kernel
def product_then_scale_kernel(b: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = b[0] * b[1] * b[2]  # thread 1 reads b[0] after thread 0 doubled it
    b[i] = b[i] * f64(2.0)


@pytest.mark.skipif(BACKEND != "gradloom", reason="gradloom's error for an undefined replay")
def test_product_of_elements_other_threads_scale_is_an_error():
    # found by the HashGrid work: the replay saw b before the launch, the forward did not
    b = wp.array(np.array([0.9, 1.1, -0.7]), dtype=f64, device=DEVICE, requires_grad=True)
    y = wp.zeros(3, dtype=f64, device=DEVICE, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(product_then_scale_kernel, dim=3, inputs=[b, y], device=DEVICE)
    with pytest.raises(wp.CompileError, match="'b' that other threads overwrite"):
        tape.backward(grads={y: wp.array(np.ones(3), dtype=f64, device=DEVICE)})


# --- found by the project's fuzzer (tools/fuzz) ------------------------------------------------


@wp.kernel
def store_in_loop_in_if_then_store_kernel(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    # the if passes `y` through unchanged on both branches: its pointer must stay the argument
    tid = wp.tid()
    if x[tid] > f64(10.0):
        for _j in range(1):
            y[tid] = x[tid]
    y[tid] = wp.sin(x[tid]) * y[tid]


@wp.func
def same_value_ifexp(p: vec3d, c: f64) -> f64:
    p[0] -= p[1] if c > f64(0.5) else p[1]  # noqa: RUF034 (both branches the very same value)
    return p[0] * c


@wp.kernel
def same_value_ifexp_kernel(v: wp.array(dtype=vec3d), x: wp.array(dtype=f64),
                            y: wp.array(dtype=f64)):
    tid = wp.tid()
    y[tid] = same_value_ifexp(v[tid], x[tid])


def test_fuzz_found_kernels_match_fd():
    check_kernel(store_in_loop_in_if_then_store_kernel, 3,
                 [arr(X3), arr(np.array([0.2, -0.5, 0.9]))], wrt=[0, 1], outputs=[1])
    check_kernel(same_value_ifexp_kernel, 2,
                 [arr(np.array([[0.3, 0.8, -0.2], [-0.6, 0.5, 0.9]]), vec3d),
                  arr(np.array([0.7, 0.2])), arr(np.zeros(2))], wrt=[0, 1], outputs=[2])
