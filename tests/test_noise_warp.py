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
