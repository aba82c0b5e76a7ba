"""Host-side data of the benchmark: the cloth grid, the backward cases' inputs, float64 references.

numpy only (imported inside the functions: a child's "import + init" time must include the numpy
import that `import warp` / `import gradloom` pay). Both sides of a comparison get their inputs
from here, so they see identical float32 values.
"""

import math
from typing import Any

from specs import (
    CLOTH_DT,
    CLOTH_GRAVITY,
    CLOTH_JITTER,
    CLOTH_KD,
    CLOTH_KE,
    GRAD_ATOL,
    GRAD_RTOL,
    KERNELS,
)


def cloth_grid(n: int, seed: int = 0) -> dict[str, Any]:
    """A square cloth of n particles (n a square number) with structural and shear springs.

    Particle (r, c) of the side x side grid sits at (c, r, 0)/side, jittered by CLOTH_JITTER
    spacings so that the springs are not at rest. Springs per particle (where inside the grid):
    right, down, down-right, down-left, listed particle by particle (≈ 4 per particle). Rest
    lengths are those of the unjittered grid. float32 (int32 for the spring ends)."""
    import numpy as np

    side = math.isqrt(n)
    if side * side != n or side < 2:
        raise ValueError(f"cloth size must be a square number >= 4, got {n}")
    rng = np.random.default_rng(seed)
    h = 1.0 / side
    r, c = np.divmod(np.arange(n), side)
    grid = np.stack([c * h, r * h, np.zeros(n)], axis=1)
    idx = np.arange(n).reshape(side, side)
    ends = [
        (idx[:, :-1], idx[:, 1:]),
        (idx[:-1, :], idx[1:, :]),
        (idx[:-1, :-1], idx[1:, 1:]),
        (idx[:-1, 1:], idx[1:, :-1]),
    ]
    si = np.concatenate([a.reshape(-1) for a, _ in ends])
    sj = np.concatenate([b.reshape(-1) for _, b in ends])
    order = np.argsort(si, kind="stable")
    si, sj = si[order], sj[order]
    f32 = np.float32
    return {
        "n": n,
        "springs": int(si.size),
        "x": (grid + CLOTH_JITTER * h * rng.standard_normal((n, 3))).astype(f32),
        "v": (0.1 * rng.standard_normal((n, 3))).astype(f32),
        "inv_mass": rng.uniform(0.8, 1.2, n).astype(f32),
        "si": si.astype(np.int32),
        "sj": sj.astype(np.int32),
        "rest": np.linalg.norm(grid[sj] - grid[si], axis=1).astype(f32),
        "ke": CLOTH_KE,
        "kd": CLOTH_KD,
        "dt": CLOTH_DT,
        "g": np.asarray(CLOTH_GRAVITY, dtype=f32),
    }


def grad_data(name: str, n: int) -> dict[str, Any]:
    """The float32 inputs and the seeds of one kernel's backward case (same as the forward
    cases' distributions; seeds drawn from [0.5, 1.5) so that no symmetry cancels in the sums)."""
    import numpy as np

    rng = np.random.default_rng(KERNELS.index(name) + 1)

    def f32(a: Any) -> Any:
        return np.asarray(a, dtype=np.float32)

    def seed(*shape: int) -> Any:
        return f32(rng.uniform(0.5, 1.5, shape))

    d: dict[str, Any] = {"n": n}
    if name == "saxpy":
        d.update(a=2.0, x=f32(rng.random(n)), y=f32(rng.random(n)), seed_y=seed(n))
    elif name == "integrate":
        d.update(
            x=f32(rng.random((n, 3))),
            v=f32(rng.random((n, 3))),
            g=f32([0.0, -9.8, 0.0]),
            dt=0.001,
            seed_x=seed(n, 3),
            seed_v=seed(n, 3),
        )
    elif name == "nbody":
        d.update(
            pos=f32(rng.random((n, 3))),
            mass=f32(rng.random(n) + 0.5),
            acc=f32(np.zeros((n, 3))),
            eps2=0.01,
            seed_acc=seed(n, 3),
        )
    elif name == "neo_hookean":
        d.update(
            F=f32(np.eye(3) + 0.1 * rng.standard_normal((n, 3, 3))),
            mu=1.0,
            lam=10.0,
            energy=f32(np.zeros(1)),
        )
    elif name == "tiny":
        d.update(x=f32(rng.random(n)), y=f32(np.zeros(n)), seed_y=seed(n))
    elif name == "cloth":
        d.update(cloth_grid(n, seed=KERNELS.index(name) + 1))
    return d


def loss_part(name: str, d: dict[str, Any], k: int) -> float:
    """In float64: the part of the loss L (Σ seed·output; neo_hookean: the energy) that depends
    on row k of the inputs. For a finite difference in one element of row k."""
    import numpy as np

    f64 = {key: np.asarray(v, dtype=np.float64) for key, v in d.items()}
    if name == "saxpy":
        return float(f64["seed_y"][k] * (f64["a"] * f64["x"][k] + f64["y"][k]))
    if name == "integrate":
        x, v, dt = f64["x"][k], f64["v"][k], f64["dt"]
        return float(f64["seed_x"][k] @ (x + v * dt) + f64["seed_v"][k] @ (v + f64["g"] * dt))
    if name == "nbody":
        pos, m, s, eps2 = f64["pos"], f64["mass"], f64["seed_acc"], f64["eps2"]
        dk = pos - pos[k]  # pos_j - pos_k for every j
        inv3 = (1.0 / np.sqrt((dk * dk).sum(axis=1) + eps2)) ** 3
        own = s[k] @ (m[:, None] * dk * inv3[:, None]).sum(axis=0)  # s_k · acc_k
        others = np.arange(len(pos)) != k  # s_i · (body k's pull on body i), i != k
        pulled = (s[others] * (m[k] * -dk[others] * inv3[others, None])).sum()
        return float(own + pulled)
    if name == "neo_hookean":
        F, mu, lam = f64["F"][k], f64["mu"], f64["lam"]
        log_j = np.log(np.linalg.det(F))
        return float(0.5 * mu * (np.trace(F.T @ F) - 3.0) - mu * log_j + 0.5 * lam * log_j**2)
    if name == "tiny":
        return float(f64["seed_y"][k] * (f64["x"][k] + 1.0))
    raise KeyError(name)


def cloth_step64(d: dict[str, Any]) -> Any:
    """The positions after one cloth step (spring forces, then semi-implicit Euler), in float64:
    the reference for the kernels cloth_springs + cloth_integrate."""
    import numpy as np

    x, v = np.asarray(d["x"], np.float64), np.asarray(d["v"], np.float64)
    si, sj, n = d["si"], d["sj"], len(x)
    delta = x[sj] - x[si]
    length = np.sqrt((delta * delta).sum(axis=1))
    unit = delta / length[:, None]
    vrel = ((v[sj] - v[si]) * unit).sum(axis=1)
    fs = unit * (d["ke"] * (length - np.asarray(d["rest"], np.float64)) + d["kd"] * vrel)[:, None]
    f = np.stack(
        [np.bincount(si, fs[:, c], n) - np.bincount(sj, fs[:, c], n) for c in range(3)], axis=1
    )
    w = np.asarray(d["inv_mass"], np.float64)[:, None]
    v1 = v + (f * w + np.asarray(d["g"], np.float64)) * d["dt"]
    return x + v1 * d["dt"]


def fd_gradient(name: str, d: dict[str, Any], key: str, flat: int) -> float:
    """Central finite difference, in float64, of L with respect to element `flat` of input key."""
    import numpy as np

    x = np.asarray(d[key], dtype=np.float64)
    h = 1e-6 * max(1.0, abs(float(x.flat[flat])))
    if name == "cloth":  # L = Σ |x1|²; difference per particle first, then sum (no cancellation)
        plus, minus = x.copy(), x.copy()
        plus.flat[flat] += h
        minus.flat[flat] -= h
        a, b = cloth_step64({**d, key: plus}), cloth_step64({**d, key: minus})
        return float(((a - b) * (a + b)).sum() / (2 * h))
    k = flat // (d[key].size // d[key].shape[0])
    values = []
    for step in (h, -h):
        xs = x.copy()
        xs.flat[flat] += step
        values.append(loss_part(name, {**d, key: xs}, k))
    return (values[0] - values[1]) / (2 * h)


def compare_grads(
    grads_g: dict[str, dict[str, str]], grads_w: dict[str, dict[str, str]], sizes: dict[str, int]
) -> dict[str, Any]:
    """Per kernel and input: do gradloom's and Warp's gradients (.npy paths) agree? At the
    element where they differ most (relative to the tolerance), a float64 finite difference of
    the loss says which is right."""
    import numpy as np

    out: dict[str, Any] = {}
    for name in KERNELS:
        gp, wp_ = grads_g.get(name), grads_w.get(name)
        if not gp or not wp_:
            continue
        data = grad_data(name, sizes[name])
        res = {}
        for key in gp:
            a = np.load(gp[key]).astype(np.float64).reshape(-1)
            b = np.load(wp_[key]).astype(np.float64).reshape(-1)
            scale = float(np.abs(b).max()) or 1.0
            tol = GRAD_RTOL * np.abs(b) + GRAD_ATOL * scale
            excess = np.abs(a - b) / tol
            worst = int(np.nanargmax(np.where(np.isnan(excess), np.inf, excess)))
            res[key] = {
                "match": bool(np.all(np.abs(a - b) <= tol)),
                "max_abs_diff": float(np.abs(a - b).max()),
                "max_abs_warp": scale,
                "elements": int(a.size),
                "worst_index": worst,
                "gradloom": float(a[worst]),
                "warp": float(b[worst]),
                "fd64": fd_gradient(name, data, key, worst),
            }
        out[name] = res
    return out
