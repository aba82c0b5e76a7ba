"""`wp.map(func, *inputs, out=...)`: apply a @wp.func, a builtin or a Python lambda element by
element over arrays (numpy broadcasting), through a generated kernel — Warp 1.19's `wp.map`.

Also `create_warp_function(callable)`: the @wp.func made from a lambda or plain function.
Generated kernels are cached per function and argument layout, and launch like any kernel (so
they are recorded on a Tape, and captured into graphs).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import inspect
import linecache
import textwrap
import types
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ..builtins.registry import REGISTRY
from ..codegen import python_src
from ..errors import CompileError
from ..frontend.func import Function
from ..frontend.func import define as make_func
from ..kernel import Kernel
from ..kernel_decl import kernel
from ..runtime.array.arith import ELEMENTWISE
from ..runtime.array.array import array
from ..runtime.array.fabric import fabricarray, indexedfabricarray
from ..runtime.array.indexed import indexedarray
from ..runtime.array.ops import empty
from ..runtime.launch.launch import launch
from ..types import StructType, type_of_constant
from ..types.query import scalar_of, type_name

# --------------------------------------------------------------------------------------------
# Functions from Python callables


def _compile(source: str, name: str, namespace: dict[str, Any]) -> Any:
    """Define `name` from generated source; its text is registered with linecache so the
    frontend (and error messages) can read it like a file."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    filename = f"<gradloom generated {name} {digest}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


def _lambda_node(fn: Callable[..., Any]) -> ast.Lambda:
    """The lambda expression `fn` was made from, found in its source file."""
    code = fn.__code__
    names = list(code.co_varnames[: code.co_argcount])
    candidates: list[ast.Lambda] = []
    for tree in _source_trees(fn):
        candidates = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
                      and [a.arg for a in n.args.args] == names
                      and getattr(n, "lineno", code.co_firstlineno) in (code.co_firstlineno, 1)]
        if candidates:
            break
    if len(candidates) != 1:
        raise TypeError(f"cannot find the source of {fn!r} unambiguously (define it on its own "
                        "line, or use a @wp.func)")
    return candidates[0]


def _source_trees(fn: Callable[..., Any]) -> list[ast.AST]:
    """Parsed source that contains the lambda: the whole file, else the lines around it."""
    trees: list[ast.AST] = []
    lines = linecache.getlines(fn.__code__.co_filename)
    if lines:
        with contextlib.suppress(SyntaxError):
            trees.append(ast.parse("".join(lines)))
    try:
        text = textwrap.dedent(inspect.getsource(fn)).strip()
    except (OSError, TypeError):
        return trees
    for attempt in (text, f"({text})", text.rstrip(",)")):
        try:
            trees.append(ast.parse(attempt))
            break
        except SyntaxError:
            continue
    return trees


def create_warp_function(fn: Callable[..., Any]) -> tuple[Function, None]:
    """A kernel-language function (@wp.func) made from a lambda or a plain Python function; the
    second item (Warp's module) is None. Free names resolve in the callable's globals and
    closure (captured values are read when the function is made)."""
    if isinstance(fn, Function):
        return fn, None
    if not callable(fn) or not hasattr(fn, "__code__"):
        raise TypeError("func must be a callable function or a warp.Function")
    if fn.__name__ != "<lambda>":
        return make_func(fn), None
    node = _LAMBDA_NODES.get(fn.__code__)
    if node is None:
        node = _LAMBDA_NODES[fn.__code__] = _lambda_node(fn)
    name = f"func_{hashlib.sha256(ast.dump(node).encode()).hexdigest()[:16]}"
    key = (name, id(fn.__globals__), *(_frozen(cell) for cell in fn.__closure__ or ()))
    made = _LAMBDAS.get(key)
    if made is None:
        made = _LAMBDAS[key] = _function_from_lambda(fn, node, name)
    return made, None


#: memos, as Warp keys functions made from lambdas by their source: a lambda's code → its
#: syntax tree, and (source, module, captured values) → the @wp.func made from it — so the same
#: lambda written again (or inside a loop) reuses one function and one compiled kernel
_LAMBDA_NODES: weakref.WeakKeyDictionary[Any, ast.Lambda] = weakref.WeakKeyDictionary()
_LAMBDAS: dict[tuple[Any, ...], Function] = {}


def _frozen(cell: Any) -> Any:
    try:
        value = cell.cell_contents
    except ValueError:
        return None
    if isinstance(value, (bool, int, float, complex, str, bytes, type(None))):
        return (type(value), value)
    return ("id", id(value))  # objects (arrays, functions, types) by identity


def _function_from_lambda(fn: Callable[..., Any], node: ast.Lambda, name: str) -> Function:
    namespace = dict(fn.__globals__)
    for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
        try:
            namespace[var] = cell.cell_contents
        except ValueError:
            continue
    return make_func(_compile(python_src.lambda_as_function(name, node), name, namespace))


# --------------------------------------------------------------------------------------------
# Types and shapes


def _value_type(value: Any) -> Any:
    st = getattr(type(value), "__gl_type__", None)
    t = st if st is not None else type_of_constant(value)
    if t is None:
        raise TypeError(f"wp.map(): cannot pass {value!r} ({type(value).__name__}) to a "
                        "kernel-language function")
    return t


def _dtype_arg(t: Any) -> Any:
    """A type as `wp.array(dtype=...)` takes it (struct types as their class)."""
    return t.cls if isinstance(t, StructType) else t


def broadcast_shapes(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """numpy's broadcasting of several shapes; ValueError (Warp's message) when impossible."""
    ref = tuple(shapes[0])
    for shape in shapes[1:]:
        out = []
        for j in range(1, max(len(ref), len(shape)) + 1):
            r = ref[-j] if j <= len(ref) else 1
            s = shape[-j] if j <= len(shape) else 1
            if r != s and 1 not in (r, s):
                raise ValueError(f"Shapes {ref} and {tuple(shape)} are not broadcastable")
            out.append(max(r, s) if 1 in (r, s) else r)
        ref = tuple(reversed(out))
    return ref


def _name(fn: Any) -> str:
    """The function's name as Warp's messages spell it."""
    key = getattr(fn, "key", None) or getattr(fn, "__name__", None) or repr(fn)
    return str(key).replace("<", "").replace(">", "").replace(".", "__")


@functools.lru_cache(maxsize=1024)
def _result_types(fn: Any, arg_types: tuple[Any, ...]) -> tuple[Any, ...]:
    """The types `fn` returns for these argument types (found by lowering a typed call)."""
    from ..builtins.values import type_of
    from ..frontend.lower import Lowerer, param_value
    from ..ir.builder import Builder
    from ..types import arg_offsets

    if isinstance(fn, Function) and not any(
            isinstance(n, ast.Return) and n.value is not None
            for o in fn.overloads for n in ast.walk(o.info.tree)):
        raise TypeError("The provided function must return a value")
    namespace: dict[str, Any] = {"_fn": fn, **{f"_In{k}": t for k, t in enumerate(arg_types)}}
    probe = make_func(_compile(python_src.typed_call("map_probe", len(arg_types)), "map_probe",
                               namespace))
    info = probe.info
    b, loc = Builder(), info.loc(info.tree)
    offsets, _ = arg_offsets(list(arg_types))
    env = {f"v{k}": param_value(b, t, off, loc) for k, (t, off) in enumerate(zip(arg_types,
                                                                               offsets))}
    try:
        value = Lowerer(b, info, env, [probe], [], False).lower_function()
    except CompileError:
        raise TypeError(f"Function {_name(fn)} does not support the provided argument types "
                        f"{', '.join(type_name(t) for t in arg_types)}") from None
    if value is None:
        raise TypeError("The provided function must return a value")
    t = type_of(value)
    return tuple(t) if isinstance(t, tuple) else (t,)


# --------------------------------------------------------------------------------------------
# The kernel


#: the generated kernels by function, argument layout and result types (Warp's `map_cache`)
map_cache: dict[tuple[Any, ...], Kernel] = {}


def _map_kernel(fn: Any, inputs: tuple[Any, ...], out_types: tuple[Any, ...], ndim: int
                ) -> Kernel:
    """inputs: per argument ("array", dtype, ndim, broadcast mask, indexed) or ("value",
    type); out_types: per output (dtype, indexed)."""
    key = (fn, inputs, out_types, ndim)
    cached = map_cache.get(key)
    if cached is None:
        cached = map_cache[key] = _build_map_kernel(fn, inputs, out_types, ndim)
    return cached


def _build_map_kernel(fn: Any, inputs: tuple[Any, ...], out_types: tuple[Any, ...], ndim: int
                      ) -> Kernel:
    namespace: dict[str, Any] = {"wp": _KERNEL_NAMES, "_fn": fn}
    layout: list[tuple[int, ...] | None] = []
    for k, desc in enumerate(inputs):
        if desc[0] == "array":
            _, dtype, n, mask, kind = desc
            namespace[f"_In{k}"] = kind(dtype=_dtype_arg(dtype), ndim=n)
            layout.append(mask)
        else:
            namespace[f"_In{k}"] = desc[1]
            layout.append(None)
    for k, (t, kind) in enumerate(out_types):
        namespace[f"_Out{k}"] = kind(dtype=_dtype_arg(t), ndim=ndim)
    source = python_src.map_kernel(ndim, layout, len(out_types))
    return kernel(_compile(source, "map_kernel", namespace))  # type: ignore[no-any-return]


#: what the generated kernels' source calls through `wp.` (codegen/python_src.py)
_KERNEL_NAMES = types.SimpleNamespace(tid=REGISTRY["tid"])


def _resolve(fn: Any) -> Any:
    """The function as a kernel can call it: a @wp.func or builtin as is, else a new @wp.func."""
    if isinstance(fn, Function) or getattr(type(fn), "__module__", "").startswith(
            "gradloom.builtins"):
        return fn
    if not callable(fn):
        raise TypeError("func must be a callable function or a warp.Function")
    return create_warp_function(fn)[0]


#: the array classes map takes; each input is annotated with its family's class
_ARRAYS = (array, indexedarray, fabricarray, indexedfabricarray)


def _family(value: Any) -> type:
    """The array class a value's kernel parameter is annotated with (a subclass's family)."""
    return next(k for k in (indexedfabricarray, fabricarray, indexedarray, array)
                if isinstance(value, k))


def _check_arity(fn: Any, n: int) -> None:
    if isinstance(fn, Function):
        expected = len(fn.param_types())
        if expected != n:
            raise TypeError(f"Number of input arguments ({n}) does not match expected number of "
                            f"function arguments ({expected})")


def map(func: Any, *inputs: Any, out: Any = None, return_kernel: bool = False,
        block_dim: int | None = None, device: Any = None) -> Any:
    """Apply `func` to the elements of the array inputs (other inputs are passed as they
    are); array shapes broadcast as in numpy. Returns the new output array(s), or fills `out`
    (an array, or a list for a function returning a tuple)."""
    fn = _resolve(func)
    _check_arity(fn, len(inputs))
    descs: list[tuple[Any, ...]] = []
    arg_types: list[Any] = []
    shapes: list[tuple[int, ...]] = []
    for value in inputs:
        if isinstance(value, _ARRAYS):
            shapes.append(value.shape)
            descs.append(("array", value.dtype, value.ndim,
                          tuple(bool(n == 1) for n in value.shape), _family(value)))
            arg_types.append(value.dtype)
        else:
            t = _value_type(value)
            descs.append(("value", t))
            arg_types.append(t)
    if not shapes:
        raise ValueError("map requires at least one warp.array input")
    out_types = _result_types(fn, tuple(arg_types))
    shape = broadcast_shapes(shapes)
    outputs = _outputs(out, out_types, shape, inputs)
    kinds = tuple((t, _family(o)) for t, o in zip(out_types, outputs, strict=True))
    k = _map_kernel(fn, tuple(descs), kinds, len(shape))
    if return_kernel:
        return k
    launch(k, dim=shape, inputs=[*inputs, *outputs], device=device, block_dim=block_dim)
    return outputs[0] if len(outputs) == 1 else outputs


def _outputs(out: Any, types: tuple[Any, ...], shape: tuple[int, ...],
             inputs: Sequence[Any]) -> list[Any]:
    if out is None:
        grad = any(isinstance(a, array) and a.requires_grad for a in inputs)
        return [empty(shape, dtype=_dtype_arg(t), requires_grad=grad and _differentiable(t))
                for t in types]
    if isinstance(out, _ARRAYS) and len(types) == 1:
        _check_output(out, types[0], shape, "")
        return [out]
    if len(types) > 1 and isinstance(out, (list, tuple)):
        if len(out) != len(types):
            raise TypeError(f"Number of provided output arrays ({len(out)}) does not match "
                            f"expected number of function outputs ({len(types)})")
        for i, (o, t) in enumerate(zip(out, types, strict=True)):
            _check_output(o, t, shape, f" {i}")
        return list(out)
    raise TypeError(f"Invalid output provided, expected {len(types)} Warp arrays with shape "
                    f"{shape} and dtypes ({', '.join(type_name(t) for t in types)})")


def _check_output(o: Any, t: Any, shape: tuple[int, ...], which: str) -> None:
    if not isinstance(o, _ARRAYS):
        raise TypeError(f"Output array{which} must be a gradloom array, got {type(o).__name__}")
    if o.dtype != t:
        raise TypeError(f"Output array{which} dtype {type_name(o.dtype)} does not match "
                        f"expected dtype {type_name(t)}")
    if o.shape != shape:
        raise TypeError(f"Output array{which} shape {o.shape} does not match expected shape "
                        f"{shape}")


def _differentiable(t: Any) -> bool:
    st = scalar_of(t)
    return st is not None and st.is_float


@ELEMENTWISE.fill
def map_builtin(name: str, *operands: Any, out: Any = None, return_kernel: bool = False) -> Any:
    """`wp.map` of the builtin called `name` (what an array operator such as `a + b` means)."""
    return map(REGISTRY[name], *operands, out=out, return_kernel=return_kernel)
