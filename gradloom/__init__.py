"""gradloom: Warp-style Python kernels compiled with LLVM for the CPU. Public names only."""

from __future__ import annotations

import math as _math

from . import autograd, config, errors, types
from .builtins import catalog as _catalog
from .builtins import lang as _lang
from .builtins.lang import static
from .builtins.registry import REGISTRY as _REGISTRY
from .errors import (
    CompileError,
    GradloomError,
    KernelRuntimeError,
    KernelTypeError,
    LaunchError,
    UnknownNameError,
    UnsupportedSyntaxError,
)
from .frontend.func import Function, func, func_grad
from .interop.dlpack import from_dlpack, to_dlpack
from .interop.jax import (
    device_from_jax,
    device_to_jax,
    dtype_from_jax,
    dtype_to_jax,
    from_jax,
    to_jax,
)
from .interop.numpy import dtype_from_numpy, dtype_to_numpy
from .interop.torch import (
    device_from_torch,
    device_to_torch,
    dtype_from_torch,
    dtype_to_torch,
    from_torch,
    to_torch,
)
from .kernel import VERSION as __version__
from .kernel import Kernel, kernel
from .loading import compile_kernels, force_load, load_module
from .runtime.array import array
from .runtime.array_ops import (
    array1d,
    array2d,
    array3d,
    array4d,
    clone,
    copy,
    empty,
    empty_like,
    from_numpy,
    full,
    full_like,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from .runtime.device import (
    Device,
    ScopedDevice,
    get_cuda_device_count,
    get_device,
    get_devices,
    get_preferred_device,
    init,
    is_cpu_available,
    is_cuda_available,
    set_device,
    synchronize,
    synchronize_device,
)
from .runtime.launch import Launch, launch
from .runtime.structs import struct
from .runtime.tape import Tape
from .types import (
    bool_ as bool,  # Warp's name
)
from .types import (
    constant,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    mat22,
    mat22d,
    mat22f,
    mat22h,
    mat33,
    mat33d,
    mat33f,
    mat33h,
    mat44,
    mat44d,
    mat44f,
    mat44h,
    matrix,
    quat,
    quatd,
    quatf,
    quath,
    spatial_matrix,
    spatial_matrixd,
    spatial_matrixf,
    spatial_vector,
    spatial_vectord,
    spatial_vectorf,
    transform,
    transformd,
    transformf,
    transformh,
    uint8,
    uint16,
    uint32,
    uint64,
    vec2,
    vec2d,
    vec2f,
    vec2h,
    vec2i,
    vec2ui,
    vec3,
    vec3d,
    vec3f,
    vec3h,
    vec3i,
    vec3ui,
    vec4,
    vec4d,
    vec4f,
    vec4h,
    vec4i,
    vec4ui,
    vector,
)

#: `wp.adjoint[x]` inside a @wp.func_grad function (rewritten by the compiler; a marker here)
adjoint = _lang.ADJOINT

pi = _math.pi
e = _math.e
tau = _math.tau
inf = _math.inf
nan = _math.nan

# Every registered kernel builtin is reachable as wp.<name>, as in Warp.
globals().update({name: b for name, b in _REGISTRY.items() if name not in globals()})

# Help and packaging (fault tolerance and everyday experience): help(wp.vec3) explains the type
from . import typedocs as _typedocs  # noqa: E402

_typedocs.attach(globals())


def __getattr__(name: str) -> object:
    if name == "torch":  # `wp.torch`, as in Warp; imports torch only when used
        import importlib

        return importlib.import_module(".torch", __name__)
    raise AttributeError(
        f"module 'gradloom' has no attribute '{name}' (not implemented yet, or not a Warp name)"
    )
