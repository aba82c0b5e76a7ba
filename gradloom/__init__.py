"""gradloom: Warp-style Python kernels compiled with LLVM for the CPU. Public names only."""

from __future__ import annotations

import functools as _functools
import math as _math
import os as _os

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
from .frontend.generic import Float, Int, Scalar  # generic annotations
from .frontend.replay import func_replay
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
from .kernel import Kernel, codegen_ptx
from .kernel_decl import kernel, overload
from .loading import compile_kernels, force_load, load_module
from .modules import Module, get_module, get_module_options, set_module_options
from .runtime.array.array import array
from .runtime.array.ops import (
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
from .runtime.array.structs import struct
from .runtime.cpu.command import Launch
from .runtime.device import (
    Device,
    DeviceLike,
    MemoryKind,
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
from .runtime.launch.launch import launch
from .runtime.launch.tiled import launch_tiled
from .runtime.mempool import (
    ScopedMempool,
    ScopedMempoolAccess,
    ScopedPeerAccess,
    get_mempool_release_threshold,
    get_mempool_used_mem_current,
    get_mempool_used_mem_high,
    is_mempool_access_enabled,
    is_mempool_access_supported,
    is_mempool_enabled,
    is_mempool_supported,
    is_peer_access_enabled,
    is_peer_access_supported,
    set_mempool_access_enabled,
    set_mempool_enabled,
    set_mempool_release_threshold,
    set_peer_access_enabled,
)
from .runtime.tape.tape import Tape
from .types import (
    bool_ as bool,  # Warp's name
)
from .types import (
    constant,
    float16,
    float32,
    float64,
    handle,
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

# isort: split
# -- runtime library: timing, streams and events, graph capture ---------------------
from . import utils
from .runtime.cache import clear as clear_kernel_cache
from .runtime.device import (
    get_cuda_device,
    get_cuda_devices,
    get_cuda_driver_version,
    is_device_available,
)
from .runtime.launch.capture import (
    CaptureMode,
    Graph,
    ScopedCapture,
    capture_begin,
    capture_end,
    capture_if,
    capture_launch,
    capture_while,
    is_conditional_graph_supported,
)
from .runtime.occupancy import (
    get_cuda_kernel_properties,
    get_cuda_max_cluster_dim,
    get_suggested_block_size,
)
from .runtime.stream import (
    Event,
    ScopedStream,
    Stream,
    get_event_elapsed_time,
    get_stream,
    record_event,
    set_stream,
    synchronize_event,
    synchronize_stream,
    wait_event,
    wait_stream,
)
from .runtime.timing import (
    TIMING_ALL,
    TIMING_GRAPH,
    TIMING_KERNEL,
    TIMING_KERNEL_BUILTIN,
    TIMING_MEMCPY,
    TIMING_MEMSET,
    ScopedTimer,
    TimingResult,
    timing_begin,
    timing_end,
    timing_print,
)
from .utils import map, quat_between_vectors, transform_expand

# isort: split
# -- CUDA runtime: driver errors (runtime/cuda/driver.py); devices, streams and
# events are exported above
from .runtime.cuda.driver import CudaError
from .runtime.stream import StreamError

#: `wp.adjoint[x]` inside a @wp.func_grad function (rewritten by the compiler; a marker here)
adjoint = _lang.ADJOINT

pi = _math.pi
e = _math.e
tau = _math.tau
inf = _math.inf
nan = _math.nan

# -- indexed arrays, fixed-size local arrays (runtime/array/indexed.py, builtins/fixedarray.py),
# Fabric arrays: elements in buckets of memory (runtime/array/fabric.py)
from .runtime.array.fabric import (  # noqa: E402
    fabricarray,
    fabricarrayarray,
    indexedfabricarray,
    indexedfabricarrayarray,
)
from .runtime.array.indexed import (  # noqa: E402
    indexedarray,
    indexedarray1d,
    indexedarray2d,
    indexedarray3d,
    indexedarray4d,
)

# Python-scope values (host evaluation): the remaining vector aliases Warp exports
from .types import (  # noqa: E402
    TextureAddressMode,
    TextureFilterMode,
    fixedarray,
    spatial_matrixh,
    spatial_vectorh,
    vec2b,
    vec2l,
    vec2s,
    vec2ub,
    vec2ul,
    vec2us,
    vec3b,
    vec3l,
    vec3s,
    vec3ub,
    vec3ul,
    vec3us,
    vec4b,
    vec4l,
    vec4s,
    vec4ub,
    vec4ul,
    vec4us,
)
from .types.reference import ref  # noqa: E402 - wp.ref[T]: by-reference func parameters

# isort: split
# -- types, Python-scope values, config, errors: bfloat16, Warp's constants, log
# levels and codegen error names
from .errors import CompileAttributeError as WarpCodegenAttributeError  # noqa: E402
from .errors import CompileError as WarpCodegenError  # noqa: E402
from .errors import CompileIndexError as WarpCodegenIndexError  # noqa: E402
from .errors import CompileKeyError as WarpCodegenKeyError  # noqa: E402
from .errors import CompileValueError as WarpCodegenValueError  # noqa: E402
from .errors import KernelTypeError as WarpCodegenTypeError  # noqa: E402
from .types import bfloat16, tile, tile_stack  # noqa: E402

E, INF, NAN, PI, TAU = e, inf, nan, pi, tau
HALF_PI = half_pi = _math.pi / 2
LOG2E = log2e = _math.log2(_math.e)
LOG10E = log10e = _math.log10(_math.e)
LN2 = ln2 = _math.log(2.0)
LN10 = ln10 = _math.log(10.0)
PHI = phi = (1.0 + _math.sqrt(5.0)) / 2.0
# Warp's logging API and log levels (`wp.config.log_level`)
from .logger import (  # noqa: E402
    LOG_DEBUG,
    LOG_ERROR,
    LOG_INFO,
    LOG_WARNING,
    Logger,
    ScopedLogger,
    ScopedLogLevel,
    get_logger,
    set_logger,
)

# Every kernel builtin is reachable as wp.<name>, as in Warp: those registered at import here,
# the on-demand ones (builtins/catalog.py) through __getattr__ below.
globals().update({name: b for name, b in _REGISTRY.loaded().items() if name not in globals()})

# Help and packaging (fault tolerance and everyday experience): help(wp.vec3) explains the type
from . import typedocs as _typedocs  # noqa: E402

_typedocs.attach(globals())

# -- custom gradients and the Tape: Warp's native-snippet functions
# (accepted, not runnable), wp.grad(f) and the deterministic-mode enum
from .config import DeterministicMode  # noqa: E402
from .frontend.gradfn import grad  # noqa: E402
from .frontend.native import func_native  # noqa: E402

# isort: split
# -- kernel language and modules: Warp's module build options (accepted, no effect),
# the error of a struct field given a value it cannot hold
from .errors import LaunchValueError, StructFieldError, WarpDeterminismError  # noqa: E402
from .modules import ModuleBuildOptions  # noqa: E402

#: public names whose modules load on first use (a program that never asks pays nothing):
#: name -> module, relative to this package
_ON_FIRST_USE = {
    # geometry objects
    "Mesh": ".runtime.geometry.mesh", "Bvh": ".runtime.geometry.bvh",
    "BvhConstructor": ".runtime.geometry.bvh", "is_cubql_available": ".runtime.geometry.bvh",
    "HashGrid": ".runtime.geometry.hash_grid", "Volume": ".runtime.geometry.volume",
    "Texture": ".runtime.geometry.texture", "Texture1D": ".runtime.geometry.texture",
    "Texture2D": ".runtime.geometry.texture", "Texture3D": ".runtime.geometry.texture",
    "MeshQueryPoint": ".builtins.mesh", "MeshQueryRay": ".builtins.mesh_ray",
    "MeshQueryAABB": ".builtins.mesh_aabb", "BvhQuery": ".builtins.bvh",
    "BvhQueryTiled": ".builtins.bvh_tiled", "HashGridQuery": ".builtins.hash_grid",
    # saved graphs, module files, the PTX compiler's architectures, diagnostics
    "capture_save": ".graph_file", "capture_load": ".graph_file",
    "capture_load_from_bytes": ".graph_file",
    "compile_aot_module": ".aot", "load_aot_module": ".aot",
    "get_cuda_supported_archs": ".cuda_build", "print_diagnostics": ".diagnostics",
    # `import warp` answered by gradloom
    "install_as_warp": ".as_warp", "uninstall_as_warp": ".as_warp",
    # Warp's hidden dense linear-algebra helpers for kernels
    "dense_gemm": ".utils.dense", "dense_chol": ".utils.dense", "dense_subs": ".utils.dense",
    "dense_solve": ".utils.dense",
}
#: Warp's submodules, imported when used (`wp.fem`: its value types only)
_SUBMODULES = ("torch", "optim", "fem", "sparse", "render", "checkpoint", "geometry")


@_functools.cache
def _submodules() -> frozenset[str]:
    return frozenset(n.removesuffix(".py") for n in _os.listdir(_os.path.dirname(__file__)))


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ON_FIRST_USE) | set(_REGISTRY))


def __getattr__(name: str) -> object:
    import importlib

    # wp.MeshQuery (Warp's annotation for any mesh query): the box query, the one mesh query
    # kind that is a loop state
    attr = "MeshQueryAABB" if name == "MeshQuery" else name
    if attr in _ON_FIRST_USE:
        return getattr(importlib.import_module(_ON_FIRST_USE[attr], __name__), attr)
    if name == "MarchingCubes":  # Warp's deprecated name of wp.geometry.IsoSurfaceMarchingCubes
        import warnings

        warnings.warn("wp.MarchingCubes is deprecated and will be removed in a future version of Warp. "
                      "Use wp.geometry.IsoSurfaceMarchingCubes instead.", DeprecationWarning, stacklevel=2)
        return importlib.import_module(".geometry", __name__).IsoSurfaceMarchingCubes
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    # an on-demand builtin (builtins/catalog.py); `from . import x` asks for submodules here
    # first, which must not load every builtin module
    if not name.startswith("__") and name not in _submodules() and name in _REGISTRY:
        return _REGISTRY[name]
    raise AttributeError(
        f"module 'gradloom' has no attribute '{name}' (not implemented yet, or not a Warp name)"
    )
