"""The benchmarks' correctness checks: float64 references, comparisons, example rewriting.

benchmarks/float_checks.py decides whether a peer's or an example's fast answer counts, and
benchmarks/examples_src.py decides what text of warp-lang's examples is timed; both are
checked here (no timing).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import examples_src  # noqa: E402
import float_checks  # noqa: E402
import host_data  # noqa: E402

SMALL = {"saxpy": 16, "integrate": 16, "nbody": 24, "neo_hookean": 12, "cloth": 16}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_reference_gradients_match_finite_differences(name: str) -> None:
    data = host_data.grad_data(name, SMALL[name])
    _, grads = float_checks.reference(name, data)
    rng = np.random.default_rng(1)
    for key, g in grads.items():
        assert g.shape == np.shape(data[key])
        for flat in {0, g.size - 1, *rng.integers(0, g.size, 4).tolist()}:
            fd = host_data.fd_gradient(name, data, key, int(flat))
            assert g.reshape(-1)[flat] == pytest.approx(fd, rel=1e-6, abs=1e-7), (key, flat)


def test_reference_outputs_match_direct_float64() -> None:
    d = host_data.grad_data("nbody", 10)
    acc = float_checks.reference("nbody", d)[0]["acc"]
    pos, m = d["pos"].astype(np.float64), d["mass"].astype(np.float64)
    for i in (0, 9):
        want = sum(m[j] * (pos[j] - pos[i]) / (np.sum((pos[j] - pos[i]) ** 2) + d["eps2"]) ** 1.5
                   for j in range(10))  # fmt: skip
        np.testing.assert_allclose(acc[i], want, rtol=1e-12)
    c = host_data.grad_data("cloth", 16)
    x_out = float_checks.reference("cloth", c)[0]["x_out"]
    np.testing.assert_allclose(x_out, host_data.cloth_step64(c), rtol=1e-12)
    n = host_data.grad_data("neo_hookean", 12)
    energy = float_checks.reference("neo_hookean", n)[0]["energy"]
    want = sum(host_data.loss_part("neo_hookean", n, k) for k in range(12))
    assert energy[0] == pytest.approx(want, rel=1e-12)


def test_rel_error_and_compare_flag_wrong_states() -> None:
    ref = {"a": np.array([1.0, -2.0, 4.0]), "b": np.zeros(2)}
    assert float_checks.compare({"a": ref["a"] * (1 + 5e-4), "b": np.zeros(2)}, ref)["ok"]
    bad = float_checks.compare({"a": ref["a"] + [0, 0, 0.01], "b": np.zeros(2)}, ref)
    assert not bad["ok"] and bad["worst"] == "a" and bad["error"] == pytest.approx(0.0025)
    assert not float_checks.compare({"a": ref["a"]}, ref)["ok"]  # b missing
    assert float_checks.rel_error(np.ones(3), np.ones(2)) == float("inf")
    assert float_checks.rel_error(np.array([np.nan]), np.array([1.0])) == float("inf")


def test_elementwise_ok_catches_one_bad_element() -> None:
    ref = np.linspace(1.0, 100.0, 1000)
    assert float_checks.elementwise_ok(ref.astype(np.float32), ref)[0]
    wrong = ref.copy()
    wrong[500] *= 1.01  # 1% off at one element: beyond 1e-3 relative + 1e-4 of the max
    ok, excess = float_checks.elementwise_ok(wrong, ref)
    assert not ok and excess > 1.0
    assert not float_checks.elementwise_ok(np.full(1000, np.inf), ref)[0]


def test_bind_rewrites_only_the_import_line() -> None:
    src = "import math\n\nimport warp as wp\nimport warp.render\n\nwp.clear_kernel_cache()\nx = 1\n"
    out = examples_src.bind(src, "gradloom", "ex.py")
    assert "import gradloom as wp" in out and "import warp" not in out
    assert "clear_kernel_cache" not in out and "x = 1" in out and "import math" in out
    with pytest.raises(examples_src.ExampleChanged, match=r"ex.py:2"):
        examples_src.bind("import warp as wp\nfrom warp.sim import Model\n", "gradloom", "ex.py")
    with pytest.raises(examples_src.ExampleChanged, match="exactly one"):
        examples_src.bind("import numpy\n", "gradloom", "ex.py")


@pytest.mark.skipif(importlib.util.find_spec("warp") is None, reason="warp-lang not installed")
def test_bind_accepts_the_installed_examples() -> None:
    for rel in examples_src.FILES.values():
        path = examples_src.examples_dir() / rel
        out = examples_src.bind(path.read_text(), "gradloom", str(path))
        assert "import gradloom as wp" in out
        compile(out, str(path), "exec")
