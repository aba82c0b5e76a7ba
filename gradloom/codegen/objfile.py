"""The symbols an object file asks the linker for (its undefined ELF64 symbols).

The JIT linker resolves a symbol it cannot find to address 0 without saying so, and the kernel
then crashes on its first use. LLVM's code generator adds calls of its own that the IR never
names (128-bit division, `__udivti3`, from loop closed forms), so the loader checks the object's
undefined symbols before it adds the object (codegen/cpu.py).
"""

from __future__ import annotations

import struct

_ELF_MAGIC = b"\x7fELF"
_ELFCLASS64, _ELFDATA2LSB = 2, 1
_SHT_SYMTAB = 2
_SHDR = struct.Struct("<IIQQQQIIQQ")  # name type flags addr offset size link info align entsize
_SYM = struct.Struct("<IBBHQQ")  # name info other shndx value size
_STB_WEAK = 2


def undefined_symbols(obj: bytes) -> list[str]:
    """Names of the non-weak undefined symbols of a little-endian ELF64 object ([] for any
    other format: those are not checked)."""
    if obj[:4] != _ELF_MAGIC or obj[4] != _ELFCLASS64 or obj[5] != _ELFDATA2LSB:
        return []
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    headers = [_SHDR.unpack_from(obj, shoff + i * shentsize) for i in range(shnum)]
    names: list[str] = []
    for header in headers:
        if header[1] != _SHT_SYMTAB:
            continue
        strtab = headers[header[6]]
        names += _undefined_in(obj, header, strtab[4])
    return names


def _undefined_in(obj: bytes, symtab: tuple[int, ...], strtab_offset: int) -> list[str]:
    """The undefined, non-weak, named symbols of one symbol table section."""
    offset, size, entsize = symtab[4], symtab[5], symtab[9] or _SYM.size
    names = []
    for at in range(offset + entsize, offset + size, entsize):  # entry 0 is the null symbol
        name_at, info, _other, shndx, _value, _size = _SYM.unpack_from(obj, at)
        if shndx != 0 or name_at == 0 or info >> 4 == _STB_WEAK:
            continue
        end = obj.index(b"\0", strtab_offset + name_at)
        names.append(obj[strtab_offset + name_at:end].decode())
    return names
