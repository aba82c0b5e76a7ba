"""Python-scope vector/matrix/quat/transform values (`VecValue`): construction, component access
with Warp's checks, and operators that mean what they mean in a kernel."""

from __future__ import annotations

import ctypes
import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import config
from ..hooks import Hook
from .composite import CONSTRUCT, CompositeType, MatrixType, VectorType, quaternion
from .scalars import bf16_round, float32_to_bf16_bits, scalar_from_numpy, scalar_value

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


class VecValue(np.ndarray):  # type: ignore[type-arg]
    """A Python-scope vector/matrix/quat/transform value: a numpy array that remembers its
    gradloom type. Its operators (`+ - * / @`, unary `-`, `==`) compute what they compute in a
    kernel: the builtin library lowers them and the host evaluates the IR (builtins/host.py);
    operands that are not gradloom values (plain numpy arrays, numbers) get numpy's behaviour,
    except `==` / `!=` with a tuple or list, which compare all components (one bool, as Warp)."""

    gl_type: CompositeType

    def __array_finalize__(self, obj: Any) -> None:
        """numpy results keep the type while the shape fits (with numpy's dtype: a float64
        scalar times a vec3f is a vec3d); other shapes are plain arrays in disguise."""
        t = getattr(obj, "gl_type", None)
        if t is not None and self.shape == t.shape and self.dtype != t.dtype.host_dtype:
            st = scalar_from_numpy(self.dtype)
            t = dataclasses.replace(t, dtype=st) if st is not None else None
        self.gl_type = t if t is not None and self.shape == t.shape else None  # type: ignore[assignment]

    def __getitem__(self, index: Any) -> Any:
        """v[i] is a scalar (python_scalar: Warp's types), m[i] a row vector (a copy, as in a
        kernel), v[a:b] a vector."""
        self._check_key(index)
        out = super().__getitem__(index)
        if not isinstance(out, np.ndarray) or self.gl_type is None:
            if isinstance(out, np.generic) and self.gl_type is not None:
                return python_scalar(out, self.gl_type.dtype.name)
            return out
        basic = all(isinstance(i, (int, np.integer, slice))
                    for i in (index if isinstance(index, tuple) else (index,)))
        if not basic or out.ndim not in (1, 2) or out.size == 0:
            return np.asarray(out)
        dtype = self.gl_type.dtype
        t = VectorType(out.shape[0], dtype) if out.ndim == 1 else \
            MatrixType(out.shape[0], out.shape[1], dtype)
        return make_composite_value(t, (np.array(out),))

    def __setitem__(self, index: Any, value: Any) -> None:
        """Components are numbers: assigning anything else raises TypeError (as Warp)."""
        self._check_key(index)
        if self.gl_type is not None:
            value = self._checked_value(index, value)
            if self.dtype.kind in "iu":  # integers wrap, as in C (`v[0] = -1` in a uint vector)
                value = _wrapped(value, self.dtype)
        base = np.asarray(self)  # through the base class: a view, never a copy
        base[index] = value
        if self.gl_type is not None and self.gl_type.dtype.name == "bfloat16":
            base[...] = bf16_round(base)

    def _check_key(self, index: Any) -> None:
        t = self.gl_type
        if t is None:
            return
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
        if not isinstance(value, (Sequence, np.ndarray)) and hasattr(value, "__array__"):
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

    # Warp's class attributes, which its values (ctypes arrays) also show
    _shape_ = property(lambda self: self.gl_type._shape_)
    _length_ = property(lambda self: self.gl_type.length)
    _wp_scalar_type_ = property(lambda self: self.gl_type.dtype)

    def __bytes__(self) -> bytes:
        """The value's bytes as a kernel stores it (`bytes(v)`): bfloat16 components as 16-bit
        bfloat16 bits, not the float32 they are held in here."""
        t = self.__dict__.get("gl_type")
        data = np.asarray(self)
        if t is not None and t.dtype.name == "bfloat16":
            return float32_to_bf16_bits(data).tobytes()
        return data.tobytes()

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
        t = self.__dict__.get("gl_type")
        return repr(t) if t is not None else type(self).__name__

    x = property(lambda self: self._component(0), lambda self, v: self._set_component(0, v))
    y = property(lambda self: self._component(1), lambda self, v: self._set_component(1, v))
    z = property(lambda self: self._component(2), lambda self, v: self._set_component(2, v))
    w = property(lambda self: self._component(3), lambda self, v: self._set_component(3, v))

    @property
    def p(self) -> VecValue:
        """A transform's translation (`xform.p`)."""
        self._require_transform("p")
        return make_composite_value(VectorType(3, self.gl_type.dtype), (np.array(self[:3]),))

    @p.setter
    def p(self, value: Any) -> None:
        self._require_transform("p")
        self[:3] = list(np.ravel(np.asarray(value)))

    @property
    def q(self) -> VecValue:
        """A transform's rotation quaternion (`xform.q`)."""
        self._require_transform("q")
        return make_composite_value(quaternion(self.gl_type.dtype), (np.array(self[3:]),))

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
        return make_composite_value(VectorType(self.shape[0], self.gl_type.dtype),
                                    (np.array(np.asarray(self)[:, c]),))

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
        if self.gl_type is None:
            return None
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
        if self.gl_type is None:
            return super().__repr__()
        scalar = getattr(self.gl_type, "dtype", None)
        name = getattr(scalar, "name", "float32")
        if np.ndim(self) == 1 and name not in ("float32", "int32", "bool"):
            # Warp's repr of a vector, quaternion or transform names other scalar types:
            # vec2d([float64(1.0), float64(2.0)])
            text = ", ".join(f"{name}({x})" for x in self._text()[1:-1].split(", "))
            return f"{self.gl_type!r}([{text}])"
        return f"{self.gl_type!r}({self._text()})"

    def __str__(self) -> str:
        return self._text() if self.gl_type is not None else super().__str__()

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
    if t.kind == "transform":
        return transform_value(t, args, kwargs)  # type: ignore[arg-type]
    if kwargs:
        raise TypeError(f"{t!r}() takes no keyword arguments")
    return make_composite_value(t, args)


def make_composite_value(t: CompositeType, args: tuple[Any, ...]) -> VecValue:
    """Python-scope constructor: no args gives zeros, one scalar fills, else the components
    (a matrix also takes its rows)."""
    dtype = t.dtype.host_dtype
    if len(args) == 0:
        flat = np.zeros(t.length, dtype=dtype)
    elif len(args) == 1 and np.ndim(args[0]) == 0:
        flat = np.full(t.length, _cast(np.asarray(args[0]), dtype), dtype=dtype)
    else:
        if isinstance(t, MatrixType):
            _check_rows(t, args)
        flat = _cast(np.concatenate([np.ravel(np.asarray(a)) for a in args]), dtype)
    if flat.size != t.length:
        what = "matrix" if isinstance(t, MatrixType) else "vector"
        raise ValueError(f"Invalid number of arguments in {what} constructor, expected "
                         f"{t.length} elements, got {flat.size}")
    if t.dtype.name == "bfloat16":
        flat = bf16_round(flat)
    out = flat.reshape(t.shape).view(VecValue)
    out.gl_type = t
    return out


def transform_value(t: VectorType, args: tuple[Any, ...], kwargs: dict[str, Any]) -> VecValue:
    """`wp.transform(...)` in Python, Warp's forms: no argument (the identity), one number
    (every component), 7 components or a 7-sequence (a copy), p and q (positional or keywords;
    p defaults to zeros, q to the identity quaternion), or a p sequence alone."""
    for k in kwargs:
        if k not in ("p", "q"):
            raise TypeError(f"got an unexpected keyword argument '{k}'")
    if len(args) > 2 or (len(args) == 1 and not kwargs and np.ndim(args[0]) == 1 and \
            np.size(args[0]) == 7):
        for k in kwargs:
            raise TypeError(f"multiple values for argument '{k}'")
        return make_composite_value(t, args)
    if len(args) == 1 and not kwargs and np.ndim(args[0]) == 0:
        return make_composite_value(t, (_fill_value(args[0]),))
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
    return make_composite_value(t, (p, q))


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
