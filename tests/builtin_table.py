"""Table-driven builtin checks: one `Row` per builtin overload, instantiated in float32 and float64.

A row names a builtin, the registry signature (overload) it exercises, the argument and result
types as short codes, and optionally a kernel body, input samplers and a numpy reference. From a
row the harness generates a kernel (written to a real file, because kernels are compiled from
their source) that reads one sample per thread and stores the results:

    def k(a0: wp.array(dtype=T[0]), ..., r0: wp.array(dtype=T[n]), ...):
        i = wp.tid()
        x0 = a0[i]
        ...
        <body: assigns y0, y1, ... from x0, x1, ...>      # default: y0 = wp.<name>(x0, ...)
        r0[i] = y0

Checks (see tests/test_builtin_grads.py):

* gradient: reverse mode (``wp.Tape``) against a central difference of the float64 kernel along
  a random unit direction, per thread: ``Σ_k grad_k · d_k == (L(x + h d) - L(x - h d)) / 2h``
  with ``L = Σ_j w_j · y_j`` for random weights ``w``. float32 rows compare their float32
  reverse gradient with the float64 difference, at float32 tolerance.
* forward: results against ``ref`` (numpy/scipy, vectorised over the sample axis).

Type codes: ``f`` (the row's float type), ``i`` (int32), ``u`` (uint32), ``b`` (bool), ``v2``..``v9``
(vectors), ``m22``..``m44`` (matrices; any ``mRC``), ``q`` (quaternion), ``t`` (transform),
``sv``/``sm`` (spatial vector/matrix). Samplers: ``"any"`` U(-1, 1), ``"pos"`` U(0.2, 2),
``"unit"`` U(-0.9, 0.9), ``"quat"`` unit quaternions, ``"rot"`` rotation matrices, ``"spd"``
symmetric positive-definite, ``"wellcond"`` well-conditioned matrices, ``"tf"`` transforms with
unit rotations, ``"int"`` integers in [-8, 8], ``"bool"``; or a callable ``(rng, shape) -> array``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from wpcompat import DEVICE, wp

Sampler = str | Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]

N_SAMPLES = 16
H = 1e-6


@dataclass(frozen=True)
class Row:
    """One builtin overload under test."""

    name: str
    sig: str
    args: tuple[str, ...]
    out: tuple[str, ...]
    body: str = ""
    sample: tuple[Sampler, ...] = ()
    ref: Callable[..., Any] | None = None
    grad: bool = True
    f32: bool = True
    rtol: float = 1e-5
    rtol32: float = 2e-3
    ref_rtol: float = 1e-9
    ref_atol: float = 1e-12
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.name}[{self.label or ','.join(self.args)}]"

    def source_body(self) -> str:
        if self.body:
            return textwrap.dedent(self.body).strip()
        call = ", ".join(f"x{k}" for k in range(len(self.args)))
        return f"y0 = wp.{self.name}({call})"


# -- types ----------------------------------------------------------------------------------------

def code_type(code: str, ft: Any) -> Any:
    """The kernel type a code stands for, with float type ft."""
    fixed = {"i": wp.int32, "u": wp.uint32, "b": wp.bool}
    if code in fixed:
        return fixed[code]
    if code == "f":
        return ft
    if code == "q":
        return wp.types.quaternion(dtype=ft)
    if code == "t":
        return wp.types.transformation(dtype=ft)
    if code == "sv":
        return wp.spatial_vectord if ft is wp.float64 else wp.spatial_vectorf
    if code == "sm":
        return wp.spatial_matrixd if ft is wp.float64 else wp.spatial_matrixf
    if code[0] == "v":
        return wp.types.vector(length=int(code[1:]), dtype=ft)
    if code[0] == "m":
        return wp.types.matrix(shape=(int(code[1]), int(code[2])), dtype=ft)
    raise ValueError(f"unknown type code {code!r}")


def code_shape(code: str) -> tuple[int, ...]:
    if code in ("f", "i", "u", "b"):
        return ()
    fixed = {"q": (4,), "t": (7,), "sv": (6,), "sm": (6, 6)}
    if code in fixed:
        return fixed[code]
    if code[0] == "v":
        return (int(code[1:]),)
    return (int(code[1]), int(code[2]))


def is_float_code(code: str) -> bool:
    return code not in ("i", "u", "b")


def np_dtype(code: str, ft: Any) -> Any:
    ints = {"i": np.int32, "u": np.uint32, "b": np.bool_}
    if code in ints:
        return ints[code]
    return np.float64 if ft is wp.float64 else np.float32


# -- samplers -------------------------------------------------------------------------------------

def _random_rotations(rng: np.random.Generator, n: int) -> np.ndarray:
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    x, y, z, w = q.T
    return np.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
        2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
        2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], axis=1).reshape(n, 3, 3)


def sample(spec: Sampler, code: str, rng: np.random.Generator, n: int) -> np.ndarray:
    shape = (n, *code_shape(code))
    if callable(spec):
        return np.asarray(spec(rng, shape), dtype=np.float64)
    if spec == "any":
        return rng.uniform(-1.0, 1.0, shape)
    if spec == "pos":
        return rng.uniform(0.2, 2.0, shape)
    if spec == "unit":
        return rng.uniform(-0.9, 0.9, shape)
    if spec == "int":
        return rng.integers(-8, 9, shape).astype(np.float64)
    if spec == "bool":
        return rng.integers(0, 2, shape).astype(np.float64)
    if spec == "quat":
        q = rng.normal(size=shape)
        return q / np.linalg.norm(q, axis=-1, keepdims=True)
    if spec == "tf":
        q = rng.normal(size=(n, 4))
        return np.concatenate([rng.uniform(-1, 1, (n, 3)),
                               q / np.linalg.norm(q, axis=1, keepdims=True)], axis=1)
    if spec == "rot":
        return _random_rotations(rng, n)
    k = shape[-1]
    if spec == "spd":
        a = rng.uniform(-1, 1, shape)
        return a @ np.swapaxes(a, -1, -2) + k * np.eye(k)
    if spec == "wellcond":
        return rng.uniform(-0.5, 0.5, shape) + 2.0 * np.eye(k)
    raise ValueError(f"unknown sampler {spec!r}")


def default_sampler(code: str) -> Sampler:
    return {"i": "int", "u": "int", "b": "bool", "q": "quat", "t": "tf"}.get(code, "any")


def row_inputs(row: Row, seed: int, n: int = N_SAMPLES) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    specs = row.sample or tuple(default_sampler(c) for c in row.args)
    if len(specs) != len(row.args):
        raise ValueError(f"{row.id}: {len(specs)} samplers for {len(row.args)} arguments")
    values = []
    for spec, code in zip(specs, row.args):
        v = sample(spec, code, rng, n)
        if code == "u":
            v = np.abs(v)
        values.append(v)
    return values


# -- kernel generation ----------------------------------------------------------------------------

def kernel_source(row: Row, index: int) -> str:
    n_in = len(row.args)
    params = [f"a{k}: wp.array(dtype=T[{k}])" for k in range(n_in)]
    params += [f"r{j}: wp.array(dtype=T[{n_in + j}])" for j in range(len(row.out))]
    loads = [f"x{k} = a{k}[i]" for k in range(n_in)]
    stores = [f"r{j}[i] = y{j}" for j in range(len(row.out))]
    lines = ["i = wp.tid()", *loads, *row.source_body().splitlines(), *stores]
    body = "\n".join("        " + ln for ln in lines)
    return (f"def make_{index}(T, F):\n"
            f"    @wp.kernel\n"
            f"    def k_{index}({', '.join(params)}):\n{body}\n"
            f"    return k_{index}\n")


class KernelFactory:
    """Writes every row's kernel factory into one module file and builds kernels on demand."""

    def __init__(self, rows: Sequence[Row]) -> None:
        self.index = {r.id: k for k, r in enumerate(rows)}
        text = "from wpcompat import wp\n\n\n" + "\n\n".join(
            kernel_source(r, k) for k, r in enumerate(rows))
        folder = tempfile.mkdtemp(prefix="gl_builtin_table_")
        path = os.path.join(folder, "builtin_table_kernels.py")
        with open(path, "w") as fh:
            fh.write(text)
        spec = importlib.util.spec_from_file_location("builtin_table_kernels", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["builtin_table_kernels"] = module
        spec.loader.exec_module(module)
        self.module = module
        self.cache: dict[tuple[str, Any], Any] = {}

    def kernel(self, row: Row, ft: Any) -> Any:
        key = (row.id, ft)
        if key not in self.cache:
            types = [code_type(c, ft) for c in (*row.args, *row.out)]
            self.cache[key] = getattr(self.module, f"make_{self.index[row.id]}")(types, ft)
        return self.cache[key]


# -- running --------------------------------------------------------------------------------------

def make_arrays(row: Row, ft: Any, inputs: Sequence[np.ndarray], grad: bool) -> list[Any]:
    arrays = []
    n = len(inputs[0]) if inputs else N_SAMPLES
    for code, value in zip(row.args, inputs):
        t = code_type(code, ft)
        arrays.append(wp.array(np.asarray(value, dtype=np_dtype(code, ft)), dtype=t,
                               device=DEVICE, requires_grad=grad and is_float_code(code)))
    for code in row.out:
        arrays.append(wp.zeros(n, dtype=code_type(code, ft), device=DEVICE,
                               requires_grad=grad and is_float_code(code)))
    return arrays


def run_forward(factory: KernelFactory, row: Row, ft: Any,
                inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    arrays = make_arrays(row, ft, inputs, grad=False)
    n = len(inputs[0]) if inputs else N_SAMPLES
    wp.launch(factory.kernel(row, ft), dim=n, inputs=arrays, device=DEVICE)
    return [np.asarray(a.numpy(), dtype=np.float64) for a in arrays[len(row.args):]]


def objective(outs: Sequence[np.ndarray], weights: Sequence[np.ndarray]) -> np.ndarray:
    """Per-thread L_i = Σ_j w_j[i] · y_j[i]."""
    total = np.zeros(len(outs[0]))
    for o, w in zip(outs, weights):
        total += (o * w).reshape(len(o), -1).sum(axis=1)
    return total


def reverse_directional(factory: KernelFactory, row: Row, ft: Any, inputs: Sequence[np.ndarray],
                        weights: Sequence[np.ndarray], dirs: Sequence[np.ndarray | None]
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Per thread: Σ_k grad_k · d_k, and Σ_k |grad_k| · |d_k| (the scale for tolerances)."""
    arrays = make_arrays(row, ft, inputs, grad=True)
    n = len(inputs[0])
    tape = wp.Tape()
    with tape:
        wp.launch(factory.kernel(row, ft), dim=n, inputs=arrays, device=DEVICE)
    outs = arrays[len(row.args):]
    float_outs = [(o, w) for o, w, c in zip(outs, weights, row.out) if is_float_code(c)]
    seeds = {o: wp.array(np.asarray(w, dtype=np_dtype("f", ft)), dtype=o.dtype, device=DEVICE)
             for o, w in float_outs}
    tape.backward(grads=seeds)
    total, scale = np.zeros(n), np.zeros(n)
    for a, d in zip(arrays, dirs):
        if d is None:
            continue
        g = np.asarray(a.grad.numpy(), dtype=np.float64).reshape(n, -1)
        total += (g * d.reshape(n, -1)).sum(axis=1)
        scale += (np.abs(g) * np.abs(d.reshape(n, -1))).sum(axis=1)
    return total, scale


def fd_directional(factory: KernelFactory, row: Row, inputs: Sequence[np.ndarray],
                   weights: Sequence[np.ndarray], dirs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Central difference of L along d, in float64."""
    plus = [x if d is None else x + H * d for x, d in zip(inputs, dirs)]
    minus = [x if d is None else x - H * d for x, d in zip(inputs, dirs)]
    lp = objective(run_forward(factory, row, wp.float64, plus), weights)
    lm = objective(run_forward(factory, row, wp.float64, minus), weights)
    return (lp - lm) / (2.0 * H)


def random_directions(row: Row, inputs: Sequence[np.ndarray], seed: int) -> list[np.ndarray | None]:
    """A random direction per thread over all float inputs together, unit length per thread."""
    rng = np.random.default_rng(seed + 1000)
    dirs: list[np.ndarray | None] = [rng.normal(size=x.shape) if is_float_code(c) else None
                                     for x, c in zip(inputs, row.args)]
    n = len(inputs[0])
    norm = np.zeros(n)
    for d in dirs:
        if d is not None:
            norm += (d.reshape(n, -1) ** 2).sum(axis=1)
    norm = np.sqrt(np.maximum(norm, 1e-300))
    return [None if d is None else d / norm.reshape((n,) + (1,) * (d.ndim - 1)) for d in dirs]


def random_weights(row: Row, n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed + 2000)
    return [rng.uniform(0.5, 1.5, (n, *code_shape(c))) * rng.choice([-1.0, 1.0], (n, *code_shape(c)))
            for c in row.out]
