"""The peers benchmark's five cases written for Dr.Jit (LLVM backend, drjit.llvm.ad types).

Each case is built from host_data.grad_data() (the same float32 inputs as every other
framework) and offers `fwd()`, `fwdbwd()`, `outputs()` and `grads()` (see peers_child.py).
Dr.Jit traces the Python code into fused kernels: `fwd` ends with `dr.eval` of the outputs and
`dr.sync_thread()`, `fwdbwd` seeds the outputs' gradients (saxpy, integrate, nbody: the
benchmark's seeds; neo_hookean, cloth: the scalar loss), traverses the graph backward and
evaluates the input gradients together with the forward outputs. The n-body loop is a
symbolic `dr.while_loop` (one lane per body, a loop over the bodies, as in the Warp-API
kernel); `max_iterations=n` lets Dr.Jit differentiate it in reverse mode.
"""

from __future__ import annotations

from typing import Any

import drjit as dr
import numpy as np
from drjit.llvm.ad import Array3f, Float, Matrix3f, UInt32


def vec3(a: Any) -> Any:
    return Array3f(*(Float(np.ascontiguousarray(a[:, c])) for c in range(3)))


def mat33(a: Any) -> Any:
    return Matrix3f(*(Float(np.ascontiguousarray(a[:, r, c])) for r in range(3) for c in range(3)))


def to_np(v: Any) -> np.ndarray:
    """(n,) for a Float, (n, 3) for an Array3f, (n, 3, 3) for a Matrix3f."""
    a = np.array(v)
    if a.ndim == 2:
        return a.T
    if a.ndim == 3:
        return np.transpose(a, (2, 0, 1))
    return a


def finish(*values: Any) -> None:
    dr.eval(*values)
    dr.sync_thread()


class Case:
    """Inputs (`leaves`: name -> array, gradients enabled in fwdbwd), `forward()` -> outputs
    (name -> array), `seeds` (output name -> seed array; a scalar output without a seed is a
    loss, seeded with 1)."""

    def __init__(self, leaves: dict[str, Any], seeds: dict[str, Any]) -> None:
        self.leaves, self.seeds = leaves, seeds
        self.out: dict[str, Any] = {}

    def forward(self) -> dict[str, Any]:
        raise NotImplementedError

    def fwd(self) -> None:
        self.out = self.forward()
        finish(*self.out.values())

    def fwdbwd(self) -> None:
        self.backward()

    def backward(self) -> dict[str, Any]:
        """Forward with gradients enabled on the leaves, seeded backward traversal; the leaves'
        gradients, evaluated (gradients disabled again, so that fwd() records no graph)."""
        for leaf in self.leaves.values():
            dr.enable_grad(leaf)
            dr.clear_grad(leaf)
        out = self.forward()
        for name, value in out.items():
            if name in self.seeds:
                dr.set_grad(value, self.seeds[name])
            elif name in self.loss_names():
                dr.set_grad(value, 1.0)
        dr.enqueue(dr.ADMode.Backward, *out.values())
        dr.traverse(dr.ADMode.Backward)
        grads = {k: dr.grad(leaf) for k, leaf in self.leaves.items()}
        # the outputs too: a lazily traced forward is otherwise skipped where the gradients
        # do not need its values (saxpy, integrate), which no other framework may do
        finish(*grads.values(), *out.values())
        for leaf in self.leaves.values():
            dr.disable_grad(leaf)
        return grads

    def loss_names(self) -> tuple[str, ...]:
        return ()

    def outputs(self) -> dict[str, np.ndarray]:
        self.fwd()
        return {k: to_np(v) for k, v in self.out.items()}

    def grads(self) -> dict[str, np.ndarray]:
        return {k: to_np(v) for k, v in self.backward().items()}


class Saxpy(Case):
    def __init__(self, d: dict[str, Any]) -> None:
        super().__init__({"x": Float(d["x"]), "y": Float(d["y"])}, {"y": Float(d["seed_y"])})
        self.a = float(d["a"])

    def forward(self) -> dict[str, Any]:
        return {"y": self.a * self.leaves["x"] + self.leaves["y"]}


class Integrate(Case):
    def __init__(self, d: dict[str, Any]) -> None:
        super().__init__({"x": vec3(d["x"]), "v": vec3(d["v"])},
                         {"x": vec3(d["seed_x"]), "v": vec3(d["seed_v"])})  # fmt: skip
        self.g, self.dt = Array3f(*(float(c) for c in d["g"])), float(d["dt"])

    def forward(self) -> dict[str, Any]:
        x, v = self.leaves["x"], self.leaves["v"]
        return {"x": x + v * self.dt, "v": v + self.g * self.dt}


class NBody(Case):
    def __init__(self, d: dict[str, Any]) -> None:
        super().__init__({"pos": vec3(d["pos"]), "mass": Float(d["mass"])},
                         {"acc": vec3(d["seed_acc"])})  # fmt: skip
        self.n, self.eps2 = int(d["n"]), float(d["eps2"])

    def forward(self) -> dict[str, Any]:
        pos, mass, eps2 = self.leaves["pos"], self.leaves["mass"], self.eps2

        def body(j: Any, a: Any) -> tuple[Any, Any]:
            d = dr.gather(Array3f, pos, j) - pos
            inv_r = 1.0 / dr.sqrt(dr.dot(d, d) + eps2)
            return j + 1, a + d * (dr.gather(Float, mass, j) * inv_r * inv_r * inv_r)

        j0 = dr.zeros(UInt32, self.n)
        _, acc = dr.while_loop((j0, dr.zeros(Array3f, self.n)), lambda j, a: j < self.n, body,
                               max_iterations=self.n)  # fmt: skip
        return {"acc": acc}


class NeoHookean(Case):
    def __init__(self, d: dict[str, Any]) -> None:
        super().__init__({"F": mat33(d["F"])}, {})
        self.mu, self.lam = float(d["mu"]), float(d["lam"])

    def loss_names(self) -> tuple[str, ...]:
        return ("energy",)

    def forward(self) -> dict[str, Any]:
        f = self.leaves["F"]
        log_j = dr.log(dr.det(f))
        tr = sum(f[r][c] * f[r][c] for r in range(3) for c in range(3))
        e = 0.5 * self.mu * (tr - 3.0) - self.mu * log_j + 0.5 * self.lam * log_j * log_j
        return {"energy": dr.sum(e)}


class Cloth(Case):
    def __init__(self, d: dict[str, Any]) -> None:
        super().__init__({"x": vec3(d["x"]), "v": vec3(d["v"])}, {})
        self.si, self.sj = UInt32(d["si"].astype(np.uint32)), UInt32(d["sj"].astype(np.uint32))
        self.rest, self.w = Float(d["rest"]), Float(d["inv_mass"])
        self.ke, self.kd, self.dt, self.n = float(d["ke"]), float(d["kd"]), float(d["dt"]), d["n"]
        self.g = Array3f(*(float(c) for c in d["g"]))

    def loss_names(self) -> tuple[str, ...]:
        return ("loss",)

    def forward(self) -> dict[str, Any]:
        x, v = self.leaves["x"], self.leaves["v"]
        xi, xj = dr.gather(Array3f, x, self.si), dr.gather(Array3f, x, self.sj)
        vi, vj = dr.gather(Array3f, v, self.si), dr.gather(Array3f, v, self.sj)
        d = xj - xi
        length = dr.norm(d)
        u = d / length
        fs = u * (self.ke * (length - self.rest) + self.kd * dr.dot(vj - vi, u))
        f = dr.zeros(Array3f, int(self.n))
        dr.scatter_add(f, fs, self.si)
        dr.scatter_add(f, -fs, self.sj)
        v1 = v + (f * self.w + self.g) * self.dt
        x1 = x + v1 * self.dt
        return {"x_out": x1, "loss": dr.sum(dr.squared_norm(x1))}


CASES = {"saxpy": Saxpy, "integrate": Integrate, "nbody": NBody, "neo_hookean": NeoHookean,
         "cloth": Cloth}  # fmt: skip


def setup(threads: int | None) -> str:
    """Configure Dr.Jit (thread count; None: its default); its version."""
    if threads:
        dr.set_thread_count(threads)
    return str(getattr(dr, "__version__", "?"))


def make(name: str, data: dict[str, Any]) -> Case:
    return CASES[name](data)
