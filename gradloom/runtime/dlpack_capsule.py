"""DLPack capsules of device memory, by hand (numpy's DLPack knows only host memory): the C
structs, exporting a CUDA array as a "dltensor" capsule, and reading a producer's capsule.

An exported capsule owns a `DLManagedTensor` whose `manager_ctx` keeps the array (and so its
allocation) alive until the consumer calls the deleter — or, if no consumer took the capsule,
until the capsule is collected. An imported capsule is renamed "used_dltensor" (the protocol's
mark of a consumed capsule) and its deleter is called when the last array using it goes.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import GradloomError
from .layout import packed_strides

DLPACK_CUDA = 2
_NAME = b"dltensor"
_USED = b"used_dltensor"


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DELETER)]

#: DLPack's type codes by numpy kind (kDLInt, kDLUInt, kDLFloat, kDLBool)
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}
_KINDS = {v: k for k, v in _CODES.items()}
#: kDLBfloat: bfloat16 elements (held as their uint16 bits here)
BFLOAT = 4



def _capi(name: str, restype: Any, *argtypes: Any) -> Any:
    """A C API function with its own prototype (ctypes.pythonapi's shared ones untouched)."""
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


_new = _capi("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
             ctypes.c_void_p)
_is_valid = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_pointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)
_set_name = _capi("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
# inside a capsule's destructor the capsule is dying: no new references to it
_raw_is_valid = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
_raw_pointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)

#: what keeps each exported tensor's memory alive, by the DLManagedTensor's address
_EXPORTS: dict[int, tuple[Any, ...]] = {}


@DELETER
def _delete(managed: Any) -> None:
    _EXPORTS.pop(ctypes.addressof(managed.contents), None)


_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@_DESTRUCTOR
def _capsule_destructor(capsule: int) -> None:
    """A capsule no consumer took: delete its tensor (a consumed one was renamed)."""
    if _raw_is_valid(capsule, _NAME):
        _EXPORTS.pop(_raw_pointer(capsule, _NAME), None)


def export(keep: Any, data: int, device_id: int, npdt: np.dtype[Any], shape: tuple[int, ...],
           strides: tuple[int, ...], device_type: int = DLPACK_CUDA,
           bfloat16: bool = False) -> Any:
    """A "dltensor" capsule for memory at `data` on a device (CUDA unless `device_type` says
    otherwise; strides in bytes, shape including vector/matrix component dims); `keep` stays
    alive while the consumer holds it. `bfloat16`: uint16 elements that are bfloat16 bits."""
    if npdt.kind not in _CODES or npdt.names is not None:
        raise BufferError(f"DLPack has no type for elements of dtype {npdt}")
    if any(s % npdt.itemsize for s in strides):
        raise BufferError(f"strides {strides} are not whole elements of {npdt}")
    n = len(shape)
    shape_c = (ctypes.c_int64 * n)(*shape)
    strides_c = (ctypes.c_int64 * n)(*(s // npdt.itemsize for s in strides))
    managed = DLManagedTensor()
    t = managed.dl_tensor
    t.data, t.device = data, DLDevice(device_type, device_id)
    t.ndim, t.dtype = n, DLDataType(BFLOAT if bfloat16 else _CODES[npdt.kind], 8 * npdt.itemsize, 1)
    t.shape = ctypes.cast(shape_c, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(strides_c, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    managed.deleter = _delete
    address = ctypes.addressof(managed)
    _EXPORTS[address] = (keep, managed, shape_c, strides_c)
    return _new(address, _NAME, ctypes.cast(_capsule_destructor, ctypes.c_void_p))


@dataclass
class Imported:
    """What a consumed capsule describes (strides in bytes), and how to release it."""

    data: int
    device_type: int
    device_id: int
    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    release: Any
    #: the elements are bfloat16 (`dtype` is then uint16, their bits)
    bfloat16: bool = False


def consume(capsule: Any) -> Imported:
    """Take a "dltensor" capsule: its tensor's description; `release()` calls its deleter."""
    if not _is_valid(capsule, _NAME):
        raise GradloomError("from_dlpack: the capsule is not an unconsumed 'dltensor' capsule "
                            "(a capsule can be consumed once)")
    address = _pointer(capsule, _NAME)
    managed = DLManagedTensor.from_address(address)
    t = managed.dl_tensor
    kind = "u" if t.dtype.code == BFLOAT and t.dtype.bits == 16 else _KINDS.get(t.dtype.code)
    if kind is None or t.dtype.lanes != 1:
        raise GradloomError(f"from_dlpack: unsupported DLPack type (code {t.dtype.code}, "
                            f"{t.dtype.bits} bits, {t.dtype.lanes} lanes)")
    npdt = np.dtype(f"{kind}{t.dtype.bits // 8}") if kind != "b" else np.dtype(bool)
    shape = tuple(t.shape[k] for k in range(t.ndim))
    if t.strides:
        strides = tuple(t.strides[k] * npdt.itemsize for k in range(t.ndim))
    else:  # null strides: C-contiguous
        strides = packed_strides(shape, npdt.itemsize)
    _set_name(capsule, _USED)
    deleter = managed.deleter

    def release() -> None:
        if deleter:
            deleter(ctypes.pointer(managed))

    return Imported(int(t.data or 0) + int(t.byte_offset), int(t.device.device_type),
                    int(t.device.device_id), npdt, shape, strides, release,
                    t.dtype.code == BFLOAT)


def capsule_is_bfloat16(capsule: Any) -> bool:
    """Whether an unconsumed "dltensor" capsule holds bfloat16 elements."""
    if not _is_valid(capsule, _NAME):
        return False
    return bool(DLManagedTensor.from_address(_pointer(capsule, _NAME)).dl_tensor.dtype.code
                == BFLOAT)


def capsule_device(capsule: Any) -> tuple[int, int]:
    """(device type, device id) of an unconsumed "dltensor" capsule, without consuming it."""
    if not _is_valid(capsule, _NAME):
        raise GradloomError("from_dlpack: the capsule is not an unconsumed 'dltensor' capsule "
                            "(a capsule can be consumed once)")
    device = DLManagedTensor.from_address(_pointer(capsule, _NAME)).dl_tensor.device
    return int(device.device_type), int(device.device_id)
