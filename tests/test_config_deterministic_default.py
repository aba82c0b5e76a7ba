"""`wp.config.deterministic` holds Warp's default value, a `DeterministicMode`."""

from __future__ import annotations

import gradloom as wp


def test_deterministic_defaults_to_warps_mode_value():
    """newton's SolverSteel checks `isinstance(wp.config.deterministic, wp.DeterministicMode)`;
    Warp's default is NOT_GUARANTEED, which is false as a bool."""
    assert wp.config.deterministic is wp.DeterministicMode.NOT_GUARANTEED
    assert not wp.config.deterministic
