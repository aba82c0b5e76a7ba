"""`@wp.struct`: a user class becomes a StructType; its instances carry field values to launches."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ...errors import StructFieldError
from ...hooks import Hook
from ...types import (
    ArrayType,
    FabricArrayType,
    IndexedArrayType,
    MatrixType,
    ScalarType,
    StructType,
    VectorType,
    make_composite_value,
    resolve_annotation,
)
from ..device import get_device
from .array import array, struct_record
from .ctype import struct_ctype
from .fabric import fabricarray, indexedfabricarray
from .indexed import indexedarray
from .storage import storage_dtype, struct_dtype_spec

#: records a struct class in the kernel module of its Python module (Warp's `Module.structs`;
#: kernel.py fills it: modules are a layer above the runtime)
REGISTER_STRUCT: Hook[Any] = Hook("Module.structs", "gradloom.kernel")


def _default(t: Any) -> Any:
    if isinstance(t, ScalarType):
        return t(0)
    if isinstance(t, (VectorType, MatrixType)):
        return make_composite_value(t, ())
    if isinstance(t, StructType):
        return t.cls()
    return None  # arrays start unset


class _StructInstance:
    """gradloom's part of every struct instance. The struct class derives from the user's
    class and then from this one, so the user's methods and dunders (`__repr__`, `__eq__`,
    `__setattr__`, ...) come first and `super()` in them works, as in Warp."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        fields: dict[str, Any] = type(self).__gl_fields__  # type: ignore[attr-defined]
        if name in fields:
            object.__setattr__(self, name, assigned_value(name, fields[name], value))
        elif _is_data_descriptor(inspect.getattr_static(type(self), name, None)):
            object.__setattr__(self, name, value)  # a property: its setter (or Python's error)
        else:
            raise AttributeError(f"{type(self).__name__} has no field '{name}'")

    def __ctype__(self) -> Any:
        """Warp's ctypes copy of the instance's stored bytes (runtime/array/ctype.py)."""
        return struct_ctype(self)

    def to(self, device: Any) -> Any:
        """A copy whose arrays are on device (Warp's `s.to(device)`): arrays are copied there,
        nested structs moved; indexed and Fabric arrays cannot move (they view other memory)."""
        target = get_device(device)
        out = type(self)()
        for name, t in type(self).__gl_fields__.items():  # type: ignore[attr-defined]
            value = getattr(self, name)
            if value is not None and isinstance(t, StructType):
                value = value.to(target)
            elif value is not None and isinstance(t, IndexedArrayType) and \
                    value.device is not None and value.device != target:
                _, what = _family(t)
                raise ValueError(f"Cannot move struct field '{name}' containing {what} to "
                                 f"{target}")
            elif value is not None and isinstance(t, ArrayType):
                value = value.to(target)
            object.__setattr__(out, name, value)
        return out

    def __repr__(self) -> str:
        names = type(self).__gl_fields__  # type: ignore[attr-defined]
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{type(self).__name__}({inner})"


def _is_data_descriptor(value: Any) -> bool:
    return hasattr(type(value), "__set__") or hasattr(type(value), "__delete__")


def struct(cls: type) -> type:
    """Decorator: `@wp.struct` on a class whose annotations are the fields."""
    if cls.__bases__ != (object,):
        raise RuntimeError(f"@wp.struct {cls.__name__}: Warp structs must be defined as base "
                           "classes")
    fields = _fields(cls)
    field_types = dict(fields)

    def __init__(self: Any, **kwargs: Any) -> None:
        # the user's __init__ is never called (Warp's instances start every field at its
        # type's default)
        for fname, ftype in fields:
            value = kwargs.pop(fname) if fname in kwargs else _default(ftype)
            object.__setattr__(self, fname, assigned_value(fname, ftype, value))
        if kwargs:
            raise TypeError(f"{cls.__name__} has no fields {sorted(kwargs)}")

    # derived from the user's class: instances keep its methods, static and class methods,
    # properties, class attributes and kernels defined in its body (kernels see the fields)
    new_cls = type(cls.__name__, (cls, _StructInstance), {
        "__init__": __init__, "__gl_fields__": field_types,
        "__module__": cls.__module__, "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__,
    })
    st = StructType(cls.__name__, tuple(fields), new_cls)
    REGISTER_STRUCT.get()(new_cls)
    new_cls.__gl_type__ = st  # type: ignore[attr-defined]
    new_cls.__gl_struct__ = True  # type: ignore[attr-defined]
    if "cls" not in field_types:
        new_cls.cls = new_cls  # type: ignore[attr-defined]  # Warp's `S.cls`: the class itself
    if "key" not in field_types and "key" not in vars(cls):
        new_cls.key = cls.__qualname__  # type: ignore[attr-defined]  # Warp's `S.key`: its name
    new_cls.__gl_fingerprint__ = staticmethod(  # type: ignore[attr-defined]
        lambda visiting: "struct:" + type_key(st))
    _add_numpy_views(new_cls, st)
    return new_cls


def _fields(cls: type) -> list[tuple[str, Any]]:
    """(name, type) of each field: the class's annotations. A field named like a property of
    the class is refused (in Warp, Python would read the property and kernels the field)."""
    fields = []
    for name, ann in inspect.get_annotations(cls, eval_str=True).items():
        try:
            fields.append((name, resolve_annotation(ann)))
        except TypeError as exc:
            raise TypeError(f"@wp.struct {cls.__name__}: field '{name}': {exc}") from None
        if _is_data_descriptor(vars(cls).get(name)):
            raise StructFieldError(f"@wp.struct {cls.__name__}: '{name}' is both a field and a "
                                   f"{type(vars(cls)[name]).__name__} of the class; rename one")
    return fields


def assigned_value(name: str, t: Any, value: Any) -> Any:
    """What a struct field of type t holds when value is assigned (Warp's conversions and
    errors): None resets a vector or matrix to zeros; a sequence converts to it; a single number
    does not. An array field takes None or an array of its dtype and dimension count."""
    if isinstance(t, (VectorType, MatrixType)):
        if value is None:
            return _default(t)
        if isinstance(value, (bool, int, float, np.generic)):
            raise StructFieldError(f"Struct field '{name}' expects {t!r} but got a single value "
                                   f"({value!r}); give all {t.length} components")
        return value if getattr(value, "gl_type", None) == t else t(value)
    if isinstance(t, (ArrayType, IndexedArrayType)) and value is not None:
        return _array_field(name, t, value)
    return value


def _array_field(name: str, t: ArrayType | IndexedArrayType, value: Any) -> Any:
    want, what = _family(t)
    if not isinstance(value, want):
        raise StructFieldError(f"Struct field '{name}' expects {what}, got "
                               f"{type(value).__name__}")
    if value.dtype != t.dtype:
        raise StructFieldError(f"Struct field '{name}' expects dtype {t.dtype}, got "
                               f"{value.dtype}")
    if value.ndim != t.ndim:
        raise StructFieldError(f"Struct field '{name}' expects an array with {t.ndim} "
                               f"dimension(s), got {value.ndim} dimension(s)")
    return value


def _family(t: ArrayType | IndexedArrayType) -> tuple[type[Any], str]:
    """The class a struct's array field takes, and its name in messages."""
    if isinstance(t, FabricArrayType):
        return (indexedfabricarray, "a Warp indexed Fabric array") if t.indexed else \
            (fabricarray, "a Warp Fabric array")
    if isinstance(t, IndexedArrayType):
        return indexedarray, "a Warp indexed array"
    return array, "a Warp array"


def _add_numpy_views(cls: type, st: StructType) -> None:
    """Warp's numpy views of a struct: `S.numpy_dtype()` (numpy's dict spec of the layout) and
    `s.numpy_value()` (an instance as one structured element)."""
    cls.numpy_dtype = staticmethod(lambda: struct_dtype_spec(st))  # type: ignore[attr-defined]
    cls.numpy_value = lambda self: np.array(  # type: ignore[attr-defined]
        struct_record(self, st), dtype=storage_dtype(st))[()]


def type_key(t: Any) -> str:
    """A complete description of a type for cache keys (struct layouts included)."""
    if isinstance(t, StructType):
        inner = ",".join(f"{n}:{type_key(ft)}" for n, ft in t.fields)
        return f"{t.name}{{{inner}}}"
    if isinstance(t, ArrayType):
        return f"array[{type_key(t.dtype)},{t.ndim}]"
    return repr(t)


def array_fields(t: StructType) -> list[tuple[str, int]]:
    """(dotted field path, byte offset in the struct) of every array a struct holds, the arrays
    of nested structs included (`"inner.a"`)."""
    out: list[tuple[str, int]] = []
    for name, ft in t.fields:
        off = t.offsets[name]
        if isinstance(ft, ArrayType):
            out.append((name, off))
        elif isinstance(ft, StructType):
            out.extend((f"{name}.{path}", off + o) for path, o in array_fields(ft))
    return out


def field_value(holder: Any, path: str) -> Any:
    """The value at a dotted field path (`array_fields`) of a struct instance; None if unset."""
    value = holder
    for name in path.split("."):
        value = getattr(value, name, None)
    return value
