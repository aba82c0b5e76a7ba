"""Python-scope value types as Warp has them: type names, the vector/matrix aliases Warp exports,
reprs, component access, and where numpy's behaviour is kept (plain arrays, `v == 0`)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import gradloom as wp

_TYPE_NAME = re.compile(r"^(vec|mat|quat|transform|spatial_)")


@pytest.fixture(scope="module")
def warp() -> Any:
    w = pytest.importorskip("warp")
    w.config.quiet = True
    w.init()
    return w


def test_every_type_alias_warp_exports_exists_with_its_name_and_layout(warp: Any) -> None:
    names = [n for n in dir(warp) if _TYPE_NAME.match(n) and isinstance(getattr(warp, n), type)]
    assert len(names) > 60
    for n in names:
        wt, gt = getattr(warp, n), getattr(wp, n, None)
        assert gt is not None, f"wp.{n} is missing"
        assert gt.__name__ == wt.__name__, n
        assert gt.dtype.name == wt._wp_scalar_type_.__name__, n
        assert gt.shape == tuple(wt._shape_), n


def test_scalar_type_names(warp: Any) -> None:
    for n in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "float32", "float64"):
        assert getattr(wp, n).__name__ == getattr(warp, n).__name__ == n


def test_reprs_as_warp_prints_them(warp: Any) -> None:
    for name, args in (("vec3f", (1.0, 2.5, -3.0)), ("quatf", (0.0, 0.0, 0.0, 1.0)),
                       ("vec3i", (1, 2, 3)), ("transformf", (1, 2, 3, 0, 0, 0, 1))):
        assert repr(getattr(wp, name)(*args)) == repr(getattr(warp, name)(*args))
        assert str(getattr(wp, name)(*args)) == str(getattr(warp, name)(*args))
    m = (1.0, 2.0, 3.0, 4.0)
    assert str(wp.mat22(*m)) == str(warp.mat22(*m)) == "[[1.0, 2.0],\n [3.0, 4.0]]"
    assert repr(wp.mat22(*m)) == "mat22f([[1.0, 2.0],\n [3.0, 4.0]])"
    # other scalar types than float32/int32 are named per component, as Warp prints them
    assert repr(wp.vec3d(1.0, 2.0, 3.0)) == repr(warp.vec3d(1.0, 2.0, 3.0)) == \
        "vec3d([float64(1.0), float64(2.0), float64(3.0)])"
    assert repr(wp.vec2ub(1, 2)) == repr(warp.vec2ub(1, 2)) == "vec2ub([uint8(1), uint8(2)])"


def test_components_rows_and_slices_have_kernel_types() -> None:
    m = wp.mat33(*range(9))
    row = m[1]
    assert row.gl_type == wp.vec3 and row.tolist() == [3.0, 4.0, 5.0]
    # float32 components are Python floats, as Warp 1.12+ returns them; other types keep theirs
    assert [r.gl_type for r in m] == [wp.vec3] * 3 and [type(c) for c in row] == [float] * 3
    row[0] = 100.0  # a copy, as a kernel's m[1] is a value
    assert m[1, 0] == 3.0 and type(m[1, 2]) is float
    # other types: Warp's scalar values (`isinstance(c, wp.float64)`), numpy scalars of the dtype
    d, h = wp.vec3d(1.0, 2.0, 3.0)[0], wp.vec3h(1, 2, 3)[2]
    assert isinstance(d, wp.float64) and isinstance(d, np.float64) and d.value == 1.0
    assert isinstance(h, wp.float16) and isinstance(h, np.float16) and h.value == 3.0
    assert not isinstance(d, wp.float32) and not isinstance(h, wp.float64)
    s16 = wp.vec2s(1, 2)[0]
    assert type(wp.vec2i(1, 2)[0]) is int and isinstance(s16, wp.int16) and s16.value == 1
    v = wp.vec4(1.0, 2.0, 3.0, 4.0)
    assert v[1:3].gl_type == wp.vec2 and v[1:3].tolist() == [2.0, 3.0]
    v.y = 7.0
    assert v.y == 7.0 and v.w == 4.0
    xf = wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat_identity())
    assert xf.p.gl_type == wp.vec3 and xf.p.tolist() == [1.0, 2.0, 3.0]
    assert xf.q.gl_type == wp.quat and xf.q.tolist() == [0.0, 0.0, 0.0, 1.0]
    with pytest.raises(AttributeError):
        _ = v.p


def test_operators_keep_value_semantics_and_numpy_for_other_operands() -> None:
    a = wp.vec3(1.0, 2.0, 3.0)
    b = a
    b += wp.vec3(1.0, 1.0, 1.0)  # rebinds b, as in a kernel and in Warp; a is unchanged
    assert a.tolist() == [1.0, 2.0, 3.0] and b.tolist() == [2.0, 3.0, 4.0]
    assert a == wp.vec3(1.0, 2.0, 3.0)
    assert (a != wp.vec3(1.0, 2.0, 3.0)) == np.False_
    assert (a == 2.0).tolist() == [False, True, False]  # against a number: numpy's, per component
    plain = a + np.array([1.0, 1.0, 1.0])  # a plain numpy array: numpy's arithmetic
    assert not hasattr(plain, "gl_type") or plain.gl_type is None
    np.testing.assert_allclose(a, [1.0, 2.0, 3.0])  # numpy's tools still work on values
    m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    m *= m  # the matrix product, as `m = m * m` in a kernel
    assert m.tolist() == [[7.0, 10.0], [15.0, 22.0]]


def test_operators_a_kernel_rejects_are_errors_here_too() -> None:
    """Warp raises for these in Python as well; numpy would silently work per component."""
    v = wp.vec3(1.0, 2.0, 3.0)
    for fn in (lambda: v < v, lambda: v ** 2.0, lambda: v // 2.0, lambda: v * v,
               lambda: v / v, lambda: v + wp.vec3d(1.0, 2.0, 3.0)):
        with pytest.raises(wp.KernelTypeError, match=r"test_host_values\.py"):
            fn()
