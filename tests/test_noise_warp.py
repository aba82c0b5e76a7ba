"""wp.noise / pnoise / curlnoise give warp-lang 1.19's values (and position gradients).

Two references: the stored table tests/data/noise_warp_1_19.json (warp-lang 1.19's CPU outputs,
made by `python tests/noise_warp_eval.py warp --table ...`), checked everywhere, and warp-lang
itself, run in a subprocess over thousands of random states and points when it is installed.

Tolerances, in float32 ulps of max(1, |warp's value|): gradloom's LLVM fuses a*b + c into one
fused multiply-add where Warp's CPU build rounds twice, so values agree to float32 rounding, not
bit for bit (measured over 20,000 inputs: at most 13 ulps for noise, 38 for curlnoise).
Gradients are gradloom's reverse mode through the same arithmetic against Warp's hand-written
adjoints, which round differently (measured over 3,000 inputs: 70 ulps for noise, 180 for
curlnoise, whose gradient sums second derivatives over octaves).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from wpcompat import BACKEND

if BACKEND != "gradloom":
    pytest.skip("compares gradloom with warp-lang's values", allow_module_level=True)

import noise_warp_eval as ev

import gradloom as wp

TESTS = Path(__file__).resolve().parent
TABLE = TESTS / "data" / "noise_warp_1_19.json"
EPS = float(np.finfo(np.float32).eps)
#: |gradloom - warp| <= ulps * eps * max(1, |warp|), per output
ULPS = {"noise": 32, "curl": 96, "curl_default": 96, "curl_literal": 96, "noise_grad": 256,
        "curl_grad": 1024}


def assert_close(name: str, got: np.ndarray, want: np.ndarray, inputs: dict[str, np.ndarray]
                 ) -> None:
    err = np.abs(got.astype(np.float64) - want) / np.maximum(1.0, np.abs(want)) / EPS
    bad = np.argwhere(~(err <= ULPS[name]))
    if len(bad):
        i, col = bad[0]
        raise AssertionError(
            f"{name}: {len(bad)} values differ from warp-lang by more than {ULPS[name]} ulps; "
            f"first: row {i} column {col}: {got[i, col]!r} != {want[i, col]!r} (state "
            f"{inputs['seeds'][i]}, point {inputs['p'][i].tolist()})")


@pytest.fixture(scope="module")
def table() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    return ev.load_table(str(TABLE))


@pytest.mark.parametrize("name", ev.OUTPUTS)
def test_values_match_the_stored_warp_table(table, name: str) -> None:
    inputs, want = table
    got = ev.evaluate(inputs)
    assert got[name].shape == want[name].shape
    assert np.abs(want[name]).max() > 0.1  # the table holds real values
    assert_close(name, got[name], want[name], inputs)


@wp.kernel
def curl_unrolled_kernel(seeds: wp.array(dtype=wp.uint32), p: wp.array(dtype=wp.vec4),
                         out: wp.array2d(dtype=float)):
    # literal octave counts: gradloom unrolls the octaves (Warp only takes a uint32 count)
    i = wp.tid()
    s = seeds[i]
    q = p[i]
    a = wp.curlnoise(s, wp.vec2(q[0], q[1]), 3, 1.5, 0.4)
    b = wp.curlnoise(s, wp.vec3(q[0], q[1], q[2]), 3, 1.5, 0.4)
    c = wp.curlnoise(s, q, 2, 2.5, 0.7)
    out[i, 0] = a[0]
    out[i, 1] = a[1]
    for k in range(3):
        out[i, 2 + k] = b[k]
        out[i, 5 + k] = c[k]


def test_unrolled_octaves_match_the_stored_warp_table(table) -> None:
    inputs, want = table
    n = len(inputs["seeds"])
    out = wp.zeros((n, 8), dtype=float)
    wp.launch(curl_unrolled_kernel, n, inputs=[wp.array(inputs["seeds"], dtype=wp.uint32),
                                                wp.array(inputs["p"], dtype=wp.vec4), out])
    assert_close("curl_literal", out.numpy(), want["curl_literal"], inputs)


@pytest.mark.skipif(importlib.util.find_spec("warp") is None, reason="warp-lang not installed")
def test_values_match_warp_lang_over_many_inputs(tmp_path: Path) -> None:
    inputs = ev.make_inputs(3000, seed=7)
    np.savez(tmp_path / "in.npz", **inputs)
    proc = subprocess.run([sys.executable, str(TESTS / "noise_warp_eval.py"), "warp",
                           str(tmp_path / "in.npz"), str(tmp_path / "out.npz")],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = ev.evaluate(inputs)
    with np.load(tmp_path / "out.npz") as want:
        for name in ev.OUTPUTS:
            assert_close(name, got[name], want[name], inputs)


# -- the golden images of Warp's own tests/test_noise.py (data files in the warp-lang wheel) ----

def _warp_assets() -> Path | None:
    spec = importlib.util.find_spec("warp")
    if spec is None or spec.origin is None:
        return None
    assets = Path(spec.origin).parent / "tests" / "assets"
    return assets if (assets / "pnoise_golden.npy").exists() else None


needs_assets = pytest.mark.skipif(_warp_assets() is None, reason="warp-lang's test assets absent")


@wp.kernel
def golden_pnoise(seed: int, width: int, px: int, py: int, pixels: wp.array(dtype=float)):
    tid = wp.tid()
    state = wp.rand_init(seed)
    x = (float(tid % width) + 0.5) * 0.2
    y = (float(tid / width) + 0.5) * 0.2
    n = wp.pnoise(state, wp.vec2(x, y), px, py)
    pixels[tid] = ((n + 1.0) / 2.0) * 255.0


@wp.kernel
def golden_curlnoise(seed: int, width: int, coords: wp.array(dtype=wp.vec2),
                     arrows: wp.array(dtype=wp.vec2)):
    tid = wp.tid()
    state = wp.rand_init(seed)
    p = wp.vec2((float(tid % width) + 0.5) * 0.2, (float(tid / width) + 0.5) * 0.2)
    coords[tid] = p
    arrows[tid] = wp.curlnoise(state, p)


@needs_assets
def test_pnoise_matches_warps_golden_image() -> None:
    n = 256
    pixels = wp.zeros(n * n, dtype=float)
    wp.launch(golden_pnoise, n * n, inputs=[42, n, 16, 16, pixels])
    golden = np.load(_warp_assets() / "pnoise_golden.npy")
    assert np.abs(pixels.numpy().reshape(n, n) - golden).max() < 1.5e-3  # Warp's tolerance


@needs_assets
def test_curlnoise_matches_warps_golden_field() -> None:
    n = 128
    coords, arrows = wp.zeros(n * n, dtype=wp.vec2), wp.zeros(n * n, dtype=wp.vec2)
    wp.launch(golden_curlnoise, n * n, inputs=[42, n, coords, arrows])
    uv = arrows.numpy()
    uv = uv / np.sqrt(np.max(np.sum(uv * uv, axis=1)))
    golden = np.load(_warp_assets() / "curlnoise_golden.npy")
    assert np.abs(np.stack((coords.numpy(), uv)) - golden).max() < 1e-4  # Warp's tolerance
