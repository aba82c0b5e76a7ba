"""Saved CPU graphs: `wp.capture_save`, `wp.capture_load`, `wp.capture_load_from_bytes` and the
loaded graph's named parameters, in gradloom's own file format (docs/differences.md).

A saved graph is one `.wrp` file: `MAGIC`, a JSON header (format version, device, the memory
regions, the named parameters), the graph's nodes as a pickle stream, then each region's bytes.
A region is one allocation some node (or a named parameter) uses; the pickle names arrays by
(region, byte offset, layout, dtype), kernels by their module and key (and the Python module
and qualified name that define them: loading imports that module if the kernel is not live),
and types by name. Loading makes fresh memory for each region, filled with the saved bytes, and
rebuilds the nodes over it; the kernels are compiled (from gradloom's cache) as for any launch.
The file holds no machine code: loading needs the kernels' Python source. Its pickle stream is
read by a restricted unpickler (gradloom, numpy and plain builtin classes only).
"""

from __future__ import annotations

import ctypes
import dataclasses
import importlib
import io
import json
import os
import pickle
import struct
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.lib.array_utils import byte_bounds

from .kernel import Kernel
from .modules import get_module
from .runtime.array.aligned import aligned_zeros
from .runtime.array.array import array
from .runtime.array.indexed import indexedarray
from .runtime.array.watch import Memory, before_write
from .runtime.capturing import OpNode, TapedNode
from .runtime.device import CPU, get_device
from .runtime.geometry.bvh import Bvh
from .runtime.geometry.mesh import Mesh
from .runtime.handles import Handle
from .runtime.launch.capture import Graph
from .types import scalars
from .types.composite import MatrixType, VectorType, _interned
from .types.scalars import ScalarType

#: the first bytes of a saved graph
MAGIC = b"GLGRAPH\x00"
FORMAT = 1
_HEAD = struct.Struct("<8sIQ")  # magic, format, header length
_ALIGN = 64


class GraphFileError(RuntimeError):
    """A graph that cannot be saved, or a file that is not a loadable saved graph."""


@dataclasses.dataclass(frozen=True)
class ParamBinding:
    """A named parameter of a loaded graph: the region it binds and whether it was named as
    an input, an output or both."""

    region: int
    nbytes: int
    is_input: bool
    is_output: bool


# --------------------------------------------------------------------------------------------
# regions: the allocations a graph uses


def _span(a: array) -> tuple[int, int]:
    if a._np.size == 0:
        p = int(a._np.__array_interface__["data"][0])
        return p, p
    lo, hi = byte_bounds(a._np)
    return int(lo), int(hi)


class _Regions:
    """The memory a graph uses, in regions: the spans of the arrays it (or a named parameter)
    uses, merged where they overlap (views of one allocation; foreign views of one torch
    storage), so one region holds every view of its memory. All views are noted first
    (`note`), then placed (`of`)."""

    def __init__(self) -> None:
        self.spans: list[tuple[int, int]] = []
        self.bounds: list[tuple[int, int]] = []

    def note(self, a: array) -> None:
        self.spans.append(_span(a))
        self.bounds = []

    def _merge(self) -> None:
        merged: list[list[int]] = []
        for lo, hi in sorted(self.spans):
            if merged and (lo < merged[-1][1] or lo == hi == merged[-1][1]):
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        self.bounds = [(lo, hi) for lo, hi in merged]

    def of(self, a: array) -> tuple[int, int]:
        """(region, byte offset of the array's first element in it)."""
        if not self.bounds:
            self._merge()
        lo, hi = _span(a)
        for k, (r_lo, r_hi) in enumerate(self.bounds):
            if r_lo <= lo and hi <= r_hi:
                return k, int(a._np.__array_interface__["data"][0]) - r_lo
        raise GraphFileError("capture_save: an array was not noted before it was placed")

    def contents(self) -> list[bytes]:
        if not self.bounds:
            self._merge()
        return [ctypes.string_at(lo, hi - lo) if hi > lo else b"" for lo, hi in self.bounds]


def _host_array(a: Any, what: str) -> array:
    if not isinstance(a, array) or a._annotation:
        raise TypeError(f"capture_save: {what} must be a gradloom array, got {type(a).__name__}")
    if not a.device.backend.host_memory:
        raise GraphFileError(f"capture_save: {what} is on {a.device}; gradloom saves CPU "
                             "graphs only")
    return a


# --------------------------------------------------------------------------------------------
# saving


def _kernel_ref(k: Any) -> tuple[Any, ...]:
    fn = getattr(k, "func", None)
    return ("kernel", k.module.name, k.key, getattr(fn, "__module__", None),
            getattr(fn, "__qualname__", None))


def _composite(cls: Any, fields: dict[str, Any]) -> Any:
    """A vector/matrix type from its fields: the interned one (types compare by identity)."""
    return _interned(cls(**fields))


class _Saver(pickle.Pickler):
    def __init__(self, file: Any, regions: _Regions, noting: bool) -> None:
        super().__init__(file, protocol=5)
        self.regions, self.noting = regions, noting

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, array) and not obj._annotation:
            a = _host_array(obj, "an array the graph uses")
            grad = a._grad if a._requires_grad else None
            if self.noting:  # the first pass: where each allocation's views lie
                self.regions.note(a)
                return ("array", grad)
            region, offset = self.regions.of(a)
            return ("array", region, offset, a._np.shape, a._np.strides,
                    np.lib.format.dtype_to_descr(a._np.dtype), a.dtype, grad)
        if isinstance(obj, Kernel):
            return _kernel_ref(obj)
        if isinstance(obj, ScalarType):
            return ("scalar", obj.__name__ if hasattr(obj, "__name__") else str(obj))
        return None

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, (VectorType, MatrixType)):
            fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
            return _composite, (type(obj), fields)
        if isinstance(obj, Graph) and type(obj) is not type:
            return _subgraph, (obj.nodes,)
        if isinstance(obj, Handle) and isinstance(getattr(obj, "_owner", None), (Mesh, Bvh)):
            return _geometry_handle(obj._owner)
        if isinstance(obj, indexedarray) and obj.data is not None:
            return indexedarray, (obj.data, obj.indices[:obj.ndim])
        if isinstance(obj, OpNode):
            return OpNode, (obj.fn, obj.what)
        if isinstance(obj, TapedNode):
            raise GraphFileError("capture_save: the graph was captured while a wp.Tape "
                                 "recorded; gradloom cannot save taped nodes")
        recorded = getattr(type(obj), "recorded", None)
        if recorded is not None and hasattr(obj, "prepared") and hasattr(obj, "dims"):
            return recorded, (obj.kernel, obj.dims, obj.args, obj.adjoint, obj.record_tape)
        return NotImplemented


def _geometry_handle(owner: Any) -> tuple[Any, tuple[Any, ...]]:
    """A mesh's or BVH's handle as the call that builds it again over the loaded arrays (its
    tree is rebuilt from their saved contents)."""
    if isinstance(owner, Mesh):
        return _mesh_id, (owner.points, owner.indices, owner.velocities,
                          owner.support_winding_number)
    return _bvh_id, (owner.lowers, owner.uppers, owner.groups)


def _mesh_id(points: array, indices: array, velocities: array | None, winding: bool) -> Any:
    return Mesh(points, indices, velocities, support_winding_number=winding).id


def _bvh_id(lowers: array, uppers: array, groups: array | None) -> Any:
    return Bvh(lowers, uppers, groups=groups).id


def _subgraph(nodes: list[Any]) -> Graph:
    g = Graph(CPU)
    g.nodes = list(nodes)
    return g


def _pickled_nodes(graph: Graph, regions: _Regions, noting: bool) -> bytes:
    """The nodes as one pickle stream; the noting pass (first) goes node by node, so an
    operation that cannot be saved is named."""
    if not noting:
        buf = io.BytesIO()
        _Saver(buf, regions, False).dump(list(graph.nodes))
        return buf.getvalue()
    for node in graph.nodes:
        try:
            _Saver(io.BytesIO(), regions, True).dump(node)
        except GraphFileError:
            raise
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            what = getattr(node, "what", None) or type(node).__name__
            raise GraphFileError(
                f"Failed to save APIC graph: the operation {what} of the graph cannot be saved "
                f"by gradloom ({exc}); kernel launches, copies, fills, clones, wp.utils calls, "
                "capture_if/capture_while and nested graphs can") from None
    return b""


def _named(inputs: Mapping[str, Any] | None, outputs: Mapping[str, Any] | None
           ) -> list[tuple[str, str, array]]:
    out = []
    for role, named in (("input", inputs), ("output", outputs)):
        for name, a in (named or {}).items():
            if not isinstance(name, str) or not name:
                raise ValueError(f"capture_save: parameter names must be non-empty strings, "
                                 f"got {name!r}")
            out.append((role, name, _host_array(a, f"parameter '{name}'")))
    return out


def _params(regions: _Regions, named: list[tuple[str, str, array]]
            ) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for role, name, a in named:
        region, _ = regions.of(a)
        entry = out.setdefault(name, {"region": region, "input": False, "output": False})
        if entry["region"] != region:
            raise ValueError(f"capture_save: '{name}' names two different arrays")
        entry[role] = True
    return out


def _stem(path: Any) -> str:
    path = os.fspath(path)
    return path[:-4] if path.endswith(".wrp") else path


def graph_bytes(graph: Any, inputs: Mapping[str, Any] | None = None,
                outputs: Mapping[str, Any] | None = None) -> bytes:
    """The saved form of a CPU graph captured with `apic=True` (what `capture_save` writes)."""
    if not isinstance(graph, Graph):
        raise TypeError(f"capture_save() expects a Graph from wp.capture_end() or "
                        f"wp.ScopedCapture, got {type(graph).__name__}")
    if not graph.apic and not graph.is_loaded:
        raise GraphFileError("capture_save() needs a graph captured with apic=True "
                             "(wp.ScopedCapture(apic=True) or wp.capture_begin(apic=True))")
    regions, named = _Regions(), _named(inputs, outputs)
    for _, _, a in named:
        regions.note(a)
    _pickled_nodes(graph, regions, noting=True)
    params = _params(regions, named)
    nodes = _pickled_nodes(graph, regions, noting=False)
    contents = regions.contents()
    offset, table = 0, []
    for data in contents:
        table.append({"offset": offset, "nbytes": len(data)})
        offset += -(-len(data) // _ALIGN) * _ALIGN
    header = json.dumps({"device": "cpu", "nodes": len(nodes), "regions": table,
                         "params": params}).encode()
    out = bytearray(_HEAD.pack(MAGIC, FORMAT, len(header)))
    out += header
    out += nodes
    out += bytes(-len(out) % _ALIGN)
    base = len(out)
    out += bytes(offset)
    for entry, data in zip(table, contents, strict=True):
        out[base + entry["offset"]:base + entry["offset"] + len(data)] = data
    return bytes(out)


def capture_save(graph: Any, path: Any, inputs: Mapping[str, Any] | None = None,
                 outputs: Mapping[str, Any] | None = None, source_fallback: bool = False) -> None:
    """Save a CPU graph captured with `apic=True` to `<path>.wrp` (see the module docstring).
    `inputs` / `outputs` name arrays whose allocations a loaded graph binds by name
    (`set_param`, `get_param`). `source_fallback` concerns CUDA binaries and is ignored."""
    data = graph_bytes(graph, inputs, outputs)
    target = _stem(path) + ".wrp"
    tmp = target + ".partial"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except OSError as exc:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise GraphFileError(f"Failed to save APIC graph to {target}: {exc}") from exc


# --------------------------------------------------------------------------------------------
# loading

_SAFE_BUILTINS = {"tuple", "list", "dict", "set", "frozenset", "slice", "complex", "float",
                  "int", "bool", "bytes", "bytearray", "range", "getattr"}


def _find_kernel(ref: tuple[Any, ...]) -> Any:
    _, module_name, key, py_module, qualname = ref
    for k in get_module(module_name).live_kernels():
        if k.key == key:
            return k
    if py_module and qualname:
        try:
            obj: Any = importlib.import_module(py_module)
            for part in qualname.split("."):
                obj = getattr(obj, part)
            if isinstance(obj, Kernel):
                return obj
        except (ImportError, AttributeError):
            pass
    raise GraphFileError(f"Failed to load APIC graph: kernel '{key}' (module '{module_name}') "
                         "is not defined in this process; import the code that defines it "
                         "before loading")


class _Loader(pickle.Unpickler):
    def __init__(self, data: bytes, buffers: list[np.ndarray[Any, Any]]) -> None:
        super().__init__(io.BytesIO(data))
        self.buffers = buffers
        self.mems = [Memory() for _ in buffers]

    def find_class(self, module: str, name: str) -> Any:
        root = module.split(".")[0]
        if root in ("gradloom", "numpy", "functools", "copyreg") or (
                module == "builtins" and name in _SAFE_BUILTINS):
            return super().find_class(module, name)
        if module in sys.modules:  # a @wp.struct of the program's own (imported) code
            obj: Any = sys.modules[module]
            for part in name.split("."):
                obj = getattr(obj, part, None)
            if getattr(obj, "__gl_struct__", False) is True:
                return obj
        raise GraphFileError(f"Failed to load APIC graph: it names {module}.{name}, which a "
                             "saved gradloom graph never holds")

    def persistent_load(self, pid: Any) -> Any:
        kind = pid[0]
        if kind == "kernel":
            return _find_kernel(pid)
        if kind == "scalar":
            return getattr(scalars, pid[1])
        if kind == "array":
            _, region, offset, shape, strides, descr, t, grad = pid
            storage = np.ndarray(shape, dtype=np.lib.format.descr_to_dtype(descr),
                                 buffer=self.buffers[region], offset=offset, strides=strides)
            out = array._wrap(storage, t, CPU, None, self.mems[region])
            if grad is not None:
                out._grad, out._requires_grad = grad, True
            return out
        raise GraphFileError(f"Failed to load APIC graph: unknown reference {kind!r}")


class LoadedGraph(Graph):
    """A graph read back from a saved file: it owns fresh memory for every region the saved
    graph used; `set_param` / `get_param` copy into / out of the named regions."""

    def __init__(self, nodes: list[Any], buffers: list[Any], params: dict[str, ParamBinding]
                 ) -> None:
        super().__init__(CPU)
        self.nodes, self.buffers, self._params = nodes, buffers, params
        self.apic = True

    @property
    def is_loaded(self) -> bool:
        return True

    @property
    def params(self) -> dict[str, ParamBinding]:
        return dict(self._params)

    def _region(self, name: str, arr: Any) -> Any:
        if name not in self._params:
            raise KeyError(f"the loaded graph has no parameter named {name!r} (it has: "
                           f"{', '.join(sorted(self._params)) or 'none'})")
        buf = self.buffers[self._params[name].region]
        if not isinstance(arr, array) or not arr.device.backend.host_memory:
            raise TypeError(f"parameter '{name}': expected a CPU array, got {arr!r}")
        if not arr.is_contiguous or arr._np.nbytes != buf.nbytes:
            raise ValueError(f"parameter '{name}' binds {buf.nbytes} bytes; the array given "
                             f"holds {arr._np.nbytes} (contiguous: {arr.is_contiguous})")
        return buf

    def set_param(self, name: str, arr: Any) -> None:
        buf = self._region(name, arr)
        buf[...] = np.frombuffer(arr._np.tobytes(), dtype=np.uint8)

    def get_param(self, name: str, arr: Any) -> None:
        buf = self._region(name, arr)
        before_write(arr)
        arr._np.reshape(-1).view(np.uint8)[...] = buf

    def get_param_ptr(self, name: str) -> int | None:
        binding = self._params.get(name)
        return None if binding is None else int(self.buffers[binding.region].ctypes.data)


def _parse(data: bytes, where: str) -> LoadedGraph:
    fail = f"Failed to load APIC graph from {where}"
    if len(data) < _HEAD.size:
        raise GraphFileError(f"{fail}: not a saved gradloom graph (too short)")
    magic, fmt, hlen = _HEAD.unpack_from(data, 0)
    if magic != MAGIC:
        raise GraphFileError(f"{fail}: not a saved gradloom graph")
    if fmt != FORMAT:
        raise GraphFileError(f"{fail}: format {fmt}, this gradloom reads format {FORMAT}")
    try:
        header = json.loads(data[_HEAD.size:_HEAD.size + hlen])
        start = _HEAD.size + hlen
        nodes_blob = data[start:start + header["nodes"]]
        base = start + header["nodes"]
        base += -base % _ALIGN
        buffers = []
        for entry in header["regions"]:
            lo = base + entry["offset"]
            if lo + entry["nbytes"] > len(data):
                raise ValueError("a region lies past the end of the file")
            buf = aligned_zeros((entry["nbytes"],), np.uint8)
            buf[...] = np.frombuffer(data, np.uint8, entry["nbytes"], lo)
            buffers.append(buf)
        params = {name: ParamBinding(p["region"], int(buffers[p["region"]].nbytes),
                                     bool(p["input"]), bool(p["output"]))
                  for name, p in header["params"].items()}
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise GraphFileError(f"{fail}: the file is damaged ({exc})") from None
    try:
        nodes = _Loader(nodes_blob, buffers).load()
    except GraphFileError:
        raise
    except Exception as exc:  # a damaged stream fails in many ways
        raise GraphFileError(f"{fail}: the operation stream failed validation ({exc})") \
            from None
    return LoadedGraph(nodes, buffers, params)


def _cpu_only(device: Any) -> None:
    if device is not None and get_device(device) is not CPU:
        raise GraphFileError(f"gradloom saves and loads CPU graphs only, not on {device}")


def capture_load(path: Any, device: Any = None) -> LoadedGraph:
    """Load a graph saved by `capture_save` (`.wrp` is added to `path` if missing)."""
    _cpu_only(device)
    target = _stem(path) + ".wrp"
    try:
        with open(target, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise GraphFileError(f"Failed to load APIC graph from {target}: {exc.strerror}") \
            from None
    return _parse(data, target)


def capture_load_from_bytes(wrp: Any, modules: Mapping[str, Any] | None = None,
                            device: Any = None) -> LoadedGraph:
    """Load a saved graph from the bytes of its `.wrp` file (any buffer: bytes, memoryview,
    a numpy uint8 array). `modules` (Warp's companion module files) is accepted and unused:
    a gradloom graph file has none. The buffers are copied; they may be released after."""
    _cpu_only(device)
    try:
        data = bytes(memoryview(wrp).cast("B"))
    except TypeError as exc:
        raise TypeError(f"capture_load_from_bytes() expects a bytes-like object, got "
                        f"{type(wrp).__name__}") from exc
    return _parse(data, "bytes")

