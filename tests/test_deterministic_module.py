"""Deterministic mode per module (`module_options={"deterministic": wp.DeterministicMode...}`):
float atomics add in thread order (the serial sum, bit for bit), whatever the thread count."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp


@wp.kernel(module="unique", module_options={"deterministic": wp.DeterministicMode.RUN_TO_RUN})
def _binned_sum(data: wp.array(dtype=wp.float32), out: wp.array(dtype=wp.float32)):
    tid = wp.tid()
    wp.atomic_add(out, tid % 4, data[tid])


def _serial_sums(data: np.ndarray) -> np.ndarray:
    out = np.zeros(4, np.float32)
    for i, v in enumerate(data):
        out[i % 4] = np.float32(out[i % 4] + v)  # float32 additions in thread order
    return out


def test_module_option_gives_thread_order_sums(monkeypatch):
    monkeypatch.setattr(wp.config, "num_threads", 2)
    assert not wp.config.deterministic  # the module's option alone asks for it
    rng = np.random.default_rng(22)
    data = (rng.random(300_000, dtype=np.float32) * 1000).astype(np.float32)
    expected = _serial_sums(data)
    for _ in range(3):
        out = wp.zeros(4, dtype=wp.float32)
        wp.launch(_binned_sum, len(data), inputs=[wp.array(data), out])
        np.testing.assert_array_equal(out.numpy(), expected)


def test_new_modules_take_the_config_and_bad_values_are_refused(monkeypatch):
    monkeypatch.setattr(wp.config, "deterministic", wp.DeterministicMode.GPU_TO_GPU)
    monkeypatch.setattr(wp.config, "deterministic_max_records", 7, raising=False)
    module = wp.get_module("gradloom_test_fresh_deterministic_module")
    assert module.options["deterministic"] == wp.DeterministicMode.GPU_TO_GPU
    assert module.options["deterministic_max_records"] == 7
    with pytest.raises(ValueError, match="DeterministicMode"):
        wp.set_module_options({"deterministic": "run_to_run"}, module=module)
