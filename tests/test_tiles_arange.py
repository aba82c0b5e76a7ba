"""tile_arange's bounds: counted where the tile's type overflows, integer bounds rounded once
into float tiles, bounds the type cannot hold refused with Warp's words; a shape given by a
local bound to a constant."""

from pathlib import Path

import numpy as np
import pytest

import gradloom as wp

I64_START = wp.constant(wp.int64(2**54))
I64_STOP = wp.constant(wp.int64(2**54 + 3 * 2**30 - 1))
I64_STEP = wp.constant(wp.int64(2**31))


@wp.kernel(enable_backward=False, module="unique")
def span_k(out: wp.array(dtype=wp.float32)):
    wp.tile_store(out, wp.tile_arange(-3.0e38, 3.0e38, 3.0e38, dtype=wp.float32))


@wp.kernel(enable_backward=False, module="unique")
def rounded_once_k(out: wp.array(dtype=wp.float32)):
    wp.tile_store(out, wp.tile_arange(I64_START, I64_STOP, I64_STEP, dtype=wp.float32))


@wp.kernel(enable_backward=False, module="unique")
def local_shape_k(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    n = 3
    wp.tile_store(b, wp.tile_load(a, shape=n))


@wp.kernel(enable_backward=False, module="unique")
def local_bound_reused_k(values: wp.array(dtype=wp.float32), count: wp.array(dtype=wp.int32)):
    stop = 3
    step = 2
    wp.tile_store(values, wp.tile_arange(stop, dtype=wp.float32))  # stop passed to a call ...
    sliced = wp.vec4f(4.0, 5.0, 6.0, 7.0)[0:stop]  # ... is still a constant slice bound
    every_other = wp.vec4f(4.0, 5.0, 6.0, 7.0)[0:4:step]
    count[0] = stop
    count[1] = wp.int32(sliced[2])
    count[2] = wp.int32(every_other[1])
    count[3] = wp.int32(sliced.length)


def test_a_span_past_float32_is_counted_in_double() -> None:
    out = wp.full(3, -1.0, dtype=wp.float32)
    wp.launch_tiled(span_k, dim=[1], inputs=[out], block_dim=1)
    np.testing.assert_array_equal(out.numpy(), np.array([-3.0e38, 0.0, -1.0], np.float32))


def test_integer_bounds_round_once_into_float32() -> None:
    # 2**54 + 3 * 2**30 - 1 is 2**54 + 2**31 in float32 (the nearest); through a double it
    # would tie to 2**54 + 2**32 and the range would hold two elements
    out = wp.full(3, -1.0, dtype=wp.float32)
    wp.launch_tiled(rounded_once_k, dim=[1], inputs=[out], block_dim=1)
    np.testing.assert_array_equal(out.numpy(), np.array([2.0**54, -1.0, -1.0], np.float32))


@pytest.mark.parametrize("args,dtype,words", [
    ((0, 2**40), "int32", "stop=1099511627776 is out of range"),
    ((0.0, 3.5), "int32", "stop=3.5 has a fractional part"),
    ((0.0, 1.0e300), "float32", r"stop=1e\+300 is out of range"),
    ((0.0, 1.0, 5.0e-324), "float64", "spans more elements than can be counted"),
    ((0, 2**70, 2**64), "float32", r"tile_arange\(\) stop=1180591620717411303424 is too wide"),
])
def test_bounds_the_type_cannot_hold_are_refused(args: tuple, dtype: str, words: str,
                                                 tmp_path: Path) -> None:
    src = ("import gradloom as wp\n\n"
           "def k(out: wp.array(dtype=float)):\n"
           f"    t = wp.tile_arange({', '.join(repr(a) for a in args)}, dtype=wp.{dtype})\n")
    path = tmp_path / "arange_kernel.py"
    path.write_text(src)  # kernels are read from their file
    ns: dict = {}
    exec(compile(src, str(path), "exec"), ns)
    kern = wp.Kernel(ns["k"], key=f"arange_{dtype}_{len(args)}", module="unique")
    with pytest.raises((RuntimeError, ValueError), match=words):
        wp.launch_tiled(kern, dim=[1], inputs=[wp.zeros(1, dtype=float)], block_dim=1)


def test_a_local_constant_gives_a_shape() -> None:
    a = wp.array(np.array([7.0, 8.0, 9.0, 10.0], np.float32))
    b = wp.zeros(4, dtype=float)
    wp.launch_tiled(local_shape_k, dim=[1], inputs=[a, b], block_dim=1)
    np.testing.assert_array_equal(b.numpy(), [7.0, 8.0, 9.0, 0.0])


def test_a_local_constant_passed_to_tile_arange_stays_a_slice_bound() -> None:
    # warp-lang's tile.test_tile_construction test_tile_arange_local_constant_reuse failed with
    # "Slice component must be a compile-time constant integer": `stop` became a Var once
    # passed to a call
    values, count = wp.zeros(3, dtype=wp.float32), wp.zeros(4, dtype=wp.int32)
    wp.launch_tiled(local_bound_reused_k, dim=[1], inputs=[values, count], block_dim=1)
    np.testing.assert_array_equal(values.numpy(), np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(count.numpy(), [3, 6, 6, 3])


def test_tile_arange_without_arguments_is_refused_clearly() -> None:
    # defined here, not at module level: tests/ptx_check.py compiles a module's kernels
    @wp.kernel(enable_backward=False, module="unique")
    def no_bounds_k(out: wp.array(dtype=wp.float32)):
        wp.tile_store(out, wp.tile_arange())

    with pytest.raises(wp.KernelTypeError, match=r"tile_arange\(\) needs at least its stop"):
        wp.launch_tiled(no_bounds_k, dim=1, inputs=[wp.zeros(4, dtype=wp.float32)],
                        block_dim=1)
