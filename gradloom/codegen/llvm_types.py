"""LLVM type names and constant literals for gradloom's scalar types."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from ..types import ScalarType, bf16_round

_REG = {"bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
        "uint8": "i8", "uint16": "i16", "uint32": "i32", "uint64": "i64", "float16": "half",
        "bfloat16": "float", "float32": "float", "float64": "double", "ptr": "ptr"}


def reg_type(t: ScalarType) -> str:
    """The LLVM type a value of t has in registers (bool is i1)."""
    return _REG[t.name]


def mem_type(t: ScalarType) -> str:
    """The LLVM type a value of t has in memory (bool is one byte; bfloat16 its 16 bits, in
    registers a float: codegen/llvm_bf16.py)."""
    if t.name == "bfloat16":
        return "i16"
    return "i8" if t.kind == "b" else _REG[t.name]


def literal(value: Any, t: ScalarType) -> str:
    """An LLVM constant of type t."""
    if t.kind == "b":
        return "true" if value else "false"
    if t.kind in "iu":
        v = int(value)
        bits = t.bits
        v &= (1 << bits) - 1
        if v >= 1 << (bits - 1):
            v -= 1 << bits  # LLVM integer literals are written signed
        return str(v)
    if t.kind == "p":
        return "null" if not value else f"inttoptr (i64 {int(value)} to ptr)"
    if t.name == "bfloat16":
        value = float(bf16_round(np.float32(value)))
    elif t.bits == 16:
        return "0xH" + np.float16(value).tobytes()[::-1].hex().upper()
    if t.bits == 32:
        value = float(np.float32(value))
    return "0x" + struct.pack(">d", float(value)).hex().upper()
