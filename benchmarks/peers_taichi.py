"""The peers benchmark's five cases written for Taichi (CPU backend, fast_math=False).

Each case is built from host_data.grad_data() (the same float32 inputs as every other
framework) and offers `fwd()`, `fwdbwd()`, `outputs()` and `grads()` (see peers_child.py).
Fields are allocated with `needs_grad=True`; `fwdbwd` runs the forward kernels, clears the
gradient fields, seeds the outputs' gradients (the benchmark's seeds, or 1 for a scalar loss)
and calls the kernels' `.grad()` in reverse order (Taichi's own autodiff). Taichi's rules for
differentiable kernels forbid overwriting a field that was read, so saxpy and integrate write
separate output fields (the same bytes moved as the in-place Warp-API kernels).
"""


from collections.abc import Callable
from typing import Any

import numpy as np
import taichi as ti  # type: ignore[import-untyped]

# reverse mode through the n-body's inner loop keeps one autodiff-stack entry per iteration (one
# per body: 4,096 at full size); with Taichi's default stack size its adjoint kernel crashes
AD_STACK_SIZE = 8192


def setup(threads: int | None) -> str:
    """ti.init on the CPU without fast-math (thread count: None for Taichi's default)."""
    opts: dict[str, Any] = {"cpu_max_num_threads": threads} if threads else {}
    ti.init(arch=ti.cpu, fast_math=False, default_fp=ti.f32, log_level=ti.WARN,
            ad_stack_size=AD_STACK_SIZE, **opts)  # fmt: skip
    return ".".join(str(v) for v in ti.__version__)


def scalars(n: int) -> Any:
    return ti.field(ti.f32, shape=n, needs_grad=True)


def vec3s(n: int) -> Any:
    return ti.Vector.field(3, ti.f32, shape=n, needs_grad=True)


def filled(field: Any, values: Any) -> Any:
    field.from_numpy(np.ascontiguousarray(values))
    return field


@ti.kernel
def k_saxpy(a: ti.f32, x: ti.template(), y: ti.template(), out: ti.template()):  # type: ignore[valid-type]
    for i in x:
        out[i] = a * x[i] + y[i]


@ti.kernel
def k_integrate(x: ti.template(), v: ti.template(), g: ti.types.vector(3, ti.f32), dt: ti.f32,  # type: ignore[valid-type]
                x_out: ti.template(), v_out: ti.template()):  # type: ignore[valid-type]
    for i in x:
        x_out[i] = x[i] + v[i] * dt
        v_out[i] = v[i] + g * dt


@ti.kernel
def k_nbody(pos: ti.template(), mass: ti.template(), acc: ti.template(), n: ti.i32, eps2: ti.f32):  # type: ignore[valid-type]
    for i in pos:
        p = pos[i]
        a = ti.Vector([0.0, 0.0, 0.0])
        for j in range(n):
            d = pos[j] - p
            inv_r = 1.0 / ti.sqrt(d.dot(d) + eps2)
            a += d * (mass[j] * inv_r * inv_r * inv_r)
        acc[i] = a


@ti.kernel
def k_neo_hookean(F: ti.template(), mu: ti.f32, lam: ti.f32, energy: ti.template()):  # type: ignore[valid-type]
    for i in F:
        f = F[i]
        log_j = ti.log(f.determinant())
        tr = (f.transpose() @ f).trace()
        energy[None] += 0.5 * mu * (tr - 3.0) - mu * log_j + 0.5 * lam * log_j * log_j


@ti.kernel
def k_springs(x: ti.template(), v: ti.template(), si: ti.template(), sj: ti.template(),  # type: ignore[valid-type]
              rest: ti.template(), ke: ti.f32, kd: ti.f32, f: ti.template()):  # type: ignore[valid-type]
    for s in si:
        i, j = si[s], sj[s]
        d = x[j] - x[i]
        length = d.norm()
        u = d / length
        fs = u * (ke * (length - rest[s]) + kd * (v[j] - v[i]).dot(u))
        f[i] += fs
        f[j] -= fs


@ti.kernel
def k_cloth_integrate(x: ti.template(), v: ti.template(), f: ti.template(), w: ti.template(),  # type: ignore[valid-type]
                      g: ti.types.vector(3, ti.f32), dt: ti.f32,  # type: ignore[valid-type]
                      x_out: ti.template(), v_out: ti.template()):  # type: ignore[valid-type]
    for i in x:
        v1 = v[i] + (f[i] * w[i] + g) * dt
        x_out[i] = x[i] + v1 * dt
        v_out[i] = v1


@ti.kernel
def k_loss(x: ti.template(), loss: ti.template()):  # type: ignore[valid-type]
    for i in x:
        loss[None] += x[i].dot(x[i])


class Case:
    """`launches`: (kernel, args) in forward order; `leaves`: input fields whose gradients are
    the result; `seeds`: (output field, seed numpy array or None for a scalar loss seeded with
    1); `clear`: fields zeroed before each forward; `outs`: output name -> field."""

    def __init__(self, launches: list[tuple[Callable[..., Any], tuple[Any, ...]]],
                 leaves: dict[str, Any], seeds: list[tuple[Any, Any]], outs: dict[str, Any],
                 clear: tuple[Any, ...] = ()) -> None:  # fmt: skip
        self.launches, self.leaves, self.outs, self.clear = launches, leaves, outs, clear
        self.seeds = [(fld, filled(type_like(fld), s) if s is not None else None)
                      for fld, s in seeds]  # fmt: skip
        self.fields = {id(a): a for _, args in launches for a in args
                       if getattr(a, "grad", None) is not None}  # fmt: skip

    def fwd(self) -> None:
        for fld in self.clear:
            fld.fill(0)
        for kernel, args in self.launches:
            kernel(*args)
        ti.sync()

    def fwdbwd(self) -> None:
        self.fwd()
        for fld in self.fields.values():
            fld.grad.fill(0)
        for out, seed in self.seeds:
            if seed is None:
                out.grad[None] = 1.0
            else:
                out.grad.copy_from(seed)
        for kernel, args in reversed(self.launches):
            kernel.grad(*args)
        ti.sync()

    def outputs(self) -> dict[str, np.ndarray]:
        self.fwd()
        return {k: np.atleast_1d(v.to_numpy()) for k, v in self.outs.items()}

    def grads(self) -> dict[str, np.ndarray]:
        self.fwdbwd()
        return {k: v.grad.to_numpy() for k, v in self.leaves.items()}


def type_like(fld: Any) -> Any:
    """A new field of the same element type and shape as `fld` (no gradient)."""
    n = fld.shape
    if isinstance(fld, ti.MatrixField):
        return ti.Vector.field(fld.n, ti.f32, shape=n)
    return ti.field(ti.f32, shape=n)


def make(name: str, d: dict[str, Any]) -> Case:
    n = int(d["n"])
    g = ti.Vector([float(c) for c in d["g"]]) if "g" in d else None
    if name == "saxpy":
        x, y, out = filled(scalars(n), d["x"]), filled(scalars(n), d["y"]), scalars(n)
        return Case([(k_saxpy, (float(d["a"]), x, y, out))], {"x": x, "y": y},
                    [(out, d["seed_y"])], {"y": out})  # fmt: skip
    if name == "integrate":
        x, v, x1, v1 = filled(vec3s(n), d["x"]), filled(vec3s(n), d["v"]), vec3s(n), vec3s(n)
        return Case([(k_integrate, (x, v, g, float(d["dt"]), x1, v1))], {"x": x, "v": v},
                    [(x1, d["seed_x"]), (v1, d["seed_v"])], {"x": x1, "v": v1})  # fmt: skip
    if name == "nbody":
        pos, mass, acc = filled(vec3s(n), d["pos"]), filled(scalars(n), d["mass"]), vec3s(n)
        return Case([(k_nbody, (pos, mass, acc, n, float(d["eps2"])))],
                    {"pos": pos, "mass": mass}, [(acc, d["seed_acc"])], {"acc": acc})  # fmt: skip
    if name == "neo_hookean":
        F = filled(ti.Matrix.field(3, 3, ti.f32, shape=n, needs_grad=True), d["F"])
        energy = ti.field(ti.f32, shape=(), needs_grad=True)
        return Case([(k_neo_hookean, (F, float(d["mu"]), float(d["lam"]), energy))], {"F": F},
                    [(energy, None)], {"energy": energy}, clear=(energy,))  # fmt: skip
    if name == "cloth":
        return cloth_case(d, g)
    raise KeyError(name)


def cloth_case(d: dict[str, Any], g: Any) -> Case:
    n, m = int(d["n"]), int(d["springs"])
    x, v = filled(vec3s(n), d["x"]), filled(vec3s(n), d["v"])
    si, sj = filled(ti.field(ti.i32, shape=m), d["si"]), filled(ti.field(ti.i32, shape=m), d["sj"])
    rest, w = filled(scalars(m), d["rest"]), filled(scalars(n), d["inv_mass"])
    f, x1, v1 = vec3s(n), vec3s(n), vec3s(n)
    loss = ti.field(ti.f32, shape=(), needs_grad=True)
    launches = [
        (k_springs, (x, v, si, sj, rest, float(d["ke"]), float(d["kd"]), f)),
        (k_cloth_integrate, (x, v, f, w, g, float(d["dt"]), x1, v1)),
        (k_loss, (x1, loss)),
    ]
    return Case(launches, {"x": x, "v": v}, [(loss, None)], {"x_out": x1}, clear=(f, loss))
