"""wp.print_diagnostics(): the dict it returns and what it prints."""

import contextlib
import io
import sys

import numpy as np

import gradloom as wp


def test_print_diagnostics():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        info = wp.print_diagnostics()
    text = out.getvalue().splitlines()
    assert text[0] == "Software"
    assert info["numpy"] == np.__version__
    assert info["python"] == sys.version.split()[0]
    assert [d["alias"] for d in info["devices"]][:1] == ["cpu"]
    assert info["cuda_enabled"] is wp.is_cuda_available()
    assert info["llvm"].count(".") == 2
    for key in ("debug", "verify_fp", "fast_math", "cubql_enabled", "mathdx_enabled"):
        assert isinstance(info[key], bool)
    assert any(line.strip().startswith("cpu") or "alias: cpu" in line for line in text)


def test_debug_flag_follows_config():
    old = wp.config.mode
    try:
        wp.config.mode = "debug"
        with contextlib.redirect_stdout(io.StringIO()):
            assert wp.print_diagnostics()["debug"] is True
    finally:
        wp.config.mode = old
