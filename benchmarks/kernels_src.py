"""The benchmark's kernels as Warp-API source text, written out once per side (warp / gradloom).

`KERNELS_SRC` becomes the module `bench_kernels` and `LAUNCH_SRC` the module `bench_launch` in a
temporary directory, `__BACKEND__` replaced by `warp` or `gradloom`, so that both sides run the very
same code. The cloth's grid and every backward input come from `host_data` (numpy only).
"""

KERNELS_SRC = '''\
import numpy as np
import __BACKEND__ as wp

import host_data


@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), g: wp.vec3, dt: float):
    i = wp.tid()
    x[i] = x[i] + v[i] * dt
    v[i] = v[i] + g * dt


@wp.kernel
def nbody(pos: wp.array(dtype=wp.vec3), mass: wp.array(dtype=float),
          acc: wp.array(dtype=wp.vec3), n: int, eps2: float):
    i = wp.tid()
    p = pos[i]
    a = wp.vec3(0.0, 0.0, 0.0)
    for j in range(n):
        d = pos[j] - p
        inv_r = 1.0 / wp.sqrt(wp.dot(d, d) + eps2)
        a = a + d * (mass[j] * inv_r * inv_r * inv_r)
    acc[i] = a


@wp.kernel
def neo_hookean(F: wp.array(dtype=wp.mat33), mu: float, lam: float,
                energy: wp.array(dtype=float)):
    i = wp.tid()
    f = F[i]
    log_j = wp.log(wp.determinant(f))
    e = 0.5 * mu * (wp.trace(wp.transpose(f) @ f) - 3.0) - mu * log_j + 0.5 * lam * log_j * log_j
    wp.atomic_add(energy, 0, e)


@wp.kernel
def tiny(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] + 1.0


@wp.kernel
def cloth_springs(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3),
                  si: wp.array(dtype=int), sj: wp.array(dtype=int), rest: wp.array(dtype=float),
                  ke: float, kd: float, f: wp.array(dtype=wp.vec3)):
    """One thread per spring: Hooke force with damping along the spring, onto both ends."""
    s = wp.tid()
    i = si[s]
    j = sj[s]
    d = x[j] - x[i]
    l = wp.length(d)
    u = d / l
    fs = u * (ke * (l - rest[s]) + kd * wp.dot(v[j] - v[i], u))
    wp.atomic_add(f, i, fs)
    wp.atomic_add(f, j, -fs)


@wp.kernel
def cloth_integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3),
                    f: wp.array(dtype=wp.vec3), f_next: wp.array(dtype=wp.vec3),
                    inv_mass: wp.array(dtype=float), g: wp.vec3, dt: float,
                    x_out: wp.array(dtype=wp.vec3), v_out: wp.array(dtype=wp.vec3)):
    """Semi-implicit Euler with gravity; clears the force buffer of the next step."""
    i = wp.tid()
    v1 = v[i] + (f[i] * inv_mass[i] + g) * dt
    x_out[i] = x[i] + v1 * dt
    v_out[i] = v1
    f_next[i] = wp.vec3(0.0, 0.0, 0.0)


@wp.kernel
def cloth_loss(x: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, wp.dot(x[i], x[i]))


class Case:
    """A forward case: steps (each a list of (kernel, dim, inputs) launched in order; successive
    launch() calls cycle through the steps) and the array whose sum of |values| is the checksum."""

    def __init__(self, steps, out):
        self.steps, self.out, self.count = steps, out, 0

    def launch(self):
        for kernel, dim, inputs in self.steps[self.count % len(self.steps)]:
            wp.launch(kernel, dim=dim, inputs=inputs, device="cpu")
        self.count += 1

    def checksum(self):
        return float(np.abs(self.out.numpy().astype(np.float64)).sum())


def cloth_arrays(d, grad=False):
    """The cloth's warp arrays from host_data.cloth_grid() (or grad_data()) output."""
    def arr(key, dtype=float):
        return wp.array(d[key], dtype=dtype, device="cpu", requires_grad=grad and dtype != int)

    def vec3s():
        return wp.zeros(int(d["n"]), dtype=wp.vec3, device="cpu", requires_grad=grad)

    return dict(x=arr("x", wp.vec3), v=arr("v", wp.vec3), si=arr("si", int), sj=arr("sj", int),
                rest=arr("rest"), inv_mass=arr("inv_mass"), f=vec3s(), f_next=vec3s(),
                x_out=vec3s(), v_out=vec3s())


def cloth_step(c, d, f, f_next):
    """The launches of one cloth step: spring forces into f, then integrate (clearing f_next)."""
    g = wp.vec3(*(float(x) for x in d["g"]))
    springs = [c["x"], c["v"], c["si"], c["sj"], c["rest"], float(d["ke"]), float(d["kd"]), f]
    step = [c["x"], c["v"], f, f_next, c["inv_mass"], g, float(d["dt"]), c["x_out"], c["v_out"]]
    return [(cloth_springs, int(d["springs"]), springs), (cloth_integrate, int(d["n"]), step)]


def make_cases(sizes):
    """name -> Case, for the kernels named in sizes."""
    rng = np.random.default_rng(0)

    def arr(values, dtype=float):
        return wp.array(np.asarray(values, dtype=np.float32), dtype=dtype, device="cpu")

    def zeros(n, dtype=float):
        return wp.zeros(n, dtype=dtype, device="cpu")

    cases = {}
    for name, n in sizes.items():
        if name == "saxpy":
            y = arr(rng.random(n))
            cases[name] = Case([[(saxpy, n, [2.0, arr(rng.random(n)), y])]], y)
        elif name == "integrate":
            x, v = arr(rng.random((n, 3)), wp.vec3), arr(rng.random((n, 3)), wp.vec3)
            cases[name] = Case([[(integrate, n, [x, v, wp.vec3(0.0, -9.8, 0.0), 0.001])]], x)
        elif name == "nbody":
            pos, mass, acc = arr(rng.random((n, 3)), wp.vec3), arr(rng.random(n) + 0.5), zeros(n, wp.vec3)
            cases[name] = Case([[(nbody, n, [pos, mass, acc, n, 0.01])]], acc)
        elif name == "neo_hookean":
            F, energy = arr(np.eye(3) + 0.1 * rng.standard_normal((n, 3, 3)), wp.mat33), zeros(1)
            cases[name] = Case([[(neo_hookean, n, [F, 1.0, 10.0, energy])]], energy)
        elif name == "tiny":
            y = zeros(n)
            cases[name] = Case([[(tiny, n, [arr(rng.random(n)), y])]], y)
        elif name == "cloth":
            # two force buffers, alternating: each step's integrate clears the next step's; the
            # state (x, v) is the same at every step, so every step does the same work
            d = host_data.cloth_grid(n)
            c = cloth_arrays(d)
            steps = [cloth_step(c, d, c["f"], c["f_next"]), cloth_step(c, d, c["f_next"], c["f"])]
            cases[name] = Case(steps, c["x_out"])
    return cases


def all_cases(sizes):
    """make_cases() plus a launch of cloth_loss (on the cloth's positions): every kernel of this
    module once, as Warp compiles them all at the module's first launch (cold and warm start)."""
    cases = make_cases(sizes)
    if "cloth" in cases:
        loss = wp.zeros(1, dtype=float, device="cpu")
        out = cases["cloth"].out
        cases["cloth_loss"] = Case([[(cloth_loss, out.shape[0], [out, loss])]], loss)
    return cases


# ---- backward: the same kernels and sizes, every float array with requires_grad=True ----------


class GradCase:
    """One backward case: launches (recorded on a tape), arrays zeroed before each forward, wrt
    ({key: array whose gradient is compared}), seeds ({output array: seed} for
    tape.backward(grads=...)) or loss (an array for tape.backward(loss=...))."""

    def __init__(self, launches, wrt, seeds=None, loss=None, zero=()):
        self.launches, self.wrt, self.seeds, self.loss = launches, wrt, seeds or {}, loss
        self.zero = zero

    def forward_on_tape(self):
        """A new wp.Tape with the case's forward launches recorded on it."""
        for a in self.zero:
            a.zero_()
        tape = wp.Tape()
        with tape:
            for kernel, dim, inputs in self.launches:
                wp.launch(kernel, dim=dim, inputs=inputs, device="cpu")
        return tape

    def backward(self, tape):
        if self.loss is not None:
            tape.backward(loss=self.loss)
        else:
            tape.backward(grads=self.seeds)


def make_grad_case(name, data):
    """One backward case from numpy data (host_data.grad_data(), identical on both sides)."""
    n = int(data["n"])

    def arr(key, dtype=float, grad=True):
        return wp.array(data[key], dtype=dtype, device="cpu", requires_grad=grad)

    if name == "saxpy":
        x, y = arr("x"), arr("y")
        return GradCase([(saxpy, n, [float(data["a"]), x, y])], wrt={"x": x, "y": y},
                        seeds={y: arr("seed_y", grad=False)})
    if name == "integrate":
        x, v = arr("x", wp.vec3), arr("v", wp.vec3)
        g = wp.vec3(*(float(c) for c in data["g"]))
        return GradCase([(integrate, n, [x, v, g, float(data["dt"])])], wrt={"x": x, "v": v},
                        seeds={x: arr("seed_x", wp.vec3, False), v: arr("seed_v", wp.vec3, False)})
    if name == "nbody":
        pos, mass, acc = arr("pos", wp.vec3), arr("mass"), arr("acc", wp.vec3)
        inputs = [pos, mass, acc, n, float(data["eps2"])]
        return GradCase([(nbody, n, inputs)], wrt={"pos": pos, "mass": mass},
                        seeds={acc: arr("seed_acc", wp.vec3, False)})
    if name == "neo_hookean":
        F, energy = arr("F", wp.mat33), arr("energy")
        inputs = [F, float(data["mu"]), float(data["lam"]), energy]
        return GradCase([(neo_hookean, n, inputs)], wrt={"F": F}, loss=energy)
    if name == "tiny":
        x, y = arr("x"), arr("y")
        return GradCase([(tiny, n, [x, y])], wrt={"x": x}, seeds={y: arr("seed_y", grad=False)})
    if name == "cloth":
        c = cloth_arrays(data, grad=True)
        loss = wp.zeros(1, dtype=float, device="cpu", requires_grad=True)
        launches = [*cloth_step(c, data, c["f"], c["f_next"]), (cloth_loss, n, [c["x_out"], loss])]
        return GradCase(launches, wrt={"x": c["x"], "v": c["v"]}, loss=loss,
                        zero=(c["f"], loss))
    raise KeyError(name)
'''

LAUNCH_SRC = """\
import __BACKEND__ as wp


@wp.kernel
def bump(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + 1.0


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]
"""
