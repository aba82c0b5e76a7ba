"""Python-scope vector/matrix/quat/transform values (`VecValue`): construction, component access
with Warp's checks, and operators that mean what they mean in a kernel."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import config
from ..hooks import Hook
from .composite import CONSTRUCT, CompositeType, MatrixType, VectorType, quaternion
from .scalars import bf16_round, float32_to_bf16_bits, scalar_value

#: a Python operator on vector/matrix values computes what the kernel library defines it as
#: (builtins/host.py fills it)
HOST_OPERATOR: Hook[Any] = Hook("the operators of vector and matrix values",
                                "gradloom.builtins.host")


#: the scalar types whose Python-scope results are Python numbers (Warp 1.12+: `wp.float32`,
#: `wp.int32` and `wp.bool` stand for Python's float, int and bool there)
_PYTHON_NUMBERS = frozenset({"float32", "int32", "bool"})


def python_scalar(value: np.generic, type_name: str) -> Any:
    """A scalar result of a Python-scope builtin call or of indexing a value, as Warp returns
    it: a Python float / int / bool for float32 / int32 / bool, a value of the exact type
    otherwise (`wp.float64(x)`: types/scalars.py `ScalarValue`). With Warp's
    `config.legacy_scalar_return_types`, every scalar is a Python number."""
    if type_name in _PYTHON_NUMBERS or getattr(config, "legacy_scalar_return_types", False):
        return value.item()
    return scalar_value(value, type_name)


class VecValue:
    """A Python-scope vector/matrix/quat/transform value. As in Warp, each composite type's
    values are instances of a ctypes array class (`value_class(t)`: this class mixed into the
    ctypes array of the storage scalar, a matrix's as rows of rows), so `ctypes.byref(v)`,
    `T.from_buffer(buf)` / `from_buffer_copy(buf)` and `isinstance(v, ctypes.Array)` work, and
    `np.asarray(v)` is a writable view of the value's own memory (the buffer protocol; a
    matrix's of shape (rows, cols)). Its operators (`+ - * / @`, unary `-`, `==`) compute what
    they compute in a kernel: the builtin library lowers them and the host evaluates the IR
    (builtins/host.py); operands that are not gradloom values (plain numpy arrays) get numpy's
    behaviour, except `==` / `!=` with a tuple or list, which compare all components (one
    bool, as Warp). float16 and bfloat16 values hold float32 components rounded to their type
    (ctypes and numpy's buffer protocol have no half type); `bytes(v)` is their 16-bit form."""

    gl_type: CompositeType

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """`type(v)(...)` builds as calling the type does (`wp.vec3(1, 2, 3)`); values made by
        `from_buffer` / `from_buffer_copy` skip this."""
        t = self.gl_type
        if args or kwargs or t.kind == "transform":
            np.asarray(self)[...] = _flat(t, args, kwargs).reshape(t.shape)

    def __reduce__(self) -> Any:
        """Pickled (and copied) by type and components: the classes are made at run time."""
        return (make_composite_value, (self.gl_type, (np.asarray(self).tolist(),)))

    def host_components(self) -> np.ndarray[Any, Any]:
        """The components, flat, as numpy values of the type's Python-scope dtype."""
        a = np.asarray(self).ravel()
        host = self.gl_type.dtype.host_dtype
        return a if a.dtype == host else a.astype(host)

    # numpy's facts of the value (gradloom kept them from when values were numpy arrays)
    shape = property(lambda self: self.gl_type.shape)
    ndim = property(lambda self: len(self.gl_type.shape))
    size = property(lambda self: self.gl_type.length)
    dtype = property(lambda self: np.asarray(self).dtype)

    def tolist(self) -> list[Any]:
        """The components as Python numbers (a matrix's as a list of rows)."""
        return np.asarray(self).tolist()  # type: ignore[no-any-return]

    def __gl_fingerprint__(self, visiting: set[int]) -> str:
        """Its part of a kernel's cache key when a kernel captures it: type and components."""
        return f"value:{self.gl_type!r}:{np.asarray(self).tobytes().hex()}"

    def copy(self) -> VecValue:
        """A value of the same type holding the same components."""
        return value_from_array(self.gl_type, np.asarray(self))

    def __getitem__(self, index: Any) -> Any:
        """v[i] is a scalar (python_scalar: Warp's types), m[i] a row vector (a copy, as in a
        kernel), v[a:b] a vector."""
        self._check_key(index)
        out = np.asarray(self)[index]
        dtype = self.gl_type.dtype
        if not isinstance(out, np.ndarray):
            return python_scalar(dtype.host_dtype.type(out), dtype.name)
        basic = all(isinstance(i, (int, np.integer, slice))
                    for i in (index if isinstance(index, tuple) else (index,)))
        if not basic or out.ndim not in (1, 2) or out.size == 0:
            return np.array(out, dtype=dtype.host_dtype)
        t = VectorType(out.shape[0], dtype) if out.ndim == 1 else \
            MatrixType(out.shape[0], out.shape[1], dtype)
        return value_from_array(t, out)

    def __setitem__(self, index: Any, value: Any) -> None:
        """Components are numbers: assigning anything else raises TypeError (as Warp)."""
        self._check_key(index)
        value = self._checked_value(index, value)
        if self.gl_type.dtype.kind in "iu":  # integers wrap, as in C (`v[0] = -1` in a uint vector)
            value = _wrapped(value, np.asarray(self).dtype)
        base = np.asarray(self)  # a view of the value's memory
        base[index] = value
        _round_half(self.gl_type, base)

    def _check_key(self, index: Any) -> None:
        t = self.gl_type
        if isinstance(t, MatrixType):
            if isinstance(index, tuple) and len(index) > 2:
                raise KeyError(f"Invalid key, expected one or two indices, got {len(index)}")
            if index is None:
                raise KeyError(f"Invalid key {index}, expected int or pair of ints")
        elif index is None or (isinstance(index, tuple) and len(index) > 1):
            raise KeyError(f"Invalid key {index}, expected int or slice")

    def _checked_value(self, index: Any, value: Any) -> Any:
        dtype = self.gl_type.dtype.name
        target = np.asarray(self)[index]
        if np.ndim(target) == 0:
            if not _is_number(value):
                raise TypeError(f"Expected to assign a `{dtype}` value but got "
                                f"`{_type_name(value)}` instead")
            return value
        if _is_number(value):
            return value
        if isinstance(value, ctypes.Array) or (not isinstance(value, (Sequence, np.ndarray))
                                               and hasattr(value, "__array__")):
            value = np.asarray(value)  # a torch tensor or another array-like (as Warp takes)
        items = list(value) if isinstance(value, (Sequence, np.ndarray)) \
            else None
        if items is None or any(not _is_number(v) and np.ndim(v) != 0 and
                                np.shape(v) != np.shape(target)[1:] for v in items):
            bad = next((v for v in (items or [value]) if not _is_number(v)), value)
            raise TypeError(f"Expected to assign a slice from a sequence of `{dtype}` values "
                            f"but got `{_type_name(bad)}` instead")
        if len(items) != np.shape(target)[0]:
            raise ValueError("Can only assign sequence of same size")
        return np.asarray(value) if self.dtype.kind in "iu" else np.asarray(value, self.dtype)

    def __bytes__(self) -> bytes:
        """The value's bytes as a kernel stores it (`bytes(v)`): float16 and bfloat16
        components as 16-bit values, not the float32 they are held in here."""
        name = self.gl_type.dtype.name
        data = np.asarray(self)
        if name == "bfloat16":
            return float32_to_bf16_bits(data).tobytes()
        return data.astype(np.float16).tobytes() if name == "float16" else data.tobytes()

    def __iter__(self) -> Any:
        """Components of a vector, rows (vectors) of a matrix."""
        return (self[i] for i in range(len(self)))

    def _component(self, i: int) -> Any:
        self._require_component(i)
        return self[i]

    def _set_component(self, i: int, value: Any) -> None:
        self._require_component(i)
        self[i] = value

    def _require_component(self, i: int) -> None:
        t = self.gl_type
        if isinstance(t, VectorType) and i >= t.length:
            raise AttributeError(f"'{t!r}' object has no attribute '{'xyzw'[i]}'")

    def __getattr__(self, name: str) -> Any:
        """Only attributes that exist (Warp's message names the type: 'vec3f' object)."""
        raise AttributeError(f"'{self._type_name()}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        """Swizzles (`v.xy = ...`) are not components: an error rather than a new attribute."""
        if len(name) > 1 and set(name) <= set("xyzw") and name != "gl_type":
            raise AttributeError(f"'{self._type_name()}' object has no attribute '{name}'")
        super().__setattr__(name, value)

    def _type_name(self) -> str:
        return repr(self.gl_type)

    x = property(lambda self: self._component(0), lambda self, v: self._set_component(0, v))
    y = property(lambda self: self._component(1), lambda self, v: self._set_component(1, v))
    z = property(lambda self: self._component(2), lambda self, v: self._set_component(2, v))
    w = property(lambda self: self._component(3), lambda self, v: self._set_component(3, v))

    @property
    def p(self) -> VecValue:
        """A transform's translation (`xform.p`)."""
        self._require_transform("p")
        return value_from_array(VectorType(3, self.gl_type.dtype), np.asarray(self)[:3])

    @p.setter
    def p(self, value: Any) -> None:
        self._require_transform("p")
        self[:3] = list(np.ravel(np.asarray(value)))

    @property
    def q(self) -> VecValue:
        """A transform's rotation quaternion (`xform.q`)."""
        self._require_transform("q")
        return value_from_array(quaternion(self.gl_type.dtype), np.asarray(self)[3:])

    @q.setter
    def q(self, value: Any) -> None:
        self._require_transform("q")
        self[3:] = list(np.ravel(np.asarray(value)))

    def _require_transform(self, name: str) -> None:
        if getattr(self.gl_type, "kind", None) != "transform":
            raise AttributeError(f"{self.gl_type!r} has no attribute '{name}'")

    # -- matrix rows and columns (Warp's get_row / set_row / get_col / set_col) ----------------

    def get_row(self, r: int) -> VecValue:
        self._require_index(r, 0, "row")
        return self[r]  # type: ignore[no-any-return]

    def set_row(self, r: int, value: Any) -> None:
        self._require_index(r, 0, "row")
        self[r] = value

    def get_col(self, c: int) -> VecValue:
        self._require_index(c, 1, "column")
        return value_from_array(VectorType(self.shape[0], self.gl_type.dtype),
                                np.asarray(self)[:, c])

    def set_col(self, c: int, value: Any) -> None:
        self._require_index(c, 1, "col")
        col = self.get_col(c)
        col[:] = value  # checked as a vector's components are
        np.asarray(self)[:, c] = np.asarray(col)

    def _require_index(self, i: int, axis: int, what: str) -> None:
        if not isinstance(self.gl_type, MatrixType):
            raise AttributeError(f"{self.gl_type!r} has no rows or columns")
        if not 0 <= i < self.shape[axis]:
            raise IndexError(f"Invalid {what} index")

    # -- operators: the kernel's definitions, evaluated on the host ----------------------------

    def _op(self, name: str, *operands: Any) -> Any:
        return HOST_OPERATOR.get()(name, *operands)

    def __add__(self, o: Any) -> Any:
        return self._op("add", self, o)

    def __radd__(self, o: Any) -> Any:
        return self._op("add", o, self)

    def __sub__(self, o: Any) -> Any:
        return self._op("sub", self, o)

    def __rsub__(self, o: Any) -> Any:
        return self._op("sub", o, self)

    def __mul__(self, o: Any) -> Any:
        return self._op("mul", self, o)

    def __rmul__(self, o: Any) -> Any:
        return self._op("mul", o, self)

    def __truediv__(self, o: Any) -> Any:
        return self._op("div", self, o)

    def __rtruediv__(self, o: Any) -> Any:
        return self._op("div", o, self)

    def __floordiv__(self, o: Any) -> Any:
        return self._op("floordiv", self, o)

    def __mod__(self, o: Any) -> Any:
        return self._op("mod", self, o)

    def __pow__(self, o: Any) -> Any:  # type: ignore[override]
        return self._op("pow", self, o)

    def __matmul__(self, o: Any) -> Any:
        return self._op("matmul", self, o)

    def __rmatmul__(self, o: Any) -> Any:
        return self._op("matmul", o, self)

    def __neg__(self) -> Any:
        return self._op("neg", self)

    def __pos__(self) -> Any:
        return self._op("pos", self)

    def __bool__(self) -> bool:
        """True for every value with components, zeros included: Warp's types are ctypes
        arrays, true when not empty (newton: `any(row for row in inertia)`). numpy's
        "ambiguous" error would refuse code that runs on Warp."""
        return bool(self.size)

    def __eq__(self, o: Any) -> Any:  # type: ignore[override]
        same = self._same_components(o)
        return same if same is not None else self._op("eq", self, o)

    def __ne__(self, o: Any) -> Any:  # type: ignore[override]
        same = self._same_components(o)
        return (not same) if same is not None else self._op("ne", self, o)

    def _same_components(self, o: Any) -> bool | None:
        """`v == (1, 2, 3)`, or two values of different types: whether every component is
        equal (Warp's answer); None where the operator's own rule applies. Compared with None,
        a value is unequal (MuJoCo Warp: `wp.static(pos == None)` for an optional vec3)."""
        if o is None:
            return False
        other_t = getattr(o, "gl_type", None)
        if isinstance(o, (tuple, list, ctypes.Array)) or (other_t is not None and
                                                          other_t != self.gl_type):
            try:
                b = np.asarray(o, dtype=np.float64 if self.dtype.kind == "f" else None)
            except (TypeError, ValueError):
                return False
            return b.shape == self.shape and bool(np.all(np.asarray(self) == b))
        return None

    def __lt__(self, o: Any) -> Any:  # type: ignore[override]
        return self._op("lt", self, o)

    def __le__(self, o: Any) -> Any:  # type: ignore[override]
        return self._op("le", self, o)

    def __gt__(self, o: Any) -> Any:  # type: ignore[override]
        return self._op("gt", self, o)

    def __ge__(self, o: Any) -> Any:  # type: ignore[override]
        return self._op("ge", self, o)

    # values, as in kernels and Warp: `v += w` rebinds v to a new value
    __iadd__, __isub__, __imul__ = __add__, __sub__, __mul__
    __itruediv__, __imod__, __imatmul__ = __truediv__, __mod__, __matmul__

    def __repr__(self) -> str:
        scalar = getattr(self.gl_type, "dtype", None)
        name = getattr(scalar, "name", "float32")
        if isinstance(self.gl_type, VectorType) and name not in ("float32", "int32", "bool"):
            # Warp's repr of a vector, quaternion or transform names other scalar types:
            # vec2d([float64(1.0), float64(2.0)])
            text = ", ".join(f"{name}({x})" for x in self._text()[1:-1].split(", "))
            return f"{self.gl_type!r}([{text}])"
        return f"{self.gl_type!r}({self._text()})"

    def __str__(self) -> str:
        return self._text()

    def _text(self) -> str:
        """Components as Warp prints them: [1.0, 2.0, 3.0]; matrices one row per line."""
        def item(x: Any) -> str:
            kind = self.dtype.kind
            return repr(float(x) if kind == "f" else bool(x) if kind == "b" else int(x))

        a = np.asarray(self)
        if a.ndim == 1:
            return "[" + ", ".join(item(x) for x in a) + "]"
        rows = ("[" + ", ".join(item(x) for x in r) + "]" for r in a)
        return "[" + ",\n ".join(rows) + "]"


def _wrapped(value: Any, dtype: np.dtype[Any]) -> Any:
    """Integer data as dtype, wrapping modulo 2**bits."""
    return np.asarray(value).astype(np.int64 if dtype.kind == "i" else np.uint64).astype(dtype)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.number, np.bool_)) or \
        (isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "biuf")


def _type_name(v: Any) -> str:
    t = getattr(v, "gl_type", None)
    return repr(t) if t is not None else type(v).__name__


@CONSTRUCT.fill
def construct(t: CompositeType, args: tuple[Any, ...], kwargs: dict[str, Any]) -> VecValue:
    """Calling a composite type: `wp.vec3(1, 2, 3)`, `wp.transform(p=..., q=...)`."""
    return _from_storage(t, _flat(t, args, kwargs))


def make_composite_value(t: CompositeType, args: tuple[Any, ...]) -> VecValue:
    """Python-scope constructor: no args gives zeros, one scalar fills, else the components
    (a matrix also takes its rows)."""
    return _from_storage(t, _components(t, args))


def value_from_array(t: CompositeType, data: Any) -> VecValue:
    """A value of type t holding a copy of data (t.length numbers in row-major order)."""
    flat = np.asarray(data).ravel().astype(t.dtype.host_dtype, copy=False)
    return _from_storage(t, flat.astype(_storage_dtype(t), copy=False))


#: the value class of each composite type (made on first use; types compare by layout)
_CLASSES: dict[tuple[CompositeType, str], type] = {}


def value_class(t: CompositeType) -> type:
    """The class of t's Python-scope values: `VecValue` mixed into the ctypes array of t's
    storage scalar (a matrix's an array of row arrays). `type(wp.vec3(...)) is
    value_class(wp.vec3)`; its class attributes are Warp's (`_wp_scalar_type_`, `_shape_`)."""
    key = (t, t.kind)  # a spatial type's values keep its name (it equals the plain type)
    cls = _CLASSES.get(key)
    if cls is None:
        scalar = np.ctypeslib.as_ctypes_type(_storage_dtype(t))
        storage = scalar * t.length if isinstance(t, VectorType) else \
            (scalar * t.cols) * t.rows
        name = repr(t)
        cls = type(name, (VecValue, storage), {
            "gl_type": t, "_wp_scalar_type_": t.dtype, "_shape_": t.shape,
            "__module__": __name__, "__qualname__": name, "__doc__": VecValue.__doc__})
        cls = _CLASSES.setdefault(key, cls)
    return cls


def _storage_dtype(t: CompositeType) -> np.dtype[Any]:
    """The numpy dtype of a value's memory: float32 for the half types, else the host dtype."""
    return _FLOAT32 if t.dtype.name in _HALF else t.dtype.host_dtype


_HALF = ("float16", "bfloat16")
_FLOAT32 = np.dtype(np.float32)


def _from_storage(t: CompositeType, flat: np.ndarray[Any, Any]) -> VecValue:
    out: VecValue = value_class(t).from_buffer_copy(np.ascontiguousarray(flat))  # type: ignore[attr-defined]
    return out


def _round_half(t: CompositeType, data: np.ndarray[Any, Any]) -> None:
    """Rounds float32 storage of a half type's value to that type, in place."""
    if t.dtype.name == "bfloat16":
        data[...] = bf16_round(data)
    elif t.dtype.name == "float16":
        data[...] = data.astype(np.float16)


def _flat(t: CompositeType, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The components (in storage dtype) that calling t with these arguments gives."""
    if t.kind == "transform":
        return _components(t, transform_args(t, args, kwargs))  # type: ignore[arg-type]
    if kwargs:
        raise TypeError(f"{t!r}() takes no keyword arguments")
    return _components(t, args)


def _components(t: CompositeType, args: tuple[Any, ...]) -> np.ndarray[Any, Any]:
    dtype = t.dtype.host_dtype
    if len(args) == 0:
        return np.zeros(t.length, dtype=_storage_dtype(t))
    if len(args) == 1 and np.ndim(args[0]) == 0:
        flat = np.full(t.length, _cast(np.asarray(args[0]), dtype), dtype=dtype)
    else:
        if isinstance(t, MatrixType):
            _check_rows(t, args)
        flat = _cast(np.concatenate([np.ravel(np.asarray(a)) for a in args]), dtype)
    if flat.size != t.length:
        what = "matrix" if isinstance(t, MatrixType) else "vector"
        raise ValueError(f"Invalid number of arguments in {what} constructor, expected "
                         f"{t.length} elements, got {flat.size}")
    flat = flat.astype(_storage_dtype(t), copy=False)
    _round_half(t, flat)
    return flat


def transform_args(t: VectorType, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """`wp.transform(...)` in Python, Warp's forms, as a matrix-constructor argument tuple:
    no argument (the identity), one number (every component), 7 components or a 7-sequence
    (a copy), p and q (positional or keywords; p defaults to zeros, q to the identity
    quaternion), or a p sequence alone."""
    for k in kwargs:
        if k not in ("p", "q"):
            raise TypeError(f"got an unexpected keyword argument '{k}'")
    if len(args) > 2 or (len(args) == 1 and not kwargs and np.ndim(args[0]) == 1 and \
            np.size(args[0]) == 7):
        for k in kwargs:
            raise TypeError(f"multiple values for argument '{k}'")
        return args
    if len(args) == 1 and not kwargs and np.ndim(args[0]) == 0:
        return (_fill_value(args[0]),)
    given = dict(zip(("p", "q"), args))
    for k, v in kwargs.items():
        if k in given:
            raise TypeError(f"multiple values for argument '{k}'")
        given[k] = v
    # torch tensors and other array-likes: numpy's view of them (their `.size` is a method)
    given = {k: np.asarray(v) if hasattr(v, "__array__") and not isinstance(v, np.ndarray) else v
             for k, v in given.items()}
    for k, v in given.items():
        if np.ndim(v) != 1:
            raise TypeError(f"Invalid argument '{k}' in transformation constructor: expected a "
                            f"sequence, got {type(v).__name__}")
    p = given.get("p", (0.0, 0.0, 0.0))
    q = given.get("q", (0.0, 0.0, 0.0, 1.0))
    if np.size(p) != 3 or np.size(q) != 4:
        raise ValueError(f"{t!r}(p, q): p takes 3 components and q 4, got {np.size(p)} and "
                         f"{np.size(q)}")
    return (p, q)


def _fill_value(v: Any) -> Any:
    """A value that fills every component: a number (a bool is 0 or 1)."""
    if isinstance(v, (bool, int, float, np.generic)):
        return v
    raise TypeError(f"Invalid argument in transformation constructor: expected a scalar value, "
                    f"got {type(v).__name__}")


def _cast(data: Any, dtype: np.dtype[Any]) -> Any:
    """Data as dtype; integers wrap modulo 2**bits, as in C (`wp.vec3ui(-1, 0, 0)`)."""
    return _wrapped(data, dtype) if dtype.kind in "iu" else np.asarray(data).astype(dtype)


def _check_rows(t: MatrixType, args: tuple[Any, ...]) -> None:
    """`wp.mat22((1, 2, 3), (3, 4, 5))`: rows given one by one must have the row's length."""
    if len(args) != t.rows or len(args) == t.length:
        return
    for row in args:
        if np.ndim(row) == 1 and np.size(row) != t.cols:
            raise TypeError(f"Invalid argument in matrix constructor, expected row of length "
                            f"{t.cols}, got {tuple(row)!r}")
