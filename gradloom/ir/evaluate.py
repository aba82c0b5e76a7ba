"""Runs a block of scalar IR on concrete values in Python: each op by its primitive's host rule.

The values are numpy scalars of the ops' types, so float32 arithmetic rounds as float32 (see
ir/hostops.py). If and Loop regions run as Python control flow; a Custom region runs its body.
Primitives that need a kernel launch (memory, thread index, adjoint stack) cannot run here.
`prepare` resolves every op's rule once, so a block evaluated many times is walked cheaply.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import GradloomError
from .hostops import Unavailable, bf16_result
from .nodes import Block, Custom, If, Loop, Op, Var, walk_ops
from .prims import PRIMS


class HostUnavailableError(GradloomError):
    """The IR uses a primitive that only a kernel launch can run."""


def unavailable_ops(blocks: Iterable[Block]) -> list[tuple[Op, str]]:
    """The ops the host cannot run, with the reason their primitive's table entry gives."""
    out = []
    for b in blocks:
        for op in walk_ops(b):
            host = PRIMS[op.prim].host
            if isinstance(host, Unavailable) or host is None:
                out.append((op, host.reason if host is not None else "has no host rule"))
    return out


@dataclass(frozen=True, eq=False)
class Prepared:
    """A block with each op's host rule looked up: steps, then the values it yields."""

    steps: tuple[tuple[Any, ...], ...]
    yields: tuple[Var, ...]


_OP, _IF, _LOOP, _BODY = range(4)


def prepare(block: Block) -> Prepared:
    """Resolve the block's rules (raises HostUnavailableError for a launch-only primitive)."""
    steps: list[tuple[Any, ...]] = []
    for s in block.stmts:
        if isinstance(s, Op):
            rule = PRIMS[s.prim].host
            if rule is None or isinstance(rule, Unavailable):
                raise HostUnavailableError(f"the primitive {s.prim} cannot run outside a kernel "
                                           f"(at {s.loc})")
            rtype = s.result.type if s.result is not None else None
            if rtype is not None and rtype.name == "bfloat16":
                rule = bf16_result(rule)
            steps.append((_OP, rule, s.args, s.result, rtype, s.attr, s.prim == "const"))
        elif isinstance(s, If):
            steps.append((_IF, s.cond, prepare(s.then), prepare(s.orelse), s.results))
        elif isinstance(s, Loop):
            steps.append((_LOOP, s.inits, s.params, prepare(s.cond), prepare(s.body),
                          s.results))
        elif isinstance(s, Custom):
            steps.append((_BODY, prepare(s.body), s.results))
        else:  # pragma: no cover - the statement kinds are closed
            raise TypeError(f"unknown statement {s!r}")
    return Prepared(tuple(steps), block.yields)


def evaluate(code: Block | Prepared, env: dict[Var, Any]) -> list[Any]:
    """Run code with env binding its free variables (a `const` op whose result env already
    binds keeps that value: a caller-supplied constant); returns the values it yields."""
    prepared = code if isinstance(code, Prepared) else prepare(code)
    with np.errstate(all="ignore"):  # integer wrap-around, 1/0 and NaN are the kernel's too
        return _run(prepared, env)


def _run(p: Prepared, env: dict[Var, Any]) -> list[Any]:
    for step in p.steps:
        kind = step[0]
        if kind == _OP:
            _, rule, args, result, rtype, attr, is_const = step
            if is_const and result in env:
                continue
            value = rule([env[a] for a in args], rtype, attr)
            if result is not None:
                env[result] = value
        elif kind == _IF:
            _, cond, then, orelse, results = step
            _bind(env, results, _run(then if env[cond] else orelse, env))
        elif kind == _LOOP:
            _, inits, params, cond, body, results = step
            _bind(env, results, _loop(inits, params, cond, body, env))
        else:
            _, body, results = step
            _bind(env, results, _run(body, env))
    return [env[v] for v in p.yields]


def _loop(inits: tuple[Var, ...], params: tuple[Var, ...], cond: Prepared, body: Prepared,
          env: dict[Var, Any]) -> list[Any]:
    """A while loop: params start as inits; the body runs while cond yields true."""
    values = [env[v] for v in inits]
    while True:
        _bind(env, params, values)
        (go_on,) = _run(cond, env)
        if not go_on:
            return values
        values = _run(body, env)


def _bind(env: dict[Var, Any], names: tuple[Var, ...], values: list[Any]) -> None:
    for n, v in zip(names, values, strict=True):
        env[n] = v

