"""Python source of generated kernel-language functions (`wp.map`'s kernels and its wrappers).

The frontend reads a kernel's source, so a kernel built at run time is built as Python text.
Every name the text uses besides `wp` is bound by the caller's namespace: `_fn` (the mapped
function), `_In<k>` / `_Out<k>` (argument and output annotations).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence


def map_kernel(ndim: int, inputs: Sequence[tuple[int, ...] | None], outputs: int) -> str:
    """A kernel applying `_fn` element by element over an `ndim`-dimensional grid.

    inputs: per argument, None for a value passed as is, else the array's broadcast mask
    (one flag per array dimension, aligned with the grid's trailing dimensions: 1 where the
    dimension has size 1 and is broadcast, so it is indexed at 0)."""
    tids = [f"_t{d}" for d in range(ndim)]
    params, call = [], []
    for k, mask in enumerate(inputs):
        params.append(f"in{k}: _In{k}")
        if mask is None:
            call.append(f"in{k}")
            continue
        lead = ndim - len(mask)
        index = ["0" if flag else tids[lead + d] for d, flag in enumerate(mask)]
        call.append(f"in{k}[{', '.join(index)}]")
    params += [f"out{k}: _Out{k}" for k in range(outputs)]
    where = ", ".join(tids)
    lines = [f"def map_kernel({', '.join(params)}):", f"    {where} = wp.tid()"]
    if outputs == 1:
        lines.append(f"    out0[{where}] = _fn({', '.join(call)})")
    else:
        results = [f"_r{k}" for k in range(outputs)]
        lines.append(f"    {', '.join(results)} = _fn({', '.join(call)})")
        lines += [f"    out{k}[{where}] = _r{k}" for k in range(outputs)]
    return "\n".join(lines) + "\n"


def typed_call(name: str, count: int) -> str:
    """`def <name>(v0: _In0, ...): return _fn(v0, ...)` — a typed call of `_fn`."""
    args = [f"v{k}" for k in range(count)]
    params = ", ".join(f"v{k}: _In{k}" for k in range(count))
    return f"def {name}({params}):\n    return _fn({', '.join(args)})\n"


def lambda_as_function(name: str, node: ast.Lambda) -> str:
    """A `def` with a lambda's parameters whose body returns the lambda's expression."""
    params = ", ".join(a.arg for a in node.args.args)
    return f"def {name}({params}):\n    return {ast.unparse(node.body)}\n"
