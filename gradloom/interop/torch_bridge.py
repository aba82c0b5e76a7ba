"""The `gradloom.torch` autograd bridge: kernels and kernel-launching functions as torch ops.

`function(f)` returns a callable that takes torch tensors, runs `f` on zero-copy gradloom views
of them under a `wp.Tape`, and returns torch tensors that carry a `torch.autograd.Function`
node. That node's backward seeds the outputs' gradients from (a copy of) `grad_outputs`,
replays the tape, and returns fresh gradient tensors; torch alone accumulates them into leaf
`.grad`s. So backward is re-entrant (`retain_graph`), never writes `grad_outputs`, inputs or
leaf gradients itself, and counts nothing twice. Forward mode (`torch.func.jvp`,
`torch.autograd.forward_ad`) runs the function's tangent kernels, and a backward with
`create_graph=True` is itself differentiable (double backward: Hessian-vector products); both
through `gradloom.torch_forward`, reached by the `TANGENTS` and `VJP_GRADS` hooks (forward mode sits above
interop).
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

import numpy as np

from gradloom.errors import GradloomError
from gradloom.hooks import Hook
from gradloom.interop.torch import _tensor_of, torch_module
from gradloom.runtime.array.array import array, elem_shape
from gradloom.runtime.array.foreign import wrap_tensor
from gradloom.runtime.array.ops import clone, zeros
from gradloom.runtime.array.watch import Watch
from gradloom.runtime.launch.launch import launch
from gradloom.runtime.tape.tape import Tape
from gradloom.types import ArrayType

ShapeSpec = str | int | tuple[int, ...] | Callable[..., Any] | None

#: jvp(fn, arrays, tangents) -> output tangents, and vjp_grads(fn, arrays, grad_outputs, u)
#: -> (J u per output, H u per input): forward mode and HVPs for torch (torch_forward.py)
#: what `_forward` hands the `setup_context` calls torch makes after it (one per torch.func
#: transform level, which may see the outputs wrapped, so nothing rides on them); `op`
#: clears it when the call returns
_PENDING: ContextVar[tuple[Any, ...] | None] = ContextVar("gl_torch_pending", default=None)

#: forward mode of a gradloom.torch function: (fn, arrays, seeds) -> output tangents
TANGENTS: Hook[Any] = Hook("forward mode of gradloom.torch functions", "gradloom.torch_forward")
#: double backward: (fn, arrays, weights, u) -> (vjp, its derivative along u)
VJP_GRADS: Hook[Any] = Hook("double backward of gradloom.torch functions",
                            "gradloom.torch_forward")


class _ReadOnly(Watch):
    """Refuses writes into a bridge function's input while it runs."""

    def __init__(self, a: array, label: str) -> None:
        super().__init__(a)
        self.label = label

    def preserve(self) -> None:
        raise GradloomError(f"{self.label} is an input of a gradloom.torch function, and "
                            "inputs are read-only (copy it with wp.clone first)")


class _Spec:
    """What one bridged function needs: the function, its name and input dtypes."""

    def __init__(self, fn: Callable[..., Any], name: str, dtypes: Mapping[int, Any]) -> None:
        self.fn, self.name, self.dtypes = fn, name, dict(dtypes)
        self.lock = threading.Lock()


# --------------------------------------------------------------------------------------------
# forward and backward


def _inputs(spec: _Spec, args: Sequence[Any], needs: Sequence[bool]) -> list[Any]:
    """Tensors as zero-copy arrays, with private zeroed gradients where torch needs one."""
    torch = torch_module()
    out: list[Any] = []
    for i, (value, need) in enumerate(zip(args, needs)):
        if isinstance(value, torch.Tensor):
            what = f"{spec.name}: argument {i}"
            value = wrap_tensor(value, spec.dtypes.get(i), requires_grad=False, what=what)
            value.requires_grad = need
        out.append(value)
    return out


def _outputs(spec: _Spec, result: Any) -> list[array]:
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    for k, o in enumerate(outs):
        if not isinstance(o, array):
            raise GradloomError(f"{spec.name}: output {k} is a {type(o).__name__}; a "
                                "gradloom.torch function returns gradloom arrays")
    return outs


def _output_tensor(torch: Any, o: array, inputs: Sequence[Any]) -> Any:
    """Zero-copy, except for an output sharing memory with an input (copied: outputs of a
    torch op must not alias its inputs). A CUDA output goes through DLPack."""
    aliased = any(isinstance(a, array) and a._mem is o._mem for a in inputs)
    if not o.device.backend.host_memory:
        t = torch.from_dlpack(o if o.is_contiguous else o.contiguous())
        return t.clone() if aliased else t
    data = o.numpy()
    if aliased or any(s < 0 for s in data.strides):
        data = np.ascontiguousarray(data).copy()
    return _tensor_of(torch, data, "gradloom.torch output")


def _forward(spec: _Spec, args: tuple[Any, ...]) -> Any:
    """Run the function on views of the tensors (under a Tape where a tensor needs a
    gradient); the output tensors, the first carrying what `_setup` keeps on ctx."""
    torch = torch_module()
    needs = [isinstance(a, torch.Tensor) and a.requires_grad for a in args]
    arrays = _inputs(spec, args, needs)
    guards = [_ReadOnly(a, f"{spec.name}: argument {i}") for i, a in enumerate(arrays)
              if isinstance(a, array)]
    tape = Tape() if any(needs) else None
    if tape is not None:
        with tape:
            outs = _outputs(spec, spec.fn(*arrays))
    else:
        outs = _outputs(spec, spec.fn(*arrays))
    del guards
    tensors = [_output_tensor(torch, o, arrays) for o in outs]
    for o, t in zip(outs, tensors):
        if tape is not None and t.is_floating_point() and o.grad is None:
            raise GradloomError(f"{spec.name}: an output has no gradient buffer; allocate "
                                "outputs with requires_grad=True")
    _PENDING.set((spec, tape, arrays, outs))
    return tensors[0] if len(tensors) == 1 else tuple(tensors)


def _setup(ctx: Any, args: tuple[Any, ...], output: Any) -> None:
    torch = torch_module()
    tensors = list(output) if isinstance(output, tuple) else [output]
    pending = _PENDING.get()  # torch.func calls setup_context once per transform level
    assert pending is not None, "setup_context runs after forward, inside `op`"
    ctx.spec, ctx.tape, ctx.arrays, ctx.outs = pending
    for t in tensors:
        if not t.is_floating_point():
            ctx.mark_non_differentiable(t)
    ctx.shapes = [tuple(a.shape) if isinstance(a, torch.Tensor) else None for a in args]
    ctx.save_for_backward(*(a for a in args if isinstance(a, torch.Tensor)), *tensors)


def _jvp(ctx: Any, tangents: Sequence[Any]) -> Any:
    """Output tangents from input tangents (tensors or None): the tangent kernels."""
    torch = torch_module()
    seeds = [None if t is None or not isinstance(a, array) else _host(t)
             for a, t in zip(ctx.arrays, tangents)]
    with ctx.spec.lock:
        touts = TANGENTS.get()(ctx.spec.fn, ctx.arrays, seeds)
    out = [torch.zeros(o.numpy().shape, dtype=torch.float64) if t is None
           else torch.from_numpy(np.array(t, copy=True)) for o, t in zip(ctx.outs, touts)]
    return out[0] if len(out) == 1 else tuple(out)


def _host(t: Any) -> Any:
    """A tensor's values as numpy (a torch.func transform's wrappers taken off first)."""
    torch = torch_module()
    functorch = torch._C._functorch
    while functorch.is_functorch_wrapped_tensor(t):
        t = functorch.get_unwrapped(t)
    with torch._C._DisableFuncTorch():  # detach() would wrap it again
        return t.detach().cpu().numpy()


def _backward(ctx: Any, grad_outputs: Sequence[Any]) -> tuple[Any, ...]:
    torch = torch_module()
    saved = ctx.saved_tensors  # raises if an input or output was modified in place
    if torch.is_grad_enabled():  # create_graph=True: the gradients are differentiable too
        inputs = saved[:len(saved) - len(ctx.outs)]
        grads = _vjp_class().apply(ctx, len(grad_outputs), *grad_outputs, *inputs)
        it = iter(grads if isinstance(grads, tuple) else (grads,))
        return (None, *(next(it) if need and isinstance(a, array) and a.grad is not None
                        else None for a, need in zip(ctx.arrays, ctx.needs_input_grad[1:])))
    return _gradients(ctx, grad_outputs)


def _gradients(ctx: Any, grad_outputs: Sequence[Any]) -> tuple[Any, ...]:
    """(None for spec, then each input's gradient or None): the tape run backwards."""
    torch = torch_module()
    spec, tape = ctx.spec, ctx.tape
    with spec.lock:
        tape.zero()
        for a in ctx.arrays:
            if isinstance(a, array) and a.grad is not None:
                a.grad.zero_()
        seeds = {o: _seed_of(o, go) for o, go in zip(ctx.outs, grad_outputs)
                 if go is not None and o.grad is not None}
        if seeds:
            tape.backward(grads=seeds)
        grads: list[Any] = [None]  # for `spec`
        for a, need, shape in zip(ctx.arrays, ctx.needs_input_grad[1:], ctx.shapes):
            if not need or not isinstance(a, array) or a.grad is None:
                grads.append(None)
            else:  # a fresh tensor: torch may keep it as a leaf's .grad
                grads.append(_grad_tensor(torch, a.grad).reshape(shape))
    return tuple(grads)


def _seed_of(o: array, go: Any) -> Any:
    """An output's seed from torch's grad_output: numpy values, or for a CUDA output a CUDA
    array over the tensor (copied into the gradient on the device)."""
    full = (*o.shape, *elem_shape(o.dtype))
    if not o.device.backend.host_memory:
        return wrap_tensor(go.detach().contiguous().reshape(full), o.dtype,
                           requires_grad=False, what="grad_output")
    return go.detach().numpy().reshape(full)


def _grad_tensor(torch: Any, g: array) -> Any:
    """A fresh tensor holding a gradient's values (on its device)."""
    if not g.device.backend.host_memory:
        return torch.from_dlpack(clone(g))
    return torch.from_numpy(np.array(g.numpy(), copy=True))


@functools.cache
def _function_class() -> Any:
    base: Any = torch_module().autograd.Function

    class GradloomFunction(base):  # type: ignore[misc]
        @staticmethod
        def forward(spec: _Spec, *args: Any) -> Any:
            return _forward(spec, args)

        @staticmethod
        def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
            _setup(ctx, inputs[1:], output)

        @staticmethod
        def backward(ctx: Any, *grad_outputs: Any) -> Any:
            return _backward(ctx, grad_outputs)

        @staticmethod
        def jvp(ctx: Any, *tangents: Any) -> Any:
            return _jvp(ctx, tangents[1:])

    return GradloomFunction


@functools.cache
def _vjp_class() -> Any:
    """The gradients of a GradloomFunction as a function of (grad_outputs, inputs), itself
    differentiable: its backward takes u (one per input gradient) to J u for each grad_output
    and to H u (the Hessian of Σ grad_output·output) for each input."""
    base: Any = torch_module().autograd.Function

    class GradloomVJP(base):  # type: ignore[misc]
        @staticmethod
        def forward(vctx: Any, fctx: Any, n_out: int, *rest: Any) -> Any:
            vctx.fctx, vctx.n_out = fctx, n_out
            vctx.gos = [g.detach() if g is not None else None for g in rest[:n_out]]
            grads = [g for g in _gradients(fctx, rest[:n_out])[1:] if g is not None]
            return grads[0] if len(grads) == 1 else tuple(grads)

        @staticmethod
        def backward(vctx: Any, *us: Any) -> Any:
            return _second(vctx, us)

    return GradloomVJP


def _second(vctx: Any, us: Sequence[Any]) -> tuple[Any, ...]:
    """Backward of GradloomVJP: (None, None, J u per grad_output, H u per input)."""
    torch = torch_module()
    fctx = vctx.fctx
    it = iter(us)
    u = [(_host(g) if (g := next(it)) is not None else None)
         if need and isinstance(a, array) and a.grad is not None else None
         for a, need in zip(fctx.arrays, fctx.needs_input_grad[1:])]
    weights = [None if g is None else _host(g) for g in vctx.gos]
    with fctx.spec.lock:
        ju, hu = VJP_GRADS.get()(fctx.spec.fn, fctx.arrays, weights, u)
    as_t = [None if t is None else torch.from_numpy(np.array(t, copy=True)) for t in ju]
    hs = [None if h is None else torch.from_numpy(np.array(h, copy=True)).reshape(shape)
          for h, shape in zip(hu, fctx.shapes) if shape is not None]  # tensor inputs only
    return (None, None, *as_t, *hs)


# --------------------------------------------------------------------------------------------
# the public entry point


def function(target: Any = None, *, outputs: Sequence[str] | Mapping[str, ShapeSpec] | None = None,
             dim: Any = None, dtypes: Mapping[int | str, Any] | None = None) -> Any:
    """A differentiable torch op from a kernel, or from a Python function launching kernels.

    Python function: called with gradloom arrays (zero-copy views of the tensor arguments;
    other arguments as given), it returns a gradloom array or a tuple of them, each allocated
    with `requires_grad=True`. `dtypes` ({position or name: wp type}, default: the function's
    `wp.array(dtype=...)` annotations, else the tensor's scalar type) reads tensors as vectors
    or matrices. Usable as a decorator: `@gradloom.torch.function`.

    Kernel: `outputs` names its output parameters, mapped to their shapes (the name of an
    input parameter: that input's shape; an int or tuple; a callable taking the inputs; or a
    plain list of names: each shaped like the first array input). The op takes the other
    parameters in order and returns the output tensor(s). `dim`: launch dims (an int, a
    tuple, or a callable taking the inputs; default: the first output's shape).
    """
    if target is None:
        return functools.partial(function, outputs=outputs, dim=dim, dtypes=dtypes)
    if hasattr(target, "params") and hasattr(target, "compiled"):
        fn, name, params = _kernel_runner(target, outputs, dim)
    elif callable(target):
        if outputs is not None or dim is not None:
            raise GradloomError("gradloom.torch.function: outputs= and dim= are for kernels; a "
                                "Python function allocates and returns its outputs")
        fn, name = target, getattr(target, "__qualname__", repr(target))
        params = _signature_params(target)
    else:
        raise GradloomError(f"gradloom.torch.function: expected a @wp.kernel or a function, "
                            f"got {type(target).__name__}")
    spec = _Spec(fn, name, _positional_dtypes(params, dtypes))

    @functools.wraps(fn)
    def op(*args: Any, **kwargs: Any) -> Any:
        try:
            return _function_class().apply(spec, *_bind(spec, params, args, kwargs))
        finally:
            _PENDING.set(None)  # every setup_context has run

    op.spec = spec  # type: ignore[attr-defined]
    return op


def _signature_params(fn: Callable[..., Any]) -> list[tuple[str, Any]]:
    try:
        sig = inspect.signature(fn, eval_str=True)
    except Exception:  # string annotations that do not evaluate: no dtypes from them
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return []
    out: list[tuple[str, Any]] = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            break
        ann = p.annotation
        out.append((p.name, ann.dtype if isinstance(ann, array) else None))
    return out


def _positional_dtypes(params: Sequence[tuple[str, Any]],
                       dtypes: Mapping[int | str, Any] | None) -> dict[int, Any]:
    out = {i: t for i, (_, t) in enumerate(params) if t is not None and t is not Any}
    names = [n for n, _ in params]
    for key, t in (dtypes or {}).items():
        if isinstance(key, str):
            if key not in names:
                raise GradloomError(f"gradloom.torch.function: dtypes names unknown parameter "
                                    f"'{key}' (parameters: {', '.join(names)})")
            key = names.index(key)
        out[key] = t
    return out


def _bind(spec: _Spec, params: Sequence[tuple[str, Any]], args: tuple[Any, ...],
          kwargs: Mapping[str, Any]) -> list[Any]:
    """Keyword arguments moved to their positions (autograd.Function takes positions only)."""
    if not kwargs:
        return list(args)
    names = [n for n, _ in params]
    out: list[Any] = list(args) + [_MISSING] * (len(names) - len(args))
    for key, value in kwargs.items():
        if key not in names or names.index(key) < len(args):
            raise GradloomError(f"{spec.name}: unexpected keyword argument '{key}'")
        out[names.index(key)] = value
    missing = [names[i] for i, v in enumerate(out) if v is _MISSING]
    if missing:
        raise GradloomError(f"{spec.name}: missing argument(s) {', '.join(missing)}")
    return out


_MISSING = object()


def _kernel_runner(kernel: Any, outputs: Sequence[str] | Mapping[str, ShapeSpec] | None,
                   dim: Any) -> tuple[Callable[..., Any], str, list[tuple[str, Any]]]:
    """A Python function launching `kernel`: inputs in, freshly allocated outputs back."""
    params = list(kernel.params)
    names = [n for n, _ in params]
    if not outputs:
        raise GradloomError(f"gradloom.torch.function({kernel.key}): name the kernel's output "
                            "parameters with outputs=[...] or outputs={name: shape}")
    specs: dict[str, ShapeSpec] = (
        dict(outputs) if isinstance(outputs, Mapping) else dict.fromkeys(outputs))
    for o in specs:
        if o not in names or not isinstance(params[names.index(o)][1], ArrayType):
            raise GradloomError(f"gradloom.torch.function({kernel.key}): '{o}' is not an array "
                                f"parameter of the kernel (parameters: {', '.join(names)})")
    in_params = [(n, t) for n, t in params if n not in specs]
    in_names = [n for n, _ in in_params]

    def run(*inputs: Any) -> tuple[array, ...]:
        if len(inputs) != len(in_names):
            raise GradloomError(f"{kernel.key}: takes {len(in_names)} inputs "
                                f"({', '.join(in_names)}), got {len(inputs)}")
        by_name = dict(zip(in_names, inputs))
        device = next((v.device for v in inputs if isinstance(v, array)), None)
        outs = {o: zeros(_shape(kernel.key, s, by_name, inputs), dtype=t.dtype,
                         device=device, requires_grad=True)
                for o, s in specs.items() for t in [params[names.index(o)][1]]}
        dims = _launch_dims(dim, inputs, next(iter(outs.values())))
        launch(kernel, dims, inputs=[by_name[n] if n in by_name else outs[n] for n in names],
               device=device)
        return tuple(outs.values())

    return run, kernel.key, [(n, t.dtype if isinstance(t, ArrayType) else None)
                             for n, t in in_params]


def _shape(key: str, spec: ShapeSpec, by_name: Mapping[str, Any],
           inputs: Sequence[Any]) -> Any:
    if spec is None:
        first = next((v for v in inputs if isinstance(v, array)), None)
        if first is None:
            raise GradloomError(f"{key}: no array input to take the outputs' shape from; give "
                                "outputs={name: shape}")
        return first.shape
    if isinstance(spec, str):
        if spec not in by_name or not hasattr(by_name[spec], "shape"):
            raise GradloomError(f"{key}: output shape '{spec}' names no array input")
        return by_name[spec].shape
    if callable(spec):
        return spec(*inputs)
    return spec


def _launch_dims(dim: Any, inputs: Sequence[Any], first_out: array) -> Any:
    if dim is None:
        return first_out.shape
    return dim(*inputs) if callable(dim) else dim
