"""Casts to and from float16 (a float64 -> float16 cast once aborted the process)."""

import numpy as np
from wpcompat import DEVICE, wp


@wp.kernel
def half_casts(x: wp.array(dtype=wp.float64), i: wp.array(dtype=wp.int64),
               u: wp.array(dtype=wp.uint64), h: wp.array(dtype=wp.float16),
               to_half: wp.array(dtype=wp.float16), back: wp.array(dtype=wp.float64),
               back_int: wp.array(dtype=wp.int64)):
    t = wp.tid()
    to_half[3 * t] = wp.float16(x[t])
    to_half[3 * t + 1] = wp.float16(i[t])
    to_half[3 * t + 2] = wp.float16(u[t])
    back[t] = wp.float64(h[t])
    back_int[t] = wp.int64(h[t])


def test_float16_casts_from_and_to_wide_types():
    x = np.array([1.5, -2.25, 65504.0, 1.0 / 3.0])
    i = np.array([3, -7, 2048, -1], dtype=np.int64)
    u = np.array([5, 9, 1024, 0], dtype=np.uint64)
    h = np.array([0.5, -3.0, 1000.0, -0.25], dtype=np.float16)
    out = wp.zeros(12, dtype=wp.float16, device=DEVICE)
    back = wp.zeros(4, dtype=wp.float64, device=DEVICE)
    back_int = wp.zeros(4, dtype=wp.int64, device=DEVICE)
    arrays = [wp.array(x, dtype=wp.float64, device=DEVICE),
              wp.array(i, dtype=wp.int64, device=DEVICE),
              wp.array(u, dtype=wp.uint64, device=DEVICE),
              wp.array(h, dtype=wp.float16, device=DEVICE), out, back, back_int]
    wp.launch(half_casts, dim=4, inputs=arrays, device=DEVICE)
    expected = np.stack([x.astype(np.float16), i.astype(np.float16), u.astype(np.float16)], 1)
    np.testing.assert_array_equal(out.numpy(), expected.ravel())
    np.testing.assert_array_equal(back.numpy(), h.astype(np.float64))
    np.testing.assert_array_equal(back_int.numpy(), h.astype(np.int64))
