"""Launches whose threads read and write one array: differentiated where, for this launch's
arguments and grid, no thread reads an element another thread writes; a clear error where one
does. Gradients against float64 central differences (tests/gradfd.py) and analytic ones."""

import numpy as np
import pytest
from gradfd import arr, check_program
from wpcompat import BACKEND, DEVICE, wp

f64 = wp.float64
GRADLOOM_ONLY = pytest.mark.skipif(BACKEND != "gradloom", reason="gradloom's error text")


@wp.kernel
def time_step_kernel(q: wp.array2d(dtype=f64), t: int, T: int):
    # trajectories of T steps stored one after another: row s * T + t is step t of trajectory s
    s, i = wp.tid()
    k = s * T + t
    q[k + 1, i] = wp.sin(q[k, i]) * f64(2.0)


def _rollout(S: int, N: int, T: int):  # noqa: N803 (the kernel's own names)
    def program(a):
        (q,) = a
        for t in range(T - 1):
            wp.launch(time_step_kernel, dim=(S, N), inputs=[q, t, T], device=DEVICE)
        return [q]
    return program


@pytest.mark.parametrize("S,N,T", [(1, 3, 4), (2, 3, 4), (3, 2, 2), (4, 1, 5), (2, 2, 3)])
def test_time_indexed_rollout_matches_fd(S, N, T):  # noqa: N803
    rng = np.random.default_rng(S * 100 + N * 10 + T)
    q0 = rng.uniform(-1.0, 1.0, (S * T, N))
    check_program(_rollout(S, N, T), [arr(q0)], wrt=[0], name=f"rollout {S}x{N}x{T}")


def test_time_indexed_rollout_matches_the_analytic_gradient():
    # the last step of each trajectory, seeded with 1: d q_last / d q_0 = Π 2 cos(q_t)
    S, N, T = 3, 4, 5
    rng = np.random.default_rng(7)
    q0 = rng.uniform(-1.0, 1.0, (S * T, N))
    q = wp.array(q0, dtype=f64, device=DEVICE, requires_grad=True)
    tape = wp.Tape()
    with tape:
        _rollout(S, N, T)([q])
    seed = np.zeros((S * T, N))
    seed[T - 1::T] = 1.0
    tape.backward(grads={q: wp.array(seed, dtype=f64, device=DEVICE)})
    states = [q0[0::T]]
    for _ in range(T - 2):
        states.append(2.0 * np.sin(states[-1]))
    want = np.zeros((S * T, N))
    want[0::T] = np.prod([2.0 * np.cos(x) for x in states], axis=0)
    np.testing.assert_allclose(q.grad.numpy(), want, rtol=1e-12, atol=1e-12)


@GRADLOOM_ONLY
def test_one_step_trajectories_overwrite_what_others_read():
    # T = 1: thread (s, i) writes row s + 1, which thread (s + 1, i) reads
    S, N = 3, 2
    q = wp.array(np.linspace(0.1, 0.8, (S + 1) * N).reshape(S + 1, N), dtype=f64,
                 device=DEVICE, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(time_step_kernel, dim=(S, N), inputs=[q, 0, 1], device=DEVICE)
    with pytest.raises(wp.CompileError, match="'q' that other threads overwrite") as info:
        tape.backward(grads={q: wp.ones_like(q)})
    message = str(info.value)
    assert "test_launch_overlap.py" in message and "thread (1, 0) reads" in message
    assert "(0, 0) writes" in message
    assert np.all(q.grad.numpy() == 1.0)  # the seed as given: no adjoint ran


@wp.kernel
def shifted_update_kernel(x: wp.array(dtype=f64), shift: int, n: int):
    i = wp.tid()
    if i + shift < n:
        x[i + shift] = x[i] * x[i]


def _shifted(shift: int, threads: int, n: int):
    def program(a):
        (x,) = a
        wp.launch(shifted_update_kernel, dim=threads, inputs=[x, shift, n], device=DEVICE)
        return [x]
    return program


@pytest.mark.parametrize("shift,threads", [(0, 6), (3, 3), (4, 2), (5, 6)])
def test_shift_whose_reads_and_writes_are_disjoint_matches_fd(shift, threads):
    # shift 0: each thread its own element; 3 and 4: the writes land past every read; 5 with
    # 6 threads: the guard keeps only thread 0, whose write no other thread reads
    x0 = np.linspace(0.3, 1.2, 6)
    check_program(_shifted(shift, threads, 6), [arr(x0)], wrt=[0],
                  name=f"shift {shift} over {threads}")


@GRADLOOM_ONLY
@pytest.mark.parametrize("shift,threads", [(1, 6), (2, 5)])
def test_shift_into_elements_other_threads_read_is_an_error(shift, threads):
    x = wp.array(np.linspace(0.3, 1.2, 6), dtype=f64, device=DEVICE, requires_grad=True)
    tape = wp.Tape()
    with tape:
        _shifted(shift, threads, 6)([x])
    with pytest.raises(wp.CompileError, match="'x' that other threads overwrite"):
        tape.backward(grads={x: wp.ones_like(x)})


@wp.kernel
def trajectory_vec_kernel(q: wp.array2d(dtype=wp.vec3d), k: wp.array(dtype=f64), t: int,
                          T: int):
    # vector states (trajectory step, body) and a parameter array: a nonlinear spring per body
    s, b = wp.tid()
    row = s * T + t
    x = q[row, b]
    q[row + 1, b] = x - x * (k[b] * wp.length(x))


def test_vector_state_and_parameter_gradients_match_fd():
    S, B, T = 2, 3, 3  # noqa: N806
    rng = np.random.default_rng(3)

    def program(a):
        q, k = a
        for t in range(T - 1):
            wp.launch(trajectory_vec_kernel, dim=(S, B), inputs=[q, k, t, T], device=DEVICE)
        return [q]

    check_program(program, [arr(rng.uniform(-1, 1, (S * T, B, 3)), wp.vec3d),
                            arr(rng.uniform(0.1, 0.3, B))], wrt=[0, 1], name="vec rollout")


@wp.kernel
def component_loop_kernel(q: wp.array3d(dtype=f64), t: int, T: int):
    # the components written in a loop: addresses computed from the loop's counter
    s, b = wp.tid()
    row = s * T + t
    n = f64(0.0)
    for c in range(3):
        n += q[row, b, c] * q[row, b, c]
    for c in range(3):
        q[row + 1, b, c] = q[row, b, c] * wp.cos(n)


def test_addresses_from_a_loop_counter_match_fd():
    S, B, T = 2, 2, 3  # noqa: N806
    rng = np.random.default_rng(11)

    def program(a):
        (q,) = a
        for t in range(T - 1):
            wp.launch(component_loop_kernel, dim=(S, B), inputs=[q, t, T], device=DEVICE)
        return [q]

    check_program(program, [arr(rng.uniform(-1, 1, (S * T, B, 3)))], wrt=[0], name="loop")


@GRADLOOM_ONLY
def test_addresses_from_a_loop_counter_that_meet_are_an_error():
    S, B = 3, 2  # noqa: N806
    q = wp.array(np.full((S + 1, B, 3), 0.5), dtype=f64, device=DEVICE, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(component_loop_kernel, dim=(S, B), inputs=[q, 0, 1], device=DEVICE)
    with pytest.raises(wp.CompileError, match="'q' that other threads overwrite"):
        tape.backward(grads={q: wp.ones_like(q)})


@wp.kernel
def mirrored_kernel(x: wp.array(dtype=f64), half: int, flip: int):
    # the element written is chosen by a branch on the launch's arguments
    i = wp.tid()
    j = i + half
    if flip != 0:
        j = half - 1 - i
    x[j] = wp.sin(x[i]) + x[j]


@pytest.mark.parametrize("flip", [0, 1])
def test_address_chosen_by_a_branch_matches_fd(flip):
    # flip 0: threads 0..3 write 4..7; flip 1: they write 3..0, each the element of another
    # thread, which reads it (refused), so only flip 0 is differentiable
    x0 = np.linspace(0.1, 0.8, 8)

    def program(a):
        (x,) = a
        wp.launch(mirrored_kernel, dim=4, inputs=[x, 4, flip], device=DEVICE)
        return [x]

    if flip == 0:
        check_program(program, [arr(x0)], wrt=[0], name="mirrored")
        return
    if BACKEND != "gradloom":
        pytest.skip("gradloom's error text")
    x = wp.array(x0, dtype=f64, device=DEVICE, requires_grad=True)
    tape = wp.Tape()
    with tape:
        program([x])
    with pytest.raises(wp.CompileError, match=r"thread 0 reads an element thread 3 writes"):
        tape.backward(grads={x: wp.ones_like(x)})
