"""`@wp.kernel` and `wp.overload`: declaring kernels — options checked as Warp checks them,
`module="unique"` kernels deduplicated by content — and adding overloads of generic ones."""

from __future__ import annotations

import ast
import inspect
import textwrap
import weakref
from typing import Any

from .errors import GradloomError
from .frontend.func import refuse_array_instances
from .kernel import Kernel
from .modules import discard_module, get_module, kernel_options


def kernel(f: Any = None, *, name: str | None = None, enable_backward: bool | None = None,
           module: Any = None, module_options: dict[str, Any] | None = None,
           **cuda_options: Any) -> Any:
    """Decorator: `@wp.kernel`, or `@wp.kernel(enable_backward=False, module="unique",
    module_options={...}, name="key")` as in Warp. CUDA-only options (`launch_bounds`,
    `cuda_max_registers`, `cluster_dim`, `grid_stride`, ...) are accepted and kept in
    `kernel.options`; they change nothing on the CPU."""
    unknown = set(cuda_options) - _CUDA_OPTIONS
    if unknown:
        raise TypeError(f"wp.kernel() got unexpected keyword arguments {sorted(unknown)}")
    if name is not None and not name.isidentifier():
        raise ValueError(f"kernel name {name!r} is not a valid C++ identifier")
    if module_options is not None and module != "unique":
        raise ValueError("module_options requires module=\"unique\"; for a shared module use "
                         "wp.set_module_options()")
    _check_entry_point_abi(cuda_options.get("entry_point_abi"), enable_backward)

    def make(fn: Any) -> Kernel:
        refuse_array_instances(fn)
        options = kernel_options(cuda_options)
        k = Kernel(fn, key=name, module=module, options=options, enable_backward=enable_backward)
        if module_options is not None:
            k.module.check_option_names(module_options)
            k.module.set_options(module_options)
        return _deduplicated(k) if module == "unique" else k

    return make if f is None else make(f)


#: `module="unique"` kernels by content: declaring the same kernel again (same source, same
#: captured values, options) gives the kernel declared first, as in Warp
_UNIQUE: weakref.WeakValueDictionary[str, Kernel] = weakref.WeakValueDictionary()


def _deduplicated(k: Kernel) -> Kernel:
    try:
        sig = (f"{k.key}|{k.content_hash()}|{sorted(k.options.items())!r}|"
               f"{sorted(k.module.options.items())!r}")
    except (GradloomError, TypeError, NameError):
        return k  # not hashable now (e.g. its source is unavailable): keep the new one
    old = _UNIQUE.get(sig)
    if old is not None and old.is_generic == k.is_generic:
        discard_module(k.module)
        return old
    _UNIQUE[sig] = k
    return k


def _check_entry_point_abi(abi: Any, enable_backward: bool | None) -> None:
    """Warp's checks of `entry_point_abi` at declaration: a known value, and the
    external-constant-parameters entry (a CUDA-only ABI) only for forward-only kernels."""
    if abi is None or abi == "warp":
        return
    if abi != "external_constant_params":
        raise ValueError(f"entry_point_abi must be 'warp' or 'external_constant_params', "
                         f"got {abi!r}")
    if enable_backward is not False:
        raise ValueError("entry_point_abi='external_constant_params' requires "
                         "enable_backward=False")


_CUDA_OPTIONS = {"launch_bounds", "cuda_max_registers", "enable_cuda_smem_spilling",
                 "cluster_dim", "entry_point_abi", "grid_stride"}


def overload(kernel: Any, arg_types: list[Any] | dict[str, Any] | None = None) -> Kernel:
    """Warp's `wp.overload`: a concrete overload of a generic kernel, from a list of parameter
    types or a {name: type} dict for some of them. As a decorator on a body-less function of
    the generic kernel's name, it adds the overload its annotations give and returns the
    generic kernel."""
    if isinstance(kernel, Kernel):
        if not kernel.is_generic:
            raise RuntimeError(f"Only generic kernels can be overloaded. Kernel {kernel.key} is "
                               "not generic")
        return kernel.add_overload(_overload_types(kernel, arg_types))
    if not inspect.isfunction(kernel):
        raise RuntimeError("wp.overload() takes a generic kernel, or decorates an overload stub")
    found = get_module(kernel.__module__).find_kernel(kernel)
    if found is None:
        raise RuntimeError(f"Failed to find a kernel named '{kernel.__name__}' in module "
                           f"{kernel.__module__}")
    overload(found, stub_types(kernel))
    return found  # type: ignore[no-any-return]


def _overload_types(kernel: Kernel, arg_types: Any) -> list[Any]:
    if isinstance(arg_types, list):
        return arg_types
    if arg_types is None:
        return []
    if not isinstance(arg_types, dict):
        raise TypeError("Kernel overload types must be given in a list or dict")
    names = [n for n, _ in kernel.params]
    types = [t for _, t in kernel.params]
    for name, t in arg_types.items():
        if name not in names:
            raise RuntimeError(f"Invalid argument name '{name}' in overload of kernel "
                               f"{kernel.key}")
        types[names.index(name)] = t
    return types


def stub_types(fn: Any) -> list[Any]:
    """The parameter annotations of an `@wp.overload` stub (a body of `...`, `pass` or a
    docstring only)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise RuntimeError(f"Kernel overload '{fn.__name__}' must be a function definition")
    for node in fdef.body:
        if not (isinstance(node, ast.Pass) or (isinstance(node, ast.Expr) and isinstance(
                node.value, ast.Constant) and (node.value.value is ... or isinstance(
                    node.value.value, str)))):
            raise RuntimeError("Illegal statement in kernel overload definition. Only pass, "
                               "ellipsis (...), comments, or docstrings are allowed")
    sig = inspect.signature(fn, eval_str=True)
    if sig.return_annotation not in (inspect.Signature.empty, None, type(None)):
        raise TypeError("Return annotations are not allowed on @wp.overload stubs; omit the "
                        "return annotation or use `-> None`.")
    anns = [p.annotation for p in sig.parameters.values()]
    if any(a is inspect.Parameter.empty for a in anns):
        raise RuntimeError(f"Incomplete argument annotations on kernel overload {fn.__name__}")
    return anns


__all__ = ["kernel", "overload", "stub_types"]
