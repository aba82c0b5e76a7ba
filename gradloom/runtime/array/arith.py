"""Arithmetic operators of arrays (`a + b`, `2.0 * a`, `-a`, `a += b`): element by element, as
`wp.map` of the kernel builtin (a new array; `+=` and friends write in place), as in Warp.
A numpy array or a list operand keeps numpy's meaning (the array converts to numpy)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...hooks import Hook

#: apply the builtin named `name` element by element (`wp.map` of it): an array operator means
#: what the builtin library says; utils/mapping.py, which sits above the runtime, fills it
ELEMENTWISE: Hook[Any] = Hook("array operators", "gradloom.utils.mapping")

_NUMPY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
          "floordiv": np.floor_divide, "mod": np.fmod, "pow": np.power}


def _numpy_operand(v: Any) -> bool:
    """An operand numpy computes with: a numpy array that is not a gradloom value, a list."""
    if isinstance(v, np.ndarray):
        return getattr(v, "gl_type", None) is None and v.ndim > 0
    return isinstance(v, (list, tuple))


class ArrayArithmetic:
    """The operators; numpy scalars defer to them (`np.float32(2) * a` maps too)."""

    __array_priority__ = 1000.0

    def numpy(self) -> Any:  # provided by `array`
        raise NotImplementedError

    def _map(self, name: str, *operands: Any, out: Any = None) -> Any:
        if any(_numpy_operand(v) for v in operands) and out is None:
            values = [v.numpy() if v is self or isinstance(v, ArrayArithmetic) else v
                      for v in operands]
            return _NUMPY[name](*values)
        return ELEMENTWISE.get()(name, *operands, out=out)

    def __add__(self, o: Any) -> Any:
        return self._map("add", self, o)

    def __radd__(self, o: Any) -> Any:
        return self._map("add", o, self)

    def __sub__(self, o: Any) -> Any:
        return self._map("sub", self, o)

    def __rsub__(self, o: Any) -> Any:
        return self._map("sub", o, self)

    def __mul__(self, o: Any) -> Any:
        return self._map("mul", self, o)

    def __rmul__(self, o: Any) -> Any:
        return self._map("mul", o, self)

    def __truediv__(self, o: Any) -> Any:
        return self._map("div", self, o)

    def __rtruediv__(self, o: Any) -> Any:
        return self._map("div", o, self)

    def __floordiv__(self, o: Any) -> Any:
        return self._map("floordiv", self, o)

    def __rfloordiv__(self, o: Any) -> Any:
        return self._map("floordiv", o, self)

    def __mod__(self, o: Any) -> Any:
        return self._map("mod", self, o)

    def __rmod__(self, o: Any) -> Any:
        return self._map("mod", o, self)

    def __pow__(self, o: Any) -> Any:
        return self._map("pow", self, o)

    def __rpow__(self, o: Any) -> Any:
        return self._map("pow", o, self)

    def __neg__(self) -> Any:
        return self._map("neg", self)

    def __pos__(self) -> Any:
        return self._map("pos", self)

    def __iadd__(self, o: Any) -> Any:
        self._map("add", self, o, out=self)
        return self

    def __isub__(self, o: Any) -> Any:
        self._map("sub", self, o, out=self)
        return self

    def __imul__(self, o: Any) -> Any:
        self._map("mul", self, o, out=self)
        return self

    def __itruediv__(self, o: Any) -> Any:
        self._map("div", self, o, out=self)
        return self

    def __ifloordiv__(self, o: Any) -> Any:
        self._map("floordiv", self, o, out=self)
        return self

    def __imod__(self, o: Any) -> Any:
        self._map("mod", self, o, out=self)
        return self

    def __ipow__(self, o: Any) -> Any:
        self._map("pow", self, o, out=self)
        return self
