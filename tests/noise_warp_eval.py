"""wp.noise / pnoise / curlnoise (values and position gradients) over given inputs, evaluated by
gradloom (when imported) or by warp-lang (when run as a script), for tests/test_noise_warp.py.

    python tests/noise_warp_eval.py warp IN.npz OUT.npz      # evaluate with warp-lang
    python tests/noise_warp_eval.py warp --table PATH.json   # regenerate the stored table

The stored table (tests/data/noise_warp_1_19.json) holds warp-lang 1.19's CPU values for a few
inputs, so the comparison also runs where warp-lang is not installed.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

BACKEND = sys.argv[1] if __name__ == "__main__" else "gradloom"
if BACKEND == "warp":
    import warp as wp

    wp.config.quiet = True
else:
    import gradloom as wp

DEVICE = "cpu"
#: values and gradients produced per input row; each an (n, 8) float32 array
OUTPUTS = ("noise", "curl", "curl_default", "curl_literal", "noise_grad", "curl_grad")


@wp.kernel
def noise_kernel(seeds: wp.array(dtype=wp.uint32), p: wp.array(dtype=wp.vec4),
                 per: wp.array(dtype=wp.vec4i), out: wp.array2d(dtype=float)):
    i = wp.tid()
    s = seeds[i]
    q = p[i]
    c = per[i]
    out[i, 0] = wp.noise(s, q[0])
    out[i, 1] = wp.noise(s, wp.vec2(q[0], q[1]))
    out[i, 2] = wp.noise(s, wp.vec3(q[0], q[1], q[2]))
    out[i, 3] = wp.noise(s, q)
    out[i, 4] = wp.pnoise(s, q[0], c[0])
    out[i, 5] = wp.pnoise(s, wp.vec2(q[0], q[1]), c[0], c[1])
    out[i, 6] = wp.pnoise(s, wp.vec3(q[0], q[1], q[2]), c[0], c[1], c[2])
    out[i, 7] = wp.pnoise(s, q, c[0], c[1], c[2], c[3])


@wp.kernel
def noise_sum_kernel(seeds: wp.array(dtype=wp.uint32), p: wp.array(dtype=wp.vec4),
                     per: wp.array(dtype=wp.vec4i), out: wp.array(dtype=float)):
    # weights tell the dimensions apart in the gradient
    i = wp.tid()
    s = seeds[i]
    q = p[i]
    c = per[i]
    v = wp.noise(s, q[0]) + 2.0 * wp.noise(s, wp.vec2(q[1], q[2]))
    v += 3.0 * wp.noise(s, wp.vec3(q[0], q[2], q[3])) + 0.5 * wp.noise(s, q)
    v += 0.25 * wp.pnoise(s, wp.vec3(q[3], q[1], q[0]), c[0], c[1], c[2])
    out[i] = v


@wp.kernel
def curl_kernel(seeds: wp.array(dtype=wp.uint32), p: wp.array(dtype=wp.vec4),
                octaves: wp.array(dtype=wp.uint32), lg: wp.array(dtype=wp.vec2),
                out: wp.array2d(dtype=float)):
    i = wp.tid()
    s = seeds[i]
    q = p[i]
    a = wp.curlnoise(s, wp.vec2(q[0], q[1]), octaves[i], lg[i][0], lg[i][1])
    b = wp.curlnoise(s, wp.vec3(q[0], q[1], q[2]), octaves[i], lg[i][0], lg[i][1])
    c = wp.curlnoise(s, q, octaves[i], lg[i][0], lg[i][1])
    out[i, 0] = a[0]
    out[i, 1] = a[1]
    for k in range(3):
        out[i, 2 + k] = b[k]
        out[i, 5 + k] = c[k]


@wp.kernel
def curl_default_kernel(seeds: wp.array(dtype=wp.uint32), p: wp.array(dtype=wp.vec4),
                        out: wp.array2d(dtype=float)):
    i = wp.tid()
    s = seeds[i]
    q = p[i]
    a = wp.curlnoise(s, wp.vec2(q[0], q[1]))
    b = wp.curlnoise(s, wp.vec3(q[0], q[1], q[2]))
    c = wp.curlnoise(s, q)
    out[i, 0] = a[0]
    out[i, 1] = a[1]
    for k in range(3):
        out[i, 2 + k] = b[k]
        out[i, 5 + k] = c[k]


@wp.kernel
def curl_literal_kernel(seeds: wp.array(dtype=wp.uint32), p: wp.array(dtype=wp.vec4),
                        out: wp.array2d(dtype=float)):
    i = wp.tid()
    s = seeds[i]
    q = p[i]
    # Warp needs a uint32 octave count (gradloom also takes a literal: tests/test_noise_warp.py)
    a = wp.curlnoise(s, wp.vec2(q[0], q[1]), wp.uint32(3), 1.5, 0.4)
    b = wp.curlnoise(s, wp.vec3(q[0], q[1], q[2]), wp.uint32(3), 1.5, 0.4)
    c = wp.curlnoise(s, q, wp.uint32(2), 2.5, 0.7)
    out[i, 0] = a[0]
    out[i, 1] = a[1]
    for k in range(3):
        out[i, 2 + k] = b[k]
        out[i, 5 + k] = c[k]


@wp.kernel
def curl_sum_kernel(seeds: wp.array(dtype=wp.uint32), p: wp.array(dtype=wp.vec4),
                    out: wp.array(dtype=float)):
    i = wp.tid()
    s = seeds[i]
    q = p[i]
    a = wp.curlnoise(s, wp.vec2(q[2], q[0]), wp.uint32(2), 2.0, 0.5)
    b = wp.curlnoise(s, wp.vec3(q[0], q[1], q[3]), wp.uint32(2), 2.0, 0.5)
    c = wp.curlnoise(s, q)
    out[i] = a[0] - 2.0 * a[1] + b[0] + 0.5 * b[1] - b[2] + 0.3 * c[0] + c[1] + 0.7 * c[2]


def make_inputs(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Random states (a quarter of them small), points at scales 1 to 1000 on both sides of
    zero, periods 1..11, octave counts 0..5, lacunarity and gain."""
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    seeds[: n // 4] = rng.integers(0, 100, n // 4)
    scale = rng.choice([1.0, 10.0, 100.0, 1000.0], (n, 1))
    return {
        "seeds": seeds,
        "p": (rng.uniform(-1, 1, (n, 4)) * scale).astype(np.float32),
        "periods": rng.integers(1, 12, (n, 4)).astype(np.int32),
        "octaves": rng.integers(0, 6, n).astype(np.uint32),
        "lg": np.stack([rng.uniform(0.5, 3.0, n), rng.uniform(0.1, 0.9, n)],
                       axis=1).astype(np.float32),
    }


def _gradient(kernel: Any, args: list[Any], p: np.ndarray) -> np.ndarray:
    """d(out[i]) / d(p[i]) for a kernel writing one float per thread."""
    n = len(p)
    pa = wp.array(p, dtype=wp.vec4, device=DEVICE, requires_grad=True)
    out = wp.zeros(n, dtype=float, device=DEVICE, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, n, inputs=[args[0], pa, *args[1:], out], device=DEVICE)
    tape.backward(grads={out: wp.array(np.ones(n, dtype=np.float32), dtype=float,
                                       device=DEVICE)})
    g = np.zeros((n, 8), dtype=np.float32)
    g[:, :4] = pa.grad.numpy()
    return g


def evaluate(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every output of OUTPUTS for the inputs of make_inputs."""
    n = len(inputs["seeds"])
    s = wp.array(inputs["seeds"], dtype=wp.uint32, device=DEVICE)
    p = wp.array(inputs["p"], dtype=wp.vec4, device=DEVICE)
    per = wp.array(inputs["periods"], dtype=wp.vec4i, device=DEVICE)
    out = {name: wp.zeros((n, 8), dtype=float, device=DEVICE) for name in OUTPUTS[:4]}
    wp.launch(noise_kernel, n, inputs=[s, p, per, out["noise"]], device=DEVICE)
    wp.launch(curl_kernel, n, inputs=[
        s, p, wp.array(inputs["octaves"], dtype=wp.uint32, device=DEVICE),
        wp.array(inputs["lg"], dtype=wp.vec2, device=DEVICE), out["curl"]], device=DEVICE)
    wp.launch(curl_default_kernel, n, inputs=[s, p, out["curl_default"]], device=DEVICE)
    wp.launch(curl_literal_kernel, n, inputs=[s, p, out["curl_literal"]], device=DEVICE)
    result = {name: a.numpy() for name, a in out.items()}
    result["noise_grad"] = _gradient(noise_sum_kernel, [s, per], inputs["p"])
    result["curl_grad"] = _gradient(curl_sum_kernel, [s], inputs["p"])
    return result


def _write_table(path: str, n: int = 48) -> None:
    inputs = make_inputs(n, seed=1)
    outputs = evaluate(inputs)
    table = {
        "generator": "python tests/noise_warp_eval.py warp --table " + path,
        "warp": wp.__version__,
        "inputs": {k: v.tolist() for k, v in inputs.items()},
        "outputs": {k: [[float(x) for x in row] for row in v] for k, v in outputs.items()},
    }
    with open(path, "w") as f:  # one input or output row per line
        f.write(json.dumps({k: v for k, v in table.items() if k in ("generator", "warp")})[:-1])
        for part in ("inputs", "outputs"):
            f.write(f',\n"{part}": {{')
            for j, (name, rows) in enumerate(table[part].items()):
                lines = ",\n".join(_json_row(r) for r in rows)
                f.write(f'{"," if j else ""}\n"{name}": [\n{lines}]')
            f.write("}")
        f.write("}\n")


def _json_row(r: Any) -> str:
    """A row in JSON, float32 values as their shortest round-tripping decimals."""
    if isinstance(r, list):
        return "[" + ", ".join(_json_row(x) for x in r) + "]"
    return str(np.float32(r)) if isinstance(r, float) else json.dumps(r)


def load_table(path: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The stored inputs (with their dtypes) and warp-lang's outputs."""
    with open(path) as f:
        table = json.load(f)
    dtypes = {"seeds": np.uint32, "p": np.float32, "periods": np.int32, "octaves": np.uint32,
              "lg": np.float32}
    inputs = {k: np.array(v, dtype=dtypes[k]) for k, v in table["inputs"].items()}
    outputs = {k: np.array(v, dtype=np.float32) for k, v in table["outputs"].items()}
    return inputs, outputs


if __name__ == "__main__":
    if sys.argv[2] == "--table":
        _write_table(sys.argv[3])
    else:
        with np.load(sys.argv[2]) as f:
            given = {k: f[k] for k in f.files}
        np.savez(sys.argv[3], **evaluate(given))
