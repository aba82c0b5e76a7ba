"""`@wp.func`: a user function that kernels inline at each call site."""

from __future__ import annotations

import functools
import inspect
from typing import Any

from ..errors import GradloomError, KernelTypeError
from ..types import resolve_annotation
from .source import SourceInfo, parse_function, source_digest


class Function:
    """A kernel-language function; its body is inlined into callers and compiled with them."""

    def __init__(self, pyfunc: Any) -> None:
        self.pyfunc = pyfunc
        self.key = pyfunc.__qualname__
        self._info: SourceInfo | None = None
        functools.update_wrapper(self, pyfunc)

    @property
    def info(self) -> SourceInfo:
        if self._info is None:
            self._info = parse_function(self.pyfunc)
        return self._info

    def param_types(self) -> list[tuple[str, Any]]:
        """(name, type) per parameter; typing.Any or no annotation means generic."""
        return annotated_params(self.info)

    def __gl_fingerprint__(self, visiting: set[int]) -> str:
        return "func:" + source_digest(self.info, visiting)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise GradloomError(
            f"{self.key}() is a @wp.func: call it from a @wp.kernel or another @wp.func"
        )

    def __repr__(self) -> str:
        return f"<gradloom func {self.key}>"


def annotated_params(info: SourceInfo) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    sig = inspect.signature(info.pyfunc)
    fdef = info.tree
    for (name, p), node in zip(sig.parameters.items(), fdef.args.args, strict=False):
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise KernelTypeError(f"parameter {name!r}: *args and **kwargs are not supported",
                                  info.loc(node))
        ann = p.annotation
        if isinstance(ann, str):  # `from __future__ import annotations` in the user's file
            ann = _eval_annotation(info, name, ann, node)
        if ann is inspect.Parameter.empty:
            out.append((name, Any))
            continue
        try:
            out.append((name, resolve_annotation(ann)))
        except TypeError as exc:
            raise KernelTypeError(f"parameter {name!r}: {exc}", info.loc(node)) from None
    return out


def _eval_annotation(info: SourceInfo, name: str, text: str, node: Any) -> Any:
    namespace = {**info.pyfunc.__globals__, **info.closure}
    try:
        return eval(text, namespace)
    except Exception as exc:
        raise KernelTypeError(f"parameter {name!r}: cannot evaluate annotation {text!r}: {exc}",
                              info.loc(node)) from None


def func(pyfunc: Any) -> Function:
    """Decorator: `@wp.func`."""
    return Function(pyfunc)
