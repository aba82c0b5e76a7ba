"""Gradient corpus, fuzz part: the minimal kernels of failures found by the random-kernel fuzzer.

Each kernel is the shrunk form of a fuzz failure (``python -m tools.fuzz``, docs/fuzzing.md),
tidied by hand, checked like tests/test_grad_corpus.py: reverse mode against float64 central
differences of a weighted sum of the outputs (tests/gradfd.py). A case that fails on gradloom
today is a strict xfail naming the bug (known-bug letters), so the fix flips it to a pass and the
mark must go. A refused kernel (gradloom raises where warp-lang compiles it) counts as failing.
"""

# Kernel bodies use explicit float64 literals (`f64(0.5)`) so that the file also runs on
# warp-lang (GL_TEST_BACKEND=warp), which types a bare float literal as float32.
# ruff: noqa: UP018, RUF046

import os
import subprocess
import sys

import numpy as np
import pytest
from gradfd import Case, arr, check_kernel
from wpcompat import BACKEND, DEVICE, wp

f64 = wp.float64
vec3d = wp.vec3d
mat33d = wp.mat33d


def rnd(shape, lo=-1.0, hi=1.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


def launch(kernel, dim, *args):
    wp.launch(kernel, dim=dim, inputs=list(args), device=DEVICE)


# =============================================================================================
# A: a loop-carried variable that starts as a plain copy of another


@wp.kernel
def copy_then_loop_assign_kernel(x: wp.array(dtype=f64), y: wp.array(dtype=f64), n: int):
    # fuzz 4:38 (with n = 0 the loop does not run: y = x)
    tid = wp.tid()
    a = x[tid]
    b = a
    for _j in range(n):
        a = b
    y[tid] = a


@wp.kernel
def copy_then_loop_accumulate_kernel(x: wp.array(dtype=f64)):
    # fuzz 4:76
    tid = wp.tid()
    a = x[tid]
    b = a
    for _j in range(3):
        a += wp.dot(vec3d(b, b, b), vec3d(f64(0.5), f64(0.5), f64(0.5)))
    x[tid] = a


@wp.kernel
def component_copied_before_loop_kernel(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    # fuzz 301:753 --size large --avoid ABCDE (there inside a func, with a quat parameter):
    # a vector built from a component of `p` before the loop that updates `p`. The gradient
    # misses the direct path p[2] -> p[2] (1 too small).
    tid = wp.tid()
    p = wp.quatd(f64(0.5), f64(0.5), x[tid], f64(0.5))
    v = vec3d(f64(1.1), f64(-0.75), p[2])
    for _j in range(4):
        p += wp.quat_from_axis_angle(v, f64(0.5))
    y[tid] = p[2]


@wp.kernel
def scalar_copied_before_loop_kernel(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    tid = wp.tid()
    p = wp.quatd(f64(0.5), f64(0.5), x[tid], f64(0.5))
    c = p[2]
    for _j in range(4):
        p += wp.quatd(f64(0.0), f64(0.0), wp.sin(c), f64(0.0))
    y[tid] = p[2]


@wp.func
def add_in_loop(p: f64, q: f64) -> f64:
    k = int(0)
    while k < 4:
        k = k + 1
        p += q
    return p


@wp.kernel
def same_var_two_args_kernel(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    # fuzz 300:729 --size large --avoid ABCDE: a parameter starts as a copy of the argument;
    # y = 5 x, the gradient comes out 4
    tid = wp.tid()
    a = x[tid]
    y[tid] = add_in_loop(a, a)


@wp.func
def ignores_args(p1: f64, p2: f64) -> f64:
    return f64(0.5)


@wp.kernel
def arg_copy_in_zero_trip_loops_kernel(x: wp.array(dtype=f64), v: wp.array(dtype=vec3d),
                                       y: wp.array(dtype=wp.quatd)):
    # fuzz 300:609 --size large --avoid ABCDE: neither loop runs, yet the gradient of `a` is
    # lost (0 instead of 1)
    tid = wp.tid()
    b = v[tid]
    a = x[tid]
    q = wp.quatd(f64(0.5), a, f64(0.5), f64(0.5))
    i = int(0)
    while i < 0:
        i = i + 1
        j = int(0)
        while j < 0:
            j = j + 1
            b[2] *= q[1] * ignores_args(f64(0.5), a)
    y[tid] = wp.quatd(f64(0.5), f64(0.5), a, f64(0.5))


# =============================================================================================
# B: a thread reads an element that another thread of the same launch writes


@wp.kernel
def read_other_then_overwrite_kernel(x: wp.array(dtype=f64)):
    # fuzz 1:17. Every thread reads x[3]; thread 3 overwrites it (after reading it itself).
    tid = wp.tid()
    a = x[3]
    a -= wp.exp(wp.sin(a))
    x[tid] = a


@wp.kernel
def read_overwritten_kernel(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    # fuzz 4:1. Thread 1 reads y[0] after thread 0 has overwritten it.
    tid = wp.tid()
    a = x[tid]
    b = f64(0.5) - wp.dot(vec3d(f64(0.5), a, y[0]), vec3d(f64(-1.25), f64(0.5), f64(1.1)) * a)
    y[tid] = b


@wp.kernel
def read_accumulated_kernel(x: wp.array(dtype=f64)):
    # thread 1 reads x[1] after thread 0 has added into it (serial forward)
    tid = wp.tid()
    wp.atomic_add(x, 1, wp.cos(x[tid]))


@wp.kernel
def read_aliased_accumulator_kernel(x: wp.array(dtype=f64), acc: wp.array(dtype=f64)):
    # fuzz 2:34: launched with the same array as `x` and `acc`
    tid = wp.tid()
    wp.atomic_add(acc, 1, wp.cos(x[tid]))


def aliased_accumulator_program(a):
    c = wp.clone(a[0])
    launch(read_aliased_accumulator_kernel, 2, c, c)
    return [c]


@wp.kernel
def read_other_write_own_kernel(x: wp.array(dtype=f64), y: wp.array(dtype=f64), n: int):
    # fuzz 1:28: launched with the same array as `x` and `y`; each thread writes only its own
    # element, but reads the next thread's, which that thread overwrites
    tid = wp.tid()
    y[tid] = wp.sin(x[(tid + 1) % n]) * x[tid]


def aliased_read_other_write_own_program(a):
    c = wp.clone(a[0])
    launch(read_other_write_own_kernel, 3, c, c, 3)
    return [c]


@wp.kernel
def write_then_read_alias_kernel(x: wp.array(dtype=f64), y: wp.array(dtype=f64),
                                 z: wp.array(dtype=f64)):
    # fuzz 1:678: launched with the same array as `x` and `y`; each thread touches only its own
    # element, but writes it through `y` before it reads it through `x`
    tid = wp.tid()
    y[tid] = f64(0.5)
    y[tid] = (f64(0.5) + x[tid]) * z[tid]


def aliased_write_then_read_program(a):
    c = wp.clone(a[0])
    launch(write_then_read_alias_kernel, 2, c, c, a[1])
    return [c]


@wp.kernel
def dead_atomic_in_loop_kernel(x: wp.array(dtype=f64), y: wp.array(dtype=f64),
                               slots: wp.array(dtype=wp.int32)):
    # fuzz 1:218: the unused result of an int atomic in a loop made the adjoint run threads in
    # launch order; thread 1 reads y[0] after thread 0 overwrote it, so its gradient reaches
    # x[0] only through thread 0's reverse, which must come after thread 1's
    tid = wp.tid()
    a = y[0]
    b = x[tid]
    for _j in range(4):
        _k = wp.atomic_or(slots, tid, 3)
    y[tid] = a + b


@wp.kernel
def used_atomic_and_overwritten_read_kernel(x: wp.array(dtype=f64), y: wp.array(dtype=f64),
                                            slots: wp.array(dtype=wp.int32)):
    # the returned value of an atomic is used (threads replay in launch order) and threads read
    # an element other threads overwrite (its gradient needs the reverse order): refused
    tid = wp.tid()
    a = y[0]
    k = wp.atomic_add(slots, 0, 1)
    y[tid] = a + x[tid] * f64(k + 1)


@wp.func
def number_between_returns(p: f64) -> f64:
    # fuzz 1:601: a number bound between two early returns lives in a branch of its own (the
    # frontend failed with an internal TypeError)
    if p < f64(0.0):
        return p * p
    k = 0 + 2
    if p > f64(1.0):
        return wp.sin(p)
    return p * f64(k)


@wp.kernel
def number_between_returns_kernel(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    tid = wp.tid()
    y[tid] = number_between_returns(x[tid])


@wp.kernel
def used_atomic_and_shared_store_kernel(x: wp.array(dtype=f64), q: wp.array(dtype=wp.quatd),
                                        slots: wp.array(dtype=wp.int32)):
    # fuzz 2:738 (--avoid B), shrunk: every thread stores q[0] (the last store wins) and the
    # value an atomic returns is used, so the adjoint runs threads in launch order and sent
    # q[0]'s gradient to the first thread's x. Refused at record time for more than one thread
    # (one-thread launches such as exch_in_loop in test_grad_corpus_loops.py stay allowed)
    tid = wp.tid()
    q[0] = wp.quatd(f64(1.1), x[tid], f64(0.5), f64(1.1))
    k = wp.atomic_cas(slots, tid, tid, tid)
    if k < 3:
        x[tid] = x[tid] * f64(1.0)


# =============================================================================================
# C': an int atomic changes an element another thread then reads (here outside any loop)


@wp.kernel
def xor_then_index_kernel(x: wp.array(dtype=f64), y: wp.array(dtype=f64),
                          slots: wp.array(dtype=wp.int32)):
    # fuzz 4:143. Thread 0 reads slots[0] after its own xor; the adjoint must see that value.
    tid = wp.tid()
    wp.atomic_xor(slots, 0, 1)
    wp.atomic_add(y, slots[tid], x[tid])


@wp.kernel
def int_atomic_in_nested_loops_kernel(x: wp.array(dtype=f64), y: wp.array(dtype=f64),
                                      slots: wp.array(dtype=wp.int32)):
    # fuzz 100:1939 (C): refused at backward with E's message
    tid = wp.tid()
    a = x[tid]
    for _i in range(2):
        for _j in range(1):
            wp.atomic_cas(slots, tid, tid, tid)
    y[tid] = a * a


@wp.kernel
def store_other_index_kernel(x: wp.array(dtype=f64), z: wp.array(dtype=f64), n: int):
    # fuzz 100:1292 (B): thread 1 tests x[1] after thread 0 has stored into it
    tid = wp.tid()
    if x[tid] > f64(0.5):
        x[int(wp.abs(wp.sin(z[tid])) * f64(3.5)) % n] = f64(0.5)


# =============================================================================================
# D / E: valid kernels refused at backward


@wp.kernel
def atomic_in_loop_kernel(x: wp.array(dtype=f64), acc: wp.array(dtype=f64), n: int):
    # fuzz 2:0 (D): the value atomic_add returns is unused
    tid = wp.tid()
    for _j in range(n):
        wp.atomic_add(acc, 0, x[tid] * x[tid])


@wp.kernel
def accumulate_in_nested_loops_kernel(x: wp.array(dtype=f64), acc: wp.array(dtype=f64)):
    # fuzz 4:40 (D inside E's nesting: refused with E's message)
    tid = wp.tid()
    for _i in range(2):
        for _j in range(3):
            acc[0] += x[tid] * x[tid]


@wp.kernel
def store_in_loop_in_if_kernel(x: wp.array(dtype=f64), n: int):
    # fuzz 1:11 / 2:107 / 3:69 (E): a plain store in a loop (constant, runtime or while) inside
    # an if, then a store after it
    tid = wp.tid()
    a = x[tid]
    if a < f64(0.5):
        for _j in range(n):
            x[tid] = a * a
    x[tid] = wp.sin(a)


# =============================================================================================
# a segfault in backward: a func with an early return inside a runtime loop, inlined in two
# loops (fuzz 200:43 --avoid ABCDE). LLVM turned the loops' closed form into a 128-bit division
# (`__udivti3`), which the JIT linker could not find and bound, with every other symbol of the
# object, to address 0. Run in a child process so a crash cannot stop the suite.


@wp.func
def early_return_in_loop(p1: vec3d, p2: f64, p3: f64, n: int) -> f64:
    for _j in range(n):
        if wp.cos(p3) < f64(0.5):
            return f64(0.9) * p2 * wp.dot(p1, p1)
    return f64(0.5)


@wp.kernel
def func_loop_return_twice_kernel(x: wp.array(dtype=f64), y: wp.array(dtype=f64), n: int):
    tid = wp.tid()
    s = f64(0.0)
    for _i in range(n):
        s += early_return_in_loop(vec3d(f64(0.5), f64(0.5), f64(0.5)), f64(0.5), f64(0.5), n)
    for j in range(1, 4):
        s += early_return_in_loop(vec3d(f64(0.5), f64(0.5), f64(0.5)), x[tid], x[tid], j)
    y[tid] = s


def _check_func_loop_return_twice():
    check_kernel(func_loop_return_twice_kernel, 2, [arr([1.2, 0.8]), arr(np.zeros(2)), 0],
                 wrt=[0], outputs=[1])


@wp.func
def loops_never_run(q: wp.quatd) -> f64:
    for _j in range(3):
        k = int(0)
        while k < 1 and (f64(0.5) < f64(0.5)):
            k = k + 1
            q[1] *= q[2]
    return f64(0.5)


@wp.kernel
def zero_trip_nested_loops_kernel(x: wp.array(dtype=f64), m: wp.array(dtype=mat33d), n: int):
    # fuzz 200:1268 --avoid ABCDE, as shrunk: nothing is stored; n = 0
    tid = wp.tid()
    a = x[0]
    a += -wp.exp(wp.sin(a))
    for _i in range(n):
        a = f64(0.5)
        k = int(0)
        while k < n:
            k = k + 1
            _b = m[tid] * loops_never_run(wp.quatd(f64(0.5), f64(1.1), f64(0.5), f64(0.5)))


def _check_zero_trip_nested_loops():
    check_kernel(zero_trip_nested_loops_kernel, 2,
                 [arr([-0.70, 0.02]), arr(rnd((2, 3, 3), seed=3), mat33d), 0], wrt=[0, 1],
                 outputs=[0, 1])


@pytest.mark.parametrize("check", ["_check_func_loop_return_twice", "_check_zero_trip_nested_loops"])
@pytest.mark.xfail(BACKEND == "warp", strict=False, reason="warp-lang replays the loops")
def test_fuzz_backward_does_not_crash(check):
    here = os.path.dirname(os.path.abspath(__file__))
    code = f"import test_grad_corpus_fuzz as t; t.{check}(); print('checked')"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.path.dirname(here),
                                                        os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], cwd=here, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and "checked" in proc.stdout, (
        f"exit status {proc.returncode}\n{proc.stderr[-2000:]}")


# =============================================================================================

KNOWN_A = "A: loop-carried variable that starts as a plain copy of another"
KNOWN_A_ARG = ("A through a @wp.func argument: a parameter starts as a plain copy "
               "of a variable (found with --avoid ABCDE)")
KNOWN_A_SRC = ("A seen from the source: a copy of a component of the loop-carried "
               "variable, taken before the loop (found with --avoid ABCDE)")
@wp.kernel
def two_shared_reads_merge_kernel(x0: wp.array(dtype=wp.float64), xq: wp.array(dtype=wp.quatd),
                                  nt: int):
    # fuzz 41:423 (B): x0[0] is overwritten by thread 0 before thread 1 reads it, and xq is
    # read at a launch-dependent index; both loads flow into q, so the search for x0's hazard
    # must not stop where xq's had been
    tid = wp.tid()
    q = xq[tid % nt]
    q -= wp.quat_from_axis_angle(wp.vec3d(wp.float64(0.5), wp.float64(0.5), x0[0]), q[2])
    x0[tid] = wp.float64(0.5)
    xq[tid] = q


KNOWN_B = "B: a thread reads an element another thread writes in the same launch"
KNOWN_C = ("C (outside a loop): an int atomic changes an element that another "
           "thread's index read sees; the adjoint reads the final value")
KNOWN_C_LOOP = "C: int atomics (exch/cas/and/or/xor) inside loops"
KNOWN_ORDER = ("an unused int atomic result carried by a loop put the adjoint's threads in "
               "launch order (fuzz 1:218)")
KNOWN_LIT = "a number bound between a func's early returns: internal error (fuzz 1:601)"
KNOWN_D = "D: atomic_add as a statement inside a loop refused"
KNOWN_E = "E: array store in a loop nested in an if refused"

WARP_OVERWRITE = "warp-lang's adjoint re-reads memory that the forward overwrote"
X4 = np.array([0.3, -0.4, 0.9, 0.2])

CASES = [
    (Case("copy_then_loop_assign_zero_trips", kernel=copy_then_loop_assign_kernel, dim=4,
          args=[arr(X4), arr(np.zeros(4)), 0], wrt=[0], outputs=[1]), KNOWN_A),
    (Case("copy_then_loop_accumulate", kernel=copy_then_loop_accumulate_kernel, dim=2,
          args=[arr([0.3, -0.4])], wrt=[0], outputs=[0]), KNOWN_A),
    (Case("same_variable_two_func_args", kernel=same_var_two_args_kernel, dim=2,
          args=[arr([0.24, -0.26]), arr(np.zeros(2))], wrt=[0], outputs=[1],
          warp_xfail="warp-lang replays the while loop"), KNOWN_A_ARG),
    (Case("func_arg_copy_in_zero_trip_loops", kernel=arg_copy_in_zero_trip_loops_kernel, dim=2,
          args=[arr([0.24, -0.26]), arr(rnd((2, 3), seed=4), vec3d),
                arr(np.zeros((2, 4)), wp.quatd)], wrt=[0], outputs=[2]), KNOWN_A_ARG),
    (Case("component_copied_before_loop", kernel=component_copied_before_loop_kernel, dim=2,
          args=[arr([0.3, -0.7]), arr(np.zeros(2))], wrt=[0], outputs=[1]), KNOWN_A_SRC),
    (Case("scalar_copied_before_loop", kernel=scalar_copied_before_loop_kernel, dim=2,
          args=[arr([0.3, -0.7]), arr(np.zeros(2))], wrt=[0], outputs=[1]), KNOWN_A_SRC),
    (Case("read_other_then_overwrite", kernel=read_other_then_overwrite_kernel, dim=4,
          args=[arr(X4)], wrt=[0], outputs=[0], warp_xfail=WARP_OVERWRITE), KNOWN_B),
    (Case("two_shared_reads_merge", kernel=two_shared_reads_merge_kernel, dim=2,
          args=[arr([-1.0, -1.1]), arr(rnd((2, 4), seed=7), wp.quatd), 2], wrt=[0],
          outputs=[1], warp_xfail=WARP_OVERWRITE), KNOWN_B),
    (Case("read_overwritten_element", kernel=read_overwritten_kernel, dim=2,
          args=[arr([-0.58, 0.42]), arr([0.57, 1.14])], wrt=[0, 1], outputs=[1],
          warp_xfail=WARP_OVERWRITE), KNOWN_B),
    (Case("read_accumulated_element", kernel=read_accumulated_kernel, dim=2,
          args=[arr([0.3, -0.4])], wrt=[0], outputs=[0], warp_xfail=WARP_OVERWRITE), KNOWN_B),
    (Case("aliased_read_and_accumulate", program=aliased_accumulator_program,
          args=[arr([0.3, -0.4])], wrt=[0], warp_xfail=WARP_OVERWRITE), KNOWN_B),
    (Case("aliased_read_other_write_own", program=aliased_read_other_write_own_program,
          args=[arr([0.3, -0.4, 0.9])], wrt=[0], warp_xfail=WARP_OVERWRITE), KNOWN_B),
    (Case("aliased_write_then_read", program=aliased_write_then_read_program,
          args=[arr([-0.53, 0.79]), arr([-1.04, -0.19])], wrt=[0, 1],
          warp_xfail=WARP_OVERWRITE), KNOWN_B),
    (Case("dead_atomic_in_loop", kernel=dead_atomic_in_loop_kernel, dim=2,
          args=[arr([1.06, 0.55]), arr([-0.17, 0.46]), arr([1, 1], wp.int32)], wrt=[0, 1],
          outputs=[1], warp_xfail=WARP_OVERWRITE), KNOWN_ORDER),
    (Case("used_atomic_and_overwritten_read", kernel=used_atomic_and_overwritten_read_kernel,
          dim=2, args=[arr([1.06, 0.55]), arr([-0.17, 0.46]), arr([0, 0], wp.int32)],
          wrt=[0, 1], outputs=[1], warp_xfail=WARP_OVERWRITE), KNOWN_C),
    (Case("number_between_early_returns", kernel=number_between_returns_kernel, dim=3,
          args=[arr([-0.4, 0.3, 1.7]), arr(np.zeros(3))], wrt=[0], outputs=[1]), KNOWN_LIT),
    (Case("int_atomic_then_index_read", kernel=xor_then_index_kernel, dim=2,
          args=[arr([0.8, -0.5]), arr([0.1, 0.2]), arr([1, 0], wp.int32)], wrt=[0],
          outputs=[1], warp_xfail=WARP_OVERWRITE), KNOWN_C),
    (Case("int_atomic_in_nested_loops", kernel=int_atomic_in_nested_loops_kernel, dim=2,
          args=[arr([0.8, -0.5]), arr([0.1, 0.2]), arr([1, 0], wp.int32)], wrt=[0],
          outputs=[1]), KNOWN_C_LOOP),
    (Case("store_at_other_index", kernel=store_other_index_kernel, dim=3,
          args=[arr([0.78, -1.0, 0.86]), arr([-0.35, 0.99, 1.09]), 3], wrt=[0, 1],
          outputs=[0], warp_xfail=WARP_OVERWRITE), KNOWN_B),
    (Case("atomic_add_in_loop", kernel=atomic_in_loop_kernel, dim=3,
          args=[arr(X4[:3]), arr([0.25]), 2], wrt=[0, 1], outputs=[1]), KNOWN_D),
    (Case("accumulate_in_nested_loops", kernel=accumulate_in_nested_loops_kernel, dim=3,
          args=[arr(X4[:3]), arr([0.25])], wrt=[0, 1], outputs=[1]), KNOWN_D),
    (Case("store_in_loop_in_if", kernel=store_in_loop_in_if_kernel, dim=4,
          args=[arr(X4), 2], wrt=[0], outputs=[0], warp_xfail=WARP_OVERWRITE), KNOWN_E),
]


#: fixed since: the gradient matches FD. B and C kernels read elements other threads of the
#: launch overwrite, where the value read matters: gradloom refuses them with a clear error
#: naming the array (docs/differences.md), and warp-lang gets them wrong.
UNDEFINED_REPLAY = (KNOWN_B, KNOWN_C)


def _param(case):
    marks = []
    if BACKEND == "warp" and case.warp_xfail:
        marks.append(pytest.mark.xfail(reason=case.warp_xfail, strict=False))
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c, k in CASES if k not in UNDEFINED_REPLAY])
def test_fuzz_gradient_matches_fd(case):
    case.run()


@pytest.mark.skipif(BACKEND != "gradloom", reason="gradloom's error for an undefined replay")
@pytest.mark.parametrize("case", [_param(c) for c, k in CASES if k in UNDEFINED_REPLAY])
def test_fuzz_undefined_replay_is_a_clear_error(case):
    # read-then-overwrite across threads: at backward; one array passed as two arguments (one
    # written): when the launch is recorded
    expected = (wp.errors.TapeError if case.id.startswith("aliased_") else wp.CompileError)
    with pytest.raises(expected, match="that other threads overwrite|are the same array"):
        case.run()


def test_case_ids_unique():
    ids = [c.id for c, _ in CASES]
    assert len(ids) == len(set(ids))


def used_atomic_and_shared_store_case(dim: int) -> Case:
    return Case("used_atomic_and_shared_store", kernel=used_atomic_and_shared_store_kernel,
                dim=dim, args=[arr([-0.06, -0.64][:dim]), arr(rnd((2, 4), seed=6), wp.quatd),
                               arr([0, 1][:dim], wp.int32)], wrt=[0], outputs=[1])


@pytest.mark.skipif(BACKEND != "gradloom", reason="gradloom's thread order")
def test_used_atomic_and_shared_store_is_refused_on_several_threads():
    # fuzz 2:738: the launch-order adjoint sent q[0]'s gradient to the first writer
    with pytest.raises(wp.errors.TapeError, match="same element of 'q'"):
        used_atomic_and_shared_store_case(2).run()


def test_used_atomic_and_shared_store_on_one_thread():
    # one thread: launch order is the only order, so the gradient is defined and must be right
    used_atomic_and_shared_store_case(1).run()
