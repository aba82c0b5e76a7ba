"""bfloat16 end to end: storage as bits, kernel arithmetic through float32 with each
result rounded to the nearest bfloat16 (ties to even), atomics, casts, scalar arguments,
gradients and Python-scope values.

The reference rounding here is written independently of gradloom's (integer arithmetic on the
float32 bit pattern). Runs on warp-lang too: GL_TEST_BACKEND=warp (wpcompat.py).
"""

import math
import struct

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE, wp

gradloom_only = pytest.mark.skipif(BACKEND == "warp", reason="a gradloom-specific detail")


def bf16_bits(x: float) -> int:
    """The bfloat16 nearest the float32 nearest x, as 16 bits (round to nearest, ties even)."""
    (u,) = struct.unpack("<I", struct.pack("<f", np.float32(x)))
    if math.isnan(np.float32(x)):
        return (u | 0x00400000) >> 16
    upper, lower = u >> 16, u & 0xFFFF
    if lower > 0x8000 or (lower == 0x8000 and upper & 1):
        upper += 1
    return upper & 0xFFFF


def bf16(x: float) -> float:
    """The value of bf16_bits(x), as a Python float."""
    return struct.unpack("<f", struct.pack("<I", bf16_bits(x) << 16))[0]


def values(a) -> list[float]:
    """An array's elements as Python floats (bfloat16 arrays read back as their bits)."""
    return [struct.unpack("<f", struct.pack("<I", int(b) << 16))[0] for b in a.numpy().ravel()]


def test_reference_rounding_ties_to_even():
    # 1 + 2**-8 lies halfway between 1 and 1 + 2**-7: ties go to the even mantissa (1.0)
    assert bf16(1.0 + 2.0**-8) == 1.0
    assert bf16(1.0 + 3 * 2.0**-8) == 1.0 + 2 * 2.0**-7
    assert bf16(1.0 + 2.0**-8 + 2.0**-20) == 1.0 + 2.0**-7


DATA = [0.0, 1.0, -2.5, 3.14159265, 1e-3, 65504.0, 1e30, -1e-30, 1.0 + 2.0**-8, 0.1]


def test_array_storage_is_rounded_bits():
    a = wp.array(DATA, dtype=wp.bfloat16, device=DEVICE)
    assert a.numpy().dtype == np.uint16
    assert [int(b) for b in a.numpy()] == [bf16_bits(x) for x in DATA]
    assert [float(x) for x in a.list()] == [bf16(x) for x in DATA]
    assert float(wp.zeros(3, dtype=wp.bfloat16, device=DEVICE).list()[1]) == 0.0


def test_special_values_survive_storage():
    a = wp.array([math.inf, -math.inf, math.nan], dtype=wp.bfloat16, device=DEVICE)
    got = values(a)
    assert got[0] == math.inf and got[1] == -math.inf and math.isnan(got[2])


@wp.kernel
def fma_kernel(a: wp.array(dtype=wp.bfloat16), b: wp.array(dtype=wp.bfloat16),
               s: wp.bfloat16, out: wp.array(dtype=wp.bfloat16), wide: wp.array(dtype=float)):
    i = wp.tid()
    x = a[i] * b[i] + s
    out[i] = x
    wide[i] = float(x)


def test_kernel_arithmetic_rounds_each_operation():
    rng = np.random.default_rng(3)
    xa, xb = rng.normal(size=64) * 10.0, rng.normal(size=64)
    a = wp.array(xa, dtype=wp.bfloat16, device=DEVICE)
    b = wp.array(xb, dtype=wp.bfloat16, device=DEVICE)
    out = wp.zeros(64, dtype=wp.bfloat16, device=DEVICE)
    wide = wp.zeros(64, dtype=float, device=DEVICE)
    s = 0.3
    wp.launch(fma_kernel, dim=64, inputs=[a, b, wp.bfloat16(s), out, wide], device=DEVICE)
    expected = [bf16(np.float32(bf16(bf16(x) * bf16(y))) + np.float32(bf16(s)))
                for x, y in zip(xa, xb)]
    assert values(out) == expected
    assert wide.numpy().tolist() == expected


@wp.kernel
def math_kernel(a: wp.array(dtype=wp.bfloat16), out: wp.array(dtype=wp.bfloat16)):
    i = wp.tid()
    out[i] = wp.sin(a[i]) + wp.sqrt(wp.abs(a[i]))


def test_kernel_math_functions():
    xs = np.linspace(-4.0, 4.0, 33)
    a = wp.array(xs, dtype=wp.bfloat16, device=DEVICE)
    out = wp.zeros(len(xs), dtype=wp.bfloat16, device=DEVICE)
    wp.launch(math_kernel, dim=len(xs), inputs=[a, out], device=DEVICE)
    for x, got in zip(xs, values(out)):
        xr = np.float32(bf16(x))
        want = bf16(np.float32(bf16(np.sin(xr))) + np.float32(bf16(np.sqrt(abs(xr)))))
        assert abs(got - want) <= abs(want) * 2.0**-7, (x, got, want)  # one bfloat16 ulp


@wp.kernel
def cast_kernel(d: wp.array(dtype=wp.float64), i: wp.array(dtype=wp.int32),
                h: wp.array(dtype=wp.float16), out: wp.array(dtype=wp.bfloat16),
                back: wp.array(dtype=wp.float64)):
    out[0] = wp.bfloat16(d[0])
    out[1] = wp.bfloat16(i[0])
    out[2] = wp.bfloat16(h[0])
    out[3] = wp.bfloat16(2.0 / 3.0)
    back[0] = wp.float64(out[0])
    back[1] = wp.float64(wp.int32(out[1]))


def test_casts():
    d = wp.array([1.0 / 3.0], dtype=wp.float64, device=DEVICE)
    i = wp.array([1001], dtype=wp.int32, device=DEVICE)
    h = wp.array([0.333], dtype=wp.float16, device=DEVICE)
    out = wp.zeros(4, dtype=wp.bfloat16, device=DEVICE)
    back = wp.zeros(2, dtype=wp.float64, device=DEVICE)
    wp.launch(cast_kernel, dim=1, inputs=[d, i, h, out, back], device=DEVICE)
    assert values(out) == [bf16(1.0 / 3.0), bf16(1001), bf16(float(np.float16(0.333))),
                           bf16(2.0 / 3.0)]
    assert back.numpy().tolist() == [bf16(1.0 / 3.0), float(int(bf16(1001)))]


@wp.kernel
def atomics_kernel(acc: wp.array(dtype=wp.bfloat16), lo: wp.array(dtype=wp.bfloat16),
                   hi: wp.array(dtype=wp.bfloat16), old: wp.array(dtype=wp.bfloat16)):
    i = wp.tid()
    wp.atomic_add(acc, 0, wp.bfloat16(1.0))
    wp.atomic_min(lo, 0, wp.bfloat16(float(i) - 10.0))
    wp.atomic_max(hi, 0, wp.bfloat16(float(i) * 0.5))
    if i == 0:
        old[0] = wp.atomic_add(acc, 1, wp.bfloat16(2.0))


def test_atomics():
    acc = wp.array([0.0, 5.0], dtype=wp.bfloat16, device=DEVICE)
    lo = wp.zeros(1, dtype=wp.bfloat16, device=DEVICE)
    hi = wp.zeros(1, dtype=wp.bfloat16, device=DEVICE)
    old = wp.zeros(1, dtype=wp.bfloat16, device=DEVICE)
    wp.launch(atomics_kernel, dim=64, inputs=[acc, lo, hi, old], device=DEVICE)
    assert values(acc) == [64.0, 7.0]  # every partial sum up to 64 is exact in bfloat16
    assert values(lo) == [-10.0] and values(hi) == [31.5] and values(old) == [5.0]


@wp.kernel
def square_kernel(x: wp.array(dtype=wp.bfloat16), y: wp.array(dtype=wp.bfloat16)):
    i = wp.tid()
    y[i] = x[i] * x[i]


def test_gradient_through_bfloat16_arrays():
    xs = [0.5, -1.25, 3.0]
    x = wp.array(xs, dtype=wp.bfloat16, requires_grad=True, device=DEVICE)
    y = wp.zeros(3, dtype=wp.bfloat16, requires_grad=True, device=DEVICE)
    tape = wp.Tape()
    with tape:
        wp.launch(square_kernel, dim=3, inputs=[x, y], device=DEVICE)
    tape.backward(grads={y: wp.array([1.0, 1.0, 1.0], dtype=wp.bfloat16, device=DEVICE)})
    assert values(x.grad) == [2.0 * v for v in xs]  # exact: small dyadic numbers


@gradloom_only
def test_python_scope_values_are_rounded_float32():
    v = wp.bfloat16(0.1)
    assert isinstance(v, np.float32) and float(v) == bf16(0.1)
    vec3bf = wp.types.vector(3, wp.bfloat16)
    a = vec3bf(0.1, 1.0 + 2.0**-8, 3.0)
    assert [float(c) for c in a] == [bf16(0.1), 1.0, 3.0]
    s = a + vec3bf(0.1, 0.1, 0.1)
    assert [float(c) for c in s] == [bf16(np.float32(bf16(0.1)) * 2), bf16(1.0 + bf16(0.1)),
                                     bf16(3.0 + bf16(0.1))]


def test_type_attributes():
    assert wp.dtype_to_numpy(wp.bfloat16) is np.uint16
    assert not hasattr(wp.bfloat16, "__numpy_dtype__")
    assert wp.bfloat16._type_.__name__ == "c_ushort"
