"""The parameter setters of Warp's `Launch`, shared by recorded CPU and CUDA launches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import LaunchError
from ..array.ctype import from_ctype


class RecordedParams:
    """`set_param_at_index`, `set_param_by_name` and `set_params` over `_set_args`, which each
    kind of recorded launch implements (check, convert, repack)."""

    kernel: Any
    params: list[str]
    args: list[Any]
    adjoint: list[Any] | None

    def _set_args(self, values: list[Any]) -> None:
        raise NotImplementedError

    def _adjoint_changed(self) -> None:
        """After an adjoint input changed (a CPU launch repacks its block)."""

    def set_param_at_index(self, index: int, value: Any, adjoint: bool = False) -> None:
        if not (isinstance(index, int) and 0 <= index < len(self.params)):
            raise LaunchError(f"kernel '{self.kernel.key}' has no parameter at index {index!r} "
                              f"(it has {len(self.params)}: {', '.join(self.params)})")
        if adjoint:
            if self.adjoint is None:
                raise LaunchError("this recorded launch is not an adjoint launch")
            self.adjoint[index] = value
            self._adjoint_changed()
            return
        args = list(self.args)
        args[index] = value
        self._set_args(args)

    def set_param_by_name(self, name: str, value: Any, adjoint: bool = False) -> None:
        if name not in self.params:
            raise LaunchError(f"kernel '{self.kernel.key}' has no parameter '{name}' "
                              f"(parameters: {', '.join(self.params)})")
        self.set_param_at_index(self.params.index(name), value, adjoint)

    def set_params(self, values: Sequence[Any]) -> None:
        self._set_args(list(values))

    def set_param_at_index_from_ctype(self, index: int, value: Any) -> None:
        """Warp's setter from a ctypes value (`s.__ctype__()`, `a.__ctype__()`, a ctypes vector
        or scalar): converted back to the value it stands for, then set as any argument."""
        params = list(getattr(self.kernel, "params", ()))
        t = params[index][1] if isinstance(index, int) and 0 <= index < len(params) else None
        self.set_param_at_index(index, from_ctype(t, value))

    def set_param_by_name_from_ctype(self, name: str, value: Any) -> None:
        if name not in self.params:
            raise LaunchError(f"kernel '{self.kernel.key}' has no parameter '{name}' "
                              f"(parameters: {', '.join(self.params)})")
        self.set_param_at_index_from_ctype(self.params.index(name), value)
