"""A function's source lines as the frontend reads them (found by indentation, inspect's way
as the fallback) and the declaration-time `wp.static` scan: each case against
inspect.getsourcelines or the kernel's result."""

from __future__ import annotations

import importlib.util
import inspect
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gradloom as wp
from gradloom.frontend.source import parse_function

MODULE = '''
import functools
import gradloom as wp

SCALE = 3.0
S = wp.static


def plain(a: float,
          b: float,
) -> float:
    return a + b  # trailing comment
    # indented comment after the body


@functools.lru_cache(
    maxsize=None,
)
def decorated(x: float) -> float:
    y = (x +
1.0)
    return y


def margin_string() -> str:
    text = """first
second line at the margin
"""
    return text


def outer():
    def inner(v: float) -> float:
        return v * 2.0
    return inner


def wrapper_of(fn):
    @functools.wraps(fn)
    def wrapped(*args):
        return fn(*args)
    return wrapped


def original(q: float) -> float:
    return q - 1.0


wrapped_original = wrapper_of(original)


@wp.kernel
def aliased_static(out: wp.array(dtype=float)):
    out[0] = S(SCALE * 2.0)
'''


@pytest.fixture(scope="module")
def user_module(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = Path(tmp_path_factory.mktemp("src")) / "source_lines_user.py"
    path.write_text(textwrap.dedent(MODULE))
    spec = importlib.util.spec_from_file_location("source_lines_user", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["source_lines_user"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("source_lines_user", None)


def _code_lines(lines: list[str]) -> list[str]:
    """Lines without the trailing blank and comment-only ones (inspect keeps indented
    trailing comments; they change nothing a kernel computes)."""
    out = list(lines)
    while out and (not out[-1].strip() or out[-1].strip().startswith("#")):
        out.pop()
    return out


@pytest.mark.parametrize("name", ["plain", "decorated", "margin_string", "original"])
def test_lines_match_inspect(user_module: Any, name: str) -> None:
    fn = getattr(user_module, name)
    fn = getattr(fn, "__wrapped__", fn)
    info = parse_function(fn)
    expected, first = inspect.getsourcelines(fn)
    assert info.first_line == first
    assert info.text.strip() == textwrap.dedent("".join(_code_lines(expected))).strip()
    assert info.tree.name == name


def test_nested_function_lines(user_module: Any) -> None:
    inner = user_module.outer()
    info = parse_function(inner)
    expected, first = inspect.getsourcelines(inner)
    assert (info.first_line, info.tree.name) == (first, "inner")
    assert info.text.strip() == textwrap.dedent("".join(expected)).strip()


def test_wrapped_function_reads_the_original(user_module: Any) -> None:
    """functools.wraps: the source is the wrapped function's, as inspect gives it."""
    info = parse_function(user_module.wrapped_original)
    assert info.tree.name == "original"


def test_static_under_another_name_is_evaluated_at_declaration(user_module: Any) -> None:
    kernel = user_module.aliased_static
    assert list(kernel.info.statics.values()) == [6.0]
    out = wp.zeros(1, dtype=float)
    wp.launch(kernel, dim=1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [6.0])
