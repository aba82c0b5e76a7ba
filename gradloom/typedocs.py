"""Docstrings for the public type objects (wp.vec3, wp.mat33, wp.quat, wp.float32, ...), so that
help() on one explains how to use it rather than showing its class's internals."""

from __future__ import annotations

import textwrap
from typing import Any

from .types import MatrixType, ScalarType, VectorType

_VECTOR_KINDS = {
    "vec": "a vector of {n} {dt} components, v[0] .. v[{last}]{names}",
    "quat": "a quaternion of {dt} components (x, y, z, w), w the real part; "
            "wp.quat_identity() is (0, 0, 0, 1)",
    "transform": "a rigid transform of {dt}: a translation p (3 components) then a rotation q "
                 "(a quaternion, 4 components); wp.transform(p, q) builds one",
    "spatial": "a spatial vector of 6 {dt} components (wp.spatial_top(v) is the first three, "
               "wp.spatial_bottom(v) the last three)",
}

_USE = ("Use it as a kernel annotation (x: {name}), as an array dtype "
        "(wp.zeros(n, dtype={name})), or call it to make a value, in Python or in kernels: "
        "{name}({example}).")


def _wrap(text: str) -> str:
    return "\n\n".join(textwrap.fill(p, 88) for p in text.split("\n\n"))


def _vector_doc(t: VectorType) -> str:
    names = f" (also v.{', v.'.join('xyzw'[:t.length])})" if t.length <= 4 else ""
    what = _VECTOR_KINDS[t.kind].format(n=t.length, dt=t.dtype.name, last=t.length - 1,
                                        names=names)
    one = "1.0" if t.dtype.is_float else "1"
    example = ", ".join([one] * t.length) if t.kind != "transform" else "p, q"
    return _wrap(f"wp.{t!r}: {what}.\n\n" + _USE.format(name=f"wp.{t!r}", example=example))


def _matrix_doc(t: MatrixType) -> str:
    what = (f"a {t.rows}x{t.cols} matrix of {t.dtype.name}, stored row-major; m[i] is row i, "
            "m[i, j] one entry" if t.kind == "mat"
            else f"a 6x6 spatial matrix of {t.dtype.name}")
    name = f"wp.{t!r}"
    return _wrap(f"{name}: {what}.\n\nUse it as a kernel annotation (m: {name}), as an array "
                 f"dtype (wp.zeros(n, dtype={name})), or call it to make a value, in Python or "
                 f"in kernels: {name}() is zeros, {name}(...) takes {t.rows * t.cols} values "
                 f"(row by row) or {t.rows} row vectors.")


def _a(bits: int) -> str:
    return "an" if bits == 8 else "a"


def _scalar_doc(t: ScalarType) -> str:
    what = {"f": f"a {t.bits}-bit floating-point number",
            "i": f"{_a(t.bits)} {t.bits}-bit signed integer",
            "u": f"{_a(t.bits)} {t.bits}-bit unsigned integer",
            "b": "a boolean"}.get(t.kind, "a scalar")
    return _wrap(f"wp.{t.name}: the scalar type of {what}.\n\nUse it as a kernel annotation "
                 f"(x: wp.{t.name}), as an array dtype (wp.zeros(n, dtype=wp.{t.name})), or "
                 f"call it in a kernel to convert a value: wp.{t.name}(x).")


def attach(namespace: dict[str, Any]) -> None:
    """Give every type object in namespace (gradloom's public names) its docstring."""
    for value in namespace.values():
        doc = None
        if isinstance(value, VectorType) and value.kind in _VECTOR_KINDS:
            doc = _vector_doc(value)
        elif isinstance(value, MatrixType):
            doc = _matrix_doc(value)
        elif isinstance(value, ScalarType) and value.kind != "p":
            doc = _scalar_doc(value)
        if doc is not None:
            object.__setattr__(value, "__doc__", doc)
