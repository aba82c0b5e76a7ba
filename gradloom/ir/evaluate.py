"""Runs a block of scalar IR on concrete values in Python: each op by its primitive's host rule.

The values are numpy scalars of the ops' types, so float32 arithmetic rounds as float32 (see
ir/hostops.py). If and Loop regions run as Python control flow; a Custom region runs its body.
Primitives that need a kernel launch (memory, thread index, adjoint stack) cannot run here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..errors import GradloomError
from .hostops import HostRule, Unavailable
from .nodes import Block, Custom, If, Loop, Op, Var, walk_ops
from .prims import PRIMS


class HostUnavailableError(GradloomError):
    """The IR uses a primitive that only a kernel launch can run."""


def _rules() -> dict[str, HostRule]:
    out: dict[str, HostRule] = {}
    for name, prim in PRIMS.items():
        if prim.host is not None and not isinstance(prim.host, Unavailable):
            out[name] = prim.host
    return out


_RULES = _rules()


def unavailable_ops(blocks: Iterable[Block]) -> list[tuple[Op, str]]:
    """The ops the host cannot run, with the reason their primitive's table entry gives."""
    out = []
    for b in blocks:
        for op in walk_ops(b):
            host = PRIMS[op.prim].host
            if isinstance(host, Unavailable) or host is None:
                out.append((op, host.reason if host is not None else "has no host rule"))
    return out


def evaluate(block: Block, env: dict[Var, Any]) -> list[Any]:
    """Run block with env binding its free variables (a `const` op whose result env already
    binds keeps that value: a caller-supplied constant); returns the values it yields."""
    with np.errstate(all="ignore"):  # integer wrap-around, 1/0 and NaN are the kernel's too
        return _run(block, env)


def _run(block: Block, env: dict[Var, Any]) -> list[Any]:
    rules = _RULES
    for s in block.stmts:
        if type(s) is Op:
            result = s.result
            if s.prim == "const" and result in env:
                continue
            try:
                rule = rules[s.prim]
            except KeyError:
                raise HostUnavailableError(f"the primitive {s.prim} cannot run outside a kernel "
                                           f"(at {s.loc})") from None
            value = rule([env[a] for a in s.args], result.type if result else None, s.attr)
            if result is not None:
                env[result] = value
        elif type(s) is If:
            chosen = s.then if env[s.cond] else s.orelse
            _bind(env, s.results, _run(chosen, env))
        elif type(s) is Loop:
            _bind(env, s.results, _loop(s, env))
        elif type(s) is Custom:
            _bind(env, s.results, _run(s.body, env))
        else:  # pragma: no cover - the statement kinds are closed
            raise TypeError(f"unknown statement {s!r}")
    return [env[v] for v in block.yields]


def _loop(s: Loop, env: dict[Var, Any]) -> list[Any]:
    values = [env[v] for v in s.inits]
    while True:
        _bind(env, s.params, values)
        (go_on,) = _run(s.cond, env)
        if not go_on:
            return values
        values = _run(s.body, env)


def _bind(env: dict[Var, Any], names: tuple[Var, ...], values: list[Any]) -> None:
    for n, v in zip(names, values, strict=True):
        env[n] = v
