"""Gradient corpus, fuzz part: the minimal kernels of failures found by the random-kernel fuzzer.

Each kernel is the shrunk form of a fuzz failure (``python -m tools.fuzz``, docs/fuzzing.md),
tidied by hand, checked like tests/test_grad_corpus.py: reverse mode against float64 central
differences of a weighted sum of the outputs (tests/gradfd.py). A case that fails on gradloom
today is a strict xfail naming the bug (issue 12 letters), so the fix flips it to a pass and the
mark must go. A refused kernel (gradloom raises where warp-lang compiles it) counts as failing.
"""

# Kernel bodies use explicit float64 literals (`f64(0.5)`) so that the file also runs on
# warp-lang (GL_TEST_BACKEND=warp), which types a bare float literal as float32.
# ruff: noqa: UP018, RUF046

import numpy as np
import pytest
from gradfd import Case, arr
from wpcompat import BACKEND, DEVICE, wp

f64 = wp.float64
vec3d = wp.vec3d
mat33d = wp.mat33d


def rnd(shape, lo=-1.0, hi=1.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


def launch(kernel, dim, *args):
    wp.launch(kernel, dim=dim, inputs=list(args), device=DEVICE)


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


# =============================================================================================
# D / E: valid kernels refused at backward


@wp.kernel
def atomic_in_loop_kernel(x: wp.array(dtype=f64), acc: wp.array(dtype=f64), n: int):
    # fuzz 2:0 (D): the value atomic_add returns is unused
    tid = wp.tid()
    for j in range(n):
        wp.atomic_add(acc, 0, x[tid] * x[tid])


@wp.kernel
def store_in_loop_in_if_kernel(x: wp.array(dtype=f64), n: int):
    # fuzz 1:11 / 2:107 / 3:69 (E): a plain store in a loop (constant, runtime or while) inside
    # an if, then a store after it
    tid = wp.tid()
    a = x[tid]
    if a < f64(0.5):
        for j in range(n):
            x[tid] = a * a
    x[tid] = wp.sin(a)


# =============================================================================================

KNOWN_B = "B (issue 12): a thread reads an element another thread writes in the same launch"
KNOWN_D = "D (issue 12): atomic_add as a statement inside a loop refused"
KNOWN_E = "E (issue 12): array store in a loop nested in an if refused"

WARP_OVERWRITE = "warp-lang's adjoint re-reads memory that the forward overwrote"
X4 = np.array([0.3, -0.4, 0.9, 0.2])

CASES = [
    (Case("read_other_then_overwrite", kernel=read_other_then_overwrite_kernel, dim=4,
          args=[arr(X4)], wrt=[0], outputs=[0], warp_xfail=WARP_OVERWRITE), KNOWN_B),
    (Case("read_accumulated_element", kernel=read_accumulated_kernel, dim=2,
          args=[arr([0.3, -0.4])], wrt=[0], outputs=[0], warp_xfail=WARP_OVERWRITE), KNOWN_B),
    (Case("aliased_read_and_accumulate", program=aliased_accumulator_program,
          args=[arr([0.3, -0.4])], wrt=[0], warp_xfail=WARP_OVERWRITE), KNOWN_B),
    (Case("atomic_add_in_loop", kernel=atomic_in_loop_kernel, dim=3,
          args=[arr(X4[:3]), arr([0.25]), 2], wrt=[0, 1], outputs=[1]), KNOWN_D),
    (Case("store_in_loop_in_if", kernel=store_in_loop_in_if_kernel, dim=4,
          args=[arr(X4), 2], wrt=[0], outputs=[0], warp_xfail=WARP_OVERWRITE), KNOWN_E),
]


def _param(case, known):
    marks = []
    if known:
        marks.append(pytest.mark.xfail(BACKEND == "gradloom", strict=True, reason=known))
    if BACKEND == "warp" and case.warp_xfail:
        marks.append(pytest.mark.xfail(reason=case.warp_xfail, strict=False))
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c, k) for c, k in CASES])
def test_fuzz_gradient_matches_fd(case):
    case.run()


def test_case_ids_unique():
    ids = [c.id for c, _ in CASES]
    assert len(ids) == len(set(ids))
