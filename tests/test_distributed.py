"""gradloom.distributed across two gloo processes on 127.0.0.1.

tests/test_distributed_worker.py runs each rank; this file starts two of them and checks what
they saved against references computed here without any communication: numpy forward passes
(losses), float64 central differences and analytic derivatives (gradients), and the same
kernels run by one process on the whole grid. Also: ranks that disagree about a step get a
clear error within the timeout, not a hang; `import gradloom` loads neither the package nor
torch.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

if os.environ.get("GL_TEST_BACKEND", "gradloom").strip().lower() not in ("", "gradloom"):
    pytest.skip("gradloom-specific tests", allow_module_level=True)

torch = pytest.importorskip("torch")
if not (torch.distributed.is_available() and torch.distributed.is_gloo_available()):
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

import test_distributed_worker as worker  # noqa: E402

import gradloom as wp  # noqa: E402

WORKER = Path(worker.__file__)
ROOT = WORKER.parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_ranks(scenario: str, outdir: Path, size: int = 2, timeout: float = 120.0) -> None:
    """Start `size` worker processes and wait for all; fail with their output if one fails.
    They meet through a file (no port to pick, so none another process can take first) and
    gloo connects them over the loopback interface, 127.0.0.1."""
    init_method = f"file://{outdir / 'rendezvous'}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(WORKER.parent)]),
           "GLOO_SOCKET_IFNAME": "lo"}
    procs = [subprocess.Popen([sys.executable, str(WORKER), scenario, str(r), str(size),
                               init_method, str(outdir)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(size)]
    try:
        outputs = [p.communicate(timeout=timeout)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for r, (p, text) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0, f"rank {r} failed ({p.returncode}):\n{text[-4000:]}"


@pytest.fixture(scope="module")
def grads(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    outdir = tmp_path_factory.mktemp("distributed")
    run_ranks("grads", outdir)
    return [{**dict(np.load(outdir / f"rank{r}.npz")),
             "errors": json.loads((outdir / f"rank{r}.json").read_text())} for r in range(2)]


def rel(got: Any, want: Any) -> float:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def central_fd(f: Any, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of the scalar f at x, float64."""
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[k] += eps
        lo[k] -= eps
        g[k] = (f(hi) - f(lo)) / (2 * eps)
    return g


# ---- case A: 2-D periodic diffusion ------------------------------------------------------------


def numpy_a(u0: np.ndarray, kappa: np.ndarray) -> float:
    u = u0.copy()
    h = 0.5
    for _ in range(worker.A_STEPS):
        nb = [(np.roll(u, s, ax), np.roll(kappa, s, ax)) for ax in (0, 1) for s in (-1, 1)]
        f = sum(h * (kappa + kn) * (un - u) for un, kn in nb)
        u = u + worker.A_DT * f
    return float(np.sum(u ** 3))


def single_process_a(u0g: np.ndarray, kg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same kernels over the whole grid in this process (periodic indices, no halos)."""
    u0 = wp.array(u0g, dtype=wp.float64, requires_grad=True)
    kappa = wp.array(kg, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        u = u0
        for _ in range(worker.A_STEPS):
            nxt = wp.zeros(worker.A_SHAPE, dtype=wp.float64, requires_grad=True)
            wp.launch(worker.diffuse2d, dim=worker.A_SHAPE, inputs=[u, kappa, worker.A_DT, 0],
                      outputs=[nxt])
            u = nxt
        loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        wp.launch(worker.square_sum2d, dim=worker.A_SHAPE, inputs=[u, 0], outputs=[loss])
    tape.backward(loss)
    return u0.grad.numpy(), kappa.grad.numpy()


def test_2d_periodic_loss_and_gradients(grads: list[dict[str, Any]]) -> None:
    u0, kappa = worker.global_a()
    want_loss = numpy_a(u0, kappa)
    fd_u0 = central_fd(lambda x: numpy_a(x, kappa), u0)
    fd_kappa = central_fd(lambda x: numpy_a(u0, x), kappa)
    one_u0, one_kappa = single_process_a(u0, kappa)
    assert rel(one_kappa, fd_kappa) < 1e-6  # the reference itself is right
    for r in (0, 1):
        out = grads[r]
        assert rel(out["a_loss"], want_loss) < 1e-12
        assert rel(out["a_grad_u0"], one_u0) < 1e-12
        assert rel(out["a_grad_kappa"], one_kappa) < 1e-12
        assert rel(out["a_grad_u0"], fd_u0) < 1e-6
        assert rel(out["a_grad_kappa"], fd_kappa) < 1e-6


# ---- case B: 3-D vec3d, axis 1, width 2, not periodic ------------------------------------------


def test_3d_vector_slabs_along_axis_1(grads: list[dict[str, Any]]) -> None:
    a = worker.global_b()
    w, coef = np.array(worker.B_W), np.array(worker.B_COEF)
    padded = np.pad(a, ((0, 0), (2, 2), (0, 0), (0, 0)))  # the edges' ghosts stay zero
    dots = padded @ w
    n = worker.B_SHAPE[1]
    s = sum(coef[d] * dots[:, d:d + n] for d in range(5))
    grad_dots = np.zeros_like(dots)
    for d in range(5):
        grad_dots[:, d:d + n] += 2 * s * coef[d]
    want_grad = (grad_dots[..., None] * w)[:, 2:2 + n]  # analytic: dL/da = Σ 2 s coef w
    for r in (0, 1):
        assert rel(grads[r]["b_loss"], np.sum(s * s)) < 1e-12
        # all_reduce's adjoint sums the seeds (1 on rank 0, 0 on rank 1): the exact gradient
        assert rel(grads[r]["b_grad"], want_grad) < 1e-12
        assert rel(grads[r]["b_grad_unchecked"], want_grad) < 1e-12  # check=False


# ---- case E: 1-D vec2d, periodic, uneven slabs -------------------------------------------------


def numpy_e(a: np.ndarray) -> float:
    f = np.sum(np.roll(a, 1, 0) * np.roll(a, -1, 0), axis=1) + 0.5 * np.sum(a * a, axis=1)
    return float(np.sum(f * f))


def test_1d_vector_periodic_ghosts_and_gradient(grads: list[dict[str, Any]]) -> None:
    a = worker.global_e()
    for r in (0, 1):
        start, count = grads[r]["e_start"]
        local = grads[r]["e_local_after_exchange"]
        assert np.array_equal(local[1:1 + count], a[start:start + count])
        assert np.array_equal(local[0], a[(start - 1) % worker.E_N])
        assert np.array_equal(local[count + 1], a[(start + count) % worker.E_N])
        assert rel(grads[r]["e_loss"], numpy_e(a)) < 1e-12
        assert rel(grads[r]["e_grad"], central_fd(numpy_e, a)) < 1e-7
    assert [int(grads[r]["e_start"][1]) for r in (0, 1)] == [4, 3]


# ---- case C: broadcast, and the world-size factor ----------------------------------------------


def test_broadcast_adjoint_reduces_to_the_source(grads: list[dict[str, Any]]) -> None:
    p = 3.0
    dl_dp = 2 * p * sum(np.sum(worker.broadcast_x(r) ** 2) for r in (0, 1))  # analytic
    assert [float(grads[r]["c_p"][0]) for r in (0, 1)] == [p, p]
    assert rel(grads[0]["c_grad"], [dl_dp]) < 1e-14
    assert grads[1]["c_grad"][0] == 0.0  # rank 1's own p was overwritten: no gradient
    # adjoint="sum": seeding one rank gives the gradient; seeding every rank counts it twice
    assert rel(grads[0]["c_grad_sum_rank0"], [dl_dp]) < 1e-14
    assert rel(grads[0]["c_grad_sum_every_rank"], [2 * dl_dp]) < 1e-14


def test_replicated_adjoint_with_differing_gradients_is_an_error(
        grads: list[dict[str, Any]]) -> None:
    for r in (0, 1):
        message = grads[r]["errors"].get("replicated_differs", "")
        assert "adjoint='replicated'" in message and "differs across ranks" in message


# ---- disagreeing ranks -------------------------------------------------------------------------


def test_mismatched_ranks_raise_clear_errors(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    run_ranks("mismatch", tmp_path, timeout=90.0)
    elapsed = time.perf_counter() - t0
    errors = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for r, e in enumerate(errors):
        assert "shape (4, 6)" in e["halo_shape"] and "shape (4, 7)" in e["halo_shape"], e
        assert f"rank {r} and rank {1 - r} disagree about halo_exchange" in e["halo_shape"]
        assert "only the extent along the split axis 0 may differ" in e["halo_shape"]
        assert "all_reduce" in e["all_reduce_shape"] and "(2,)" in e["all_reduce_shape"]
        assert "(3,)" in e["all_reduce_shape"]
        mine = ("float64", "float32")[r]
        assert f"this rank's array has dtype {mine}, rank {1 - r}'s array has another dtype" \
            in e["halo_dtype"], e
        # the halo_exchange is step #4 on rank 0 and #5 on rank 1
        assert f"rank {1 - r} is at halo_exchange (communication step #{5 - r})" in e["order"], e
        # different steps: nothing to compare, so each rank gives up after its 2 s timeout
        assert "same steps in the same order" in e["different_steps"], e
        assert float(e["seconds"]) < 30.0
    assert elapsed < 90.0


def test_init_times_out_when_a_rank_never_joins() -> None:
    code = ("import gradloom.distributed as gd\n"
            "try:\n"
            f"    gd.init(init_method='tcp://127.0.0.1:{free_port()}', rank=0, world_size=2,"
            " timeout=1)\n"
            "except gd.DistributedError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=ROOT)
    assert "torch.distributed could not start (gloo, timeout 1 s)" in out.stdout, out.stderr


# ---- the examples' --check ---------------------------------------------------------------------


def run_example(cmd: list[str]) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout


def test_example_check_under_torchrun() -> None:
    """The example's --check: loss and gradient of 2 ranks against one process (rtol 1e-10)."""
    text = run_example([sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc-per-node", "2", "examples/distributed_diffusion.py", "--check"])
    assert "check passed" in text and "[2 ranks]" in text


def test_example_check_under_mpiexec() -> None:
    pytest.importorskip("mpi4py")
    mpiexec = shutil.which("mpiexec") or str(Path(sys.executable).parent / "mpiexec")
    if not Path(mpiexec).exists():
        pytest.skip("mpiexec not found")
    text = run_example([mpiexec, "-n", "2", sys.executable,
                        "examples/distributed_diffusion_mpi.py", "--check"])
    assert "check passed" in text and "[2 ranks]" in text


def test_example_optimises_and_writes_its_plot(tmp_path: Path) -> None:
    """One process (no torchrun): the loss falls and the PNG is written."""
    examples = str(ROOT / "examples")
    if examples not in sys.path:
        sys.path.insert(0, examples)
    import distributed_diffusion as example

    out = tmp_path / "distributed_diffusion.png"
    assert example.main(["--iterations", "8"], output=out) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import gradloom.distributed as gd

    result = example.optimise(gd.init(), 8, show_progress=False)
    assert result["losses"][-1] < 0.2 * result["losses"][0]  # measured: 3.1e-3 -> 5.6e-4


# ---- in-process checks -------------------------------------------------------------------------


def test_import_gradloom_loads_neither_package_nor_torch() -> None:
    code = ("import sys, gradloom; print(sorted(m for m in sys.modules "
            "if 'distributed' in m or m.split('.')[0] == 'torch'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"


def test_single_process_periodic_halo_wraps_around() -> None:
    import gradloom.distributed as gd

    comm = gd.init()
    assert comm.size == 1
    a = wp.array(np.arange(12.0).reshape(6, 2), dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        comm.halo_exchange(a, periodic=True)
    got = a.numpy()
    assert np.array_equal(got[0], got[4]) and np.array_equal(got[5], got[1])
    a.grad.assign(np.ones((6, 2)))
    tape.backward()
    # each ghost's gradient moved onto the row it copies; the ghosts' own became zero
    assert np.array_equal(a.grad.numpy()[:, 0], [0, 2, 1, 1, 2, 0])


@wp.kernel
def _square_all(a: wp.array2d(dtype=wp.float64), b: wp.array2d(dtype=wp.float64)):
    i, j = wp.tid()
    b[i, j] = a[i, j] * a[i, j]


def test_exchange_after_a_recorded_read_keeps_the_old_ghosts_for_backward() -> None:
    """A launch reads the ghost rows, then the exchange overwrites them: the launch's adjoint
    must see the values it read (the Tape's copy-on-write), not the exchanged ones."""
    import gradloom.distributed as gd

    comm = gd.init()
    a0 = np.arange(1.0, 13.0).reshape(6, 2)
    a = wp.array(a0, dtype=wp.float64, requires_grad=True)
    b = wp.zeros((6, 2), dtype=wp.float64, requires_grad=True)
    w_a, w_b = np.linspace(0.5, 1.6, 12).reshape(6, 2), np.linspace(-1.0, 1.2, 12).reshape(6, 2)
    tape = wp.Tape()
    with tape:
        wp.launch(_square_all, dim=(6, 2), inputs=[a], outputs=[b])
        comm.halo_exchange(a, periodic=True)  # rows 0 and 5 <- rows 4 and 1
    tape.backward(grads={a: w_a, b: w_b})
    # analytic: loss = Σ w_b a0² + Σ w_a a1, a1 = a0 with rows 0, 5 replaced by rows 4, 1
    want = 2 * a0 * w_b
    want[1:5] += w_a[1:5]
    want[4] += w_a[0]
    want[1] += w_a[5]
    assert np.array_equal(a.numpy()[0], a0[4]) and np.array_equal(a.numpy()[5], a0[1])
    assert np.allclose(a.grad.numpy(), want, rtol=1e-14, atol=0)


def test_cuda_arrays_are_refused_clearly() -> None:
    """NCCL transfers of device arrays are unverified: refused, naming the call (on the
    stand-in CUDA driver, tests/fake_cuda.py, where no GPU is here)."""
    from cuda_env import device_env

    import gradloom.distributed as gd

    env = device_env("gpu" if wp.is_cuda_available() else "fake")
    next(env)
    try:
        comm = gd.init()
        a = wp.zeros((6, 2), dtype=wp.float64, device="cuda:0")
        with pytest.raises(gd.DistributedError, match=r"halo_exchange\(a\): arrays in CUDA"):
            comm.halo_exchange(a, periodic=True)
        with pytest.raises(gd.DistributedError, match=r"all_reduce\(a\): arrays in CUDA"):
            comm.all_reduce(a)
    finally:
        next(env, None)


def test_bad_arguments_name_the_argument() -> None:
    import gradloom.distributed as gd

    comm = gd.init()
    a = wp.zeros((2, 3), dtype=wp.float64)
    with pytest.raises(gd.DistributedError, match=r"needs at least 3"):
        comm.halo_exchange(a)
    with pytest.raises(gd.DistributedError, match=r"axis=2"):
        comm.halo_exchange(wp.zeros((6, 3)), axis=2)
    with pytest.raises(gd.DistributedError, match=r"adjoint='mean'"):
        comm.all_reduce(a, adjoint="mean")
    with pytest.raises(gd.DistributedError, match=r"expected a gradloom array"):
        comm.all_reduce(np.zeros(3))


def test_the_group_init_created_is_torn_down_before_interpreter_exit(tmp_path: Path) -> None:
    """Left to the C++ destructors at exit, gloo aborted a rank now and then after every step had
    succeeded ("terminate called without an active exception"); gd.init destroys the group it
    created at exit. The script's own exit hook, registered first, runs after gradloom's."""
    script = (
        "import atexit, sys, torch.distributed as dist\n"
        "atexit.register(lambda: print('initialized at exit:', dist.is_initialized()))\n"
        "import gradloom.distributed as gd\n"
        f"comm = gd.init(init_method='file://{tmp_path / 'rendezvous'}', rank=0, world_size=1)\n"
        "print('size', comm.size)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "GLOO_SOCKET_IFNAME": "lo"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "size 1" in done.stdout
    assert "initialized at exit: False" in done.stdout, done.stdout
