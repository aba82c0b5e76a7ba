"""`@wp.func_native`: Warp's C++/CUDA snippet functions, accepted so that Warp code imports; a
kernel or a Python call that uses one raises a clear error (gradloom compiles through LLVM and
has no C++ compiler to build a snippet with). The few standard snippets libraries cannot avoid
are recognised by their CPU code (what Warp's CPU build compiles: the `#else` branch of an
`#if defined(__CUDA_ARCH__)`) and given their meaning instead: a block barrier
(`WP_TILE_SYNC();`, `__syncthreads();`) does nothing, since a tile block is one thread here
(Warp's CPU rule); `return __builtin_ctzll(x);` counts a 64-bit integer's trailing zero bits;
`return 1.0f / sqrtf(x);` is the float32 reciprocal square root; `return x;` (a warp shuffle or
reduction's CPU branch: one lane) gives back its parameter, `return 0x7FFF...ull;` its
integer constant, of the declared return type, and `return (uint64_t)arr.data;` an array
parameter's data address (Warp's `arr.ptr`). A recognised snippet is differentiated as what it
computes (Warp: by its `adj_snippet`, none here: zero)."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any

from ..builtins.values import ArrayVal, Ctx, scalar
from ..errors import CompileError, GradloomError
from ..types import ScalarType, float32, int32, resolve_annotation, uint64
from ..types.scalars import wrap_int

#: snippets (comments and whitespace dropped) that mean nothing with one thread per block, or
#: whose CPU code is empty (`#if defined(__CUDA_ARCH__) __syncwarp(...); #endif`)
_BARRIERS = frozenset({"WP_TILE_SYNC();", "__syncthreads();", ""})
#: `return (uint64_t)arr.data;`: the array parameter's name
_DATA = re.compile(r"return(?:\((?:uint64_t|unsignedlonglong|size_t)\))?(\w+)\.data;")
#: `return 0x7FFFFFFFFFFFFFFFull;`: a C integer literal, its suffixes dropped
_CONSTANT = re.compile(r"return(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*;")
#: `return __builtin_ctzll(x);`, the argument maybe cast: its name
_CTZ = re.compile(r"return__builtin_ctzll\((?:\((?:unsigned|long|int)+\))?(\w+)\);")
#: `return 1.0f / sqrtf(x);`: its argument's name
_RSQRT = re.compile(r"return1(?:\.0?)?f/sqrtf\((\w+)\);")


def _cpu_code(snippet: str) -> str:
    """The snippet's code for the CPU, comments and whitespace dropped."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", snippet, flags=re.S)
    cuda = re.search(r"#if\s*defined\s*\(\s*__CUDA_ARCH__\s*\)(.*?)(?:#else(.*?))?#endif", code,
                     flags=re.S)
    if cuda is not None:
        code = code[:cuda.start()] + (cuda.group(2) or "") + code[cuda.end():]
    return "".join(code.split())


def _meaning(snippet: str, params: list[str]) -> tuple[str, int] | None:
    """('barrier', 0), ('ctz', 0) (the trailing zero bits of the only parameter), ('rsqrt', 0)
    (its float32 reciprocal square root), ('param', index) (returns that parameter), ('data',
    index) (that array parameter's data address),
    ('constant', value) (returns an integer literal) or None for any other code."""
    code = _cpu_code(snippet)
    if code in _BARRIERS:
        return "barrier", 0
    for name, pattern in (("ctz", _CTZ), ("rsqrt", _RSQRT)):
        found = pattern.fullmatch(code)
        if found is not None and params == [found.group(1)]:
            return name, 0
    if code.startswith("return") and code[6:-1] in params and code.endswith(";"):
        return "param", params.index(code[6:-1])
    data = _DATA.fullmatch(code)
    if data is not None and data.group(1) in params:
        return "data", params.index(data.group(1))
    literal = _CONSTANT.fullmatch(code)
    if literal is not None:
        return "constant", int(literal.group(1), 0)
    return None


def count_trailing_zeros(ctx: Ctx, x: Any) -> Any:
    """The number of trailing zero bits of x as a uint64 (64 for 0, as x86's tzcnt), as int32:
    the set bits of (x & -x) - 1."""
    v = scalar(ctx, x, uint64)
    if v.type != uint64:
        v = ctx.op("cast", v, type=uint64)
    lowest = ctx.op("and", v, ctx.op("sub", ctx.const(0, uint64), v))
    below = ctx.op("sub", lowest, ctx.const(1, uint64))
    return ctx.op("cast", ctx.op("popcount", below), type=int32)


def _as(ctx: Ctx, value: Any, t: ScalarType) -> Any:
    """value as a scalar of type t (C's conversion at a snippet's parameter or return)."""
    v = scalar(ctx, value, t)
    return v if v.type == t else ctx.op("cast", v, type=t)


def _signature(pyfunc: Any) -> inspect.Signature:
    """pyfunc's signature, string annotations evaluated where they can be."""
    try:
        return inspect.signature(pyfunc, eval_str=True)
    except Exception:  # an annotation that does not evaluate: left as written
        return inspect.signature(pyfunc)


def _scalar_annotation(annotation: Any) -> ScalarType | None:
    """The scalar type a snippet's return annotation names (`-> wp.uint64`, `-> float`), or
    None (no annotation, or not a scalar)."""
    if annotation is inspect.Signature.empty:
        return None
    try:
        t = resolve_annotation(annotation)
    except TypeError:
        return None
    return t if isinstance(t, ScalarType) else None


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
        signature = _signature(self.pyfunc)
        meaning, detail = _meaning(self.snippet, list(signature.parameters)) or ("", 0)
        if kwargs:
            raise CompileError(str(self.error()), ctx.loc)
        if meaning == "barrier" and not args:
            return None
        if meaning == "ctz" and len(args) == 1:
            return count_trailing_zeros(ctx, args[0])
        if meaning == "rsqrt" and len(args) == 1:
            return ctx.op("div", ctx.const(1.0, float32), ctx.op("sqrt", _as(ctx, args[0], float32)))
        returns = _scalar_annotation(signature.return_annotation)
        if meaning == "param" and len(args) == len(signature.parameters):
            return args[detail] if returns is None else _as(ctx, args[detail], returns)
        if meaning == "data" and len(args) == len(signature.parameters) and \
                isinstance(args[detail], ArrayVal) and not args[detail].indices:
            return ctx.op("cast", args[detail].data, type=uint64)
        if meaning == "constant" and returns is not None and returns.is_int and not args:
            return ctx.const(wrap_int(detail, returns.np_dtype).item(), returns)
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
