"""Run a time-indexed case's kernel source in plain Python over numpy, one thread at a time,
recording which elements each thread reads and writes.

A second oracle for timeline.py, independent of `thread_elements`: it executes the text the
generator rendered (with a stand-in `wp` module), so a kernel whose text and oracle disagree, or
an index outside its array, shows here. `a[x] += v` is rewritten into an accumulation before
running, because Python would run it as a read and a write, while in Warp it only adds (a read
of `a[x]` there would make every `+=` case look like threads meet). The values it computes are
the float64 forward values of the program, threads in launch order.
"""

from __future__ import annotations

import ast
import itertools
from types import SimpleNamespace
from typing import Any

import numpy as np

from .timeline import PARAMS, Element, TimeCase, initial_values, meets

Sets = dict[tuple[int, int], tuple[set[Element], set[Element]]]


class TraceError(AssertionError):
    """The kernel did something the layout forbids (an index out of bounds, a parameter write)."""


class _Recorder:
    """An array standing in for a Warp array: each access is checked and logged."""

    def __init__(self, name: str, values: np.ndarray, tracer: _Tracer) -> None:
        self.name, self.values, self.tracer = name, values, tracer
        self.shape = values.shape

    def _key(self, idx: Any) -> tuple[int, ...]:
        key = tuple(int(x) for x in (idx if isinstance(idx, tuple) else (idx,)))
        if len(key) > len(self.shape) or any(not 0 <= x < n for x, n in zip(key, self.shape)):
            raise TraceError(f"{self.name}{list(key)} outside shape {self.shape}")
        return key

    def _element(self, key: tuple[int, ...]) -> Element:
        if len(key) == 1:
            return (self.name, key[0], 0, 0)
        return (self.name, key[0], key[1], key[2] if len(key) == 3 else 0)

    def __getitem__(self, idx: Any) -> Any:
        key = self._key(idx)
        self.tracer.reads.add(self._element(key))
        return np.copy(self.values[key])

    def __setitem__(self, idx: Any, value: Any) -> None:
        self._write(idx, value, add=False)

    def _write(self, idx: Any, value: Any, add: bool) -> None:
        if self.name in PARAMS:
            raise TraceError(f"the kernel writes parameter array {self.name}")
        key = self._key(idx)
        self.tracer.writes.add(self._element(key))
        self.values[key] = self.values[key] + value if add else value


class _Accumulate(ast.NodeTransformer):
    """`a[x] += v` -> `__accumulate__(a, x, v)` (Warp adds into the element; it does not read it)."""

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        if not isinstance(node.target, ast.Subscript):
            return node
        if not isinstance(node.op, ast.Add):
            raise TraceError("only += on array elements is generated")
        call = ast.Call(ast.Name("__accumulate__", ast.Load()),
                        [node.target.value, node.target.slice, node.value], [])
        return ast.copy_location(ast.Expr(call), node)


class _Tracer:
    """The stand-in `wp`: runs each launch's threads one by one and keeps their access sets."""

    def __init__(self) -> None:
        self.reads: set[Element] = set()
        self.writes: set[Element] = set()
        self.thread = (0, 0)
        self.launches: list[Sets] = []

    def namespace(self) -> SimpleNamespace:
        def ann(**_: Any) -> None:
            return None

        return SimpleNamespace(
            kernel=lambda f: f, float64=float, vec3d=lambda *v: np.array(v, dtype=np.float64),
            array=ann, array2d=ann, array3d=ann, tid=lambda: self.thread, launch=self.launch,
            sin=np.sin, cos=np.cos, tanh=np.tanh)

    def launch(self, kernel: Any, dim: tuple[int, int], inputs: list[Any]) -> None:
        sets: Sets = {}
        for thread in itertools.product(range(dim[0]), range(dim[1])):
            self.thread, self.reads, self.writes = thread, set(), set()
            kernel(*inputs)
            sets[thread] = (self.reads, self.writes)
        self.launches.append(sets)


def trace(c: TimeCase, seed: int = 0) -> tuple[list[Sets], dict[str, np.ndarray]]:
    """Per launch, each thread's (state elements read, elements written); the final values."""
    tracer = _Tracer()
    tree = ast.fix_missing_locations(_Accumulate().visit(ast.parse(c.source())))
    tree.body = [s for s in tree.body if not isinstance(s, ast.Import)]  # `wp` is the tracer
    env: dict[str, Any] = {"wp": tracer.namespace(),
                           "__accumulate__": lambda a, i, v: a._write(i, v, add=True)}
    exec(compile(tree, f"<trace {c.tag}>", "exec"), env)
    arrays = {n: _Recorder(n, v, tracer) for n, v in initial_values(c, seed).items()}
    env["program"](arrays)
    launches = [{th: ({e for e in r if e[0] not in PARAMS}, w) for th, (r, w) in sets.items()}
                for sets in tracer.launches]
    return launches, {n: arrays[n].values for n in c.states}


def traced_overlaps(c: TimeCase) -> bool:
    """`overlaps` computed from the executed kernel text instead of the generator's model."""
    return any(meets(sets) for sets in trace(c)[0])
