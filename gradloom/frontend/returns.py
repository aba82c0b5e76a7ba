"""A `@wp.func`'s return annotation checked against what its code returns (Warp's rules and words).

Concrete value types are checked (`-> float`, `-> wp.vec3`, `-> tuple[int, float]`), and a
fixed-size array returned where an array type is annotated. Annotations that name no such type
(none, `None`, `Any`, templates) are left alone.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

from ..builtins.values import FixedArrayVal, TupleVal, type_of
from ..errors import KernelTypeError, SourceLoc
from ..types import ArrayType, MatrixType, ScalarType, StructType, VectorType, resolve_annotation
from ..types.query import types_equal
from .generic import is_generic

_VALUE_TYPES = (ScalarType, VectorType, MatrixType, StructType)


def check_return(pyfunc: Any, name: str, result: Any, loc: SourceLoc) -> None:
    """Raise when pyfunc's return annotation names value types that result does not have."""
    ann = _annotation(pyfunc)
    if ann is None or result is None:
        return
    if isinstance(result, FixedArrayVal):
        _check_fixed_array(ann, name, loc)
        return
    if typing.get_origin(ann) is tuple:
        _check_tuple(ann, name, result, loc)
        return
    want = _value_type(ann)
    if want is None:
        return
    head = f"The function `{name}` has its return type annotated as `{_word(ann)}` but the code"
    if isinstance(result, TupleVal):
        raise KernelTypeError(f"{head} returns {len(result.items)} values.", loc)
    got = type_of(result)
    if not types_equal(got, want):  # Warp's equality: a spatial matrix is a 6x6 matrix
        raise KernelTypeError(f"{head} returns a value of type `{_type_word(got)}`.", loc)


def declares_no_result(pyfunc: Any) -> bool:
    """Whether a kernel's return annotation allows it: none, `None` or `NoneType`."""
    ann = getattr(pyfunc, "__annotations__", {}).get("return", inspect.Signature.empty)
    if isinstance(ann, str):  # `from __future__ import annotations`
        try:
            ann = inspect.signature(pyfunc, eval_str=True).return_annotation
        except Exception:
            return ann.strip() in ("None", "NoneType", "types.NoneType")
    return ann in (inspect.Signature.empty, None, type(None))


def _check_fixed_array(ann: Any, name: str, loc: SourceLoc) -> None:
    """A fixed array returned where an array is annotated (`-> wp.array2d[int]`): Warp's error;
    `-> wp.fixedarray(...)`, or any other annotation, is not checked."""
    try:
        t = resolve_annotation(ann)
    except TypeError:
        return
    if isinstance(t, ArrayType):
        raise KernelTypeError(f"The function `{name}` returns a fixed-size array whereas it has "
                              f"its return type annotated as `Array[{t.dtype}]`.", loc)


def _check_tuple(ann: Any, name: str, result: Any, loc: SourceLoc) -> None:
    wants = [_value_type(a) for a in typing.get_args(ann)]
    if not wants or Ellipsis in typing.get_args(ann) or any(w is None for w in wants):
        return
    items = result.items if isinstance(result, TupleVal) else (result,)
    if len(items) != len(wants):
        raise KernelTypeError(f"The function `{name}` has its return type annotated as a tuple of "
                              f"{len(wants)} elements but the code returns {len(items)} values.",
                              loc)
    gots = [type_of(i) for i in items]
    if not all(types_equal(g, w) for g, w in zip(gots, wants, strict=True)):
        words = ", ".join(_type_word(g) for g in gots)
        raise KernelTypeError(f"The function `{name}` has its return type annotated as "
                              f"`{_word(ann)}` but the code returns a tuple with types "
                              f"`({words})`.", loc)


def _annotation(pyfunc: Any) -> Any:
    """The evaluated return annotation, or None (none given, None, or not evaluable)."""
    try:
        ann = inspect.signature(pyfunc, eval_str=True).return_annotation
    except Exception:  # an annotation that does not evaluate: nothing to check
        return None
    return None if ann in (inspect.Signature.empty, None, type(None)) else ann


def _value_type(ann: Any) -> Any:
    try:
        t = resolve_annotation(ann)
    except TypeError:
        return None
    return t if isinstance(t, _VALUE_TYPES) and not is_generic(t) else None


def _word(ann: Any) -> str:
    """An annotation as Warp's messages write it: `int`, `int16`, `tuple[int, int]`."""
    if typing.get_origin(ann) is tuple:
        return f"tuple[{', '.join(_word(a) for a in typing.get_args(ann))}]"
    if isinstance(ann, type) and ann.__module__ == "builtins":
        return ann.__name__
    t = _value_type(ann)
    return _type_word(t) if t is not None else repr(ann)


def _type_word(t: Any) -> str:
    return str(t) if isinstance(t, ScalarType) else repr(t)
