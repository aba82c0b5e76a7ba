"""`@wp.func_native`: Warp's C++/CUDA snippet functions, accepted so that Warp code imports; a
kernel or a Python call that uses one raises a clear error (gradloom compiles through LLVM and
has no C++ compiler to build a snippet with). The few standard snippets libraries cannot avoid
are recognised and given their meaning instead: a block barrier (`WP_TILE_SYNC();`,
`__syncthreads();`) does nothing, since a tile block is one thread here (Warp's CPU rule)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from ..errors import CompileError, GradloomError

#: snippets (comments and whitespace dropped) that mean nothing with one thread per block
_BARRIERS = frozenset({"WP_TILE_SYNC();", "__syncthreads();"})


def _meaning(snippet: str) -> str | None:
    """'barrier' for a standard block-barrier snippet; None for any other code."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", snippet, flags=re.S)
    code = "".join(code.split())
    return "barrier" if code in _BARRIERS else None


class NativeFunction:
    """A `@wp.func_native` stub: the snippets are kept, never compiled."""

    def __init__(self, pyfunc: Any, snippet: str, adj_snippet: str | None,
                 replay_snippet: str | None) -> None:
        self.pyfunc = pyfunc
        self.key = pyfunc.__qualname__
        self.snippet, self.adj_snippet, self.replay_snippet = snippet, adj_snippet, replay_snippet
        functools.update_wrapper(self, pyfunc)

    def error(self) -> GradloomError:
        return GradloomError(f"{self.key}() is a @wp.func_native function (a C++/CUDA "
                             "snippet); gradloom compiles kernels through LLVM and cannot run "
                             "native snippets: write it as a @wp.func")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self.error()

    def __gl_call__(self, lowerer: Any, ctx: Any, node: Any, args: Any, kwargs: Any) -> Any:
        """A call in kernel code: a recognised barrier is a no-op; anything else the error, at
        the call's line."""
        if _meaning(self.snippet) == "barrier" and not args and not kwargs:
            return None
        raise CompileError(str(self.error()), ctx.loc)

    def __repr__(self) -> str:
        return f"<gradloom native func {self.key}>"


def func_native(snippet: str, adj_snippet: str | None = None,
                replay_snippet: str | None = None) -> Callable[[Any], NativeFunction]:
    """Decorator: Warp's native-snippet function. Accepted so that code defining one imports;
    calling it (from a kernel or from Python) raises a GradloomError naming the function."""
    if not isinstance(snippet, str):
        raise GradloomError(f"wp.func_native() takes the snippet source as a string, got "
                            f"{type(snippet).__name__}")
    return lambda pyfunc: NativeFunction(pyfunc, snippet, adj_snippet, replay_snippet)
