"""No import cycles among gradloom's files (docs/design.md §3): every import counts — module
level, inside functions, under `TYPE_CHECKING`, and `import gradloom` / `from .. import x`
inside the package — because a deferred import is still a dependency: it hides a cycle from
the interpreter, it does not remove it.

Allowed: none (the architecture's bound is cycles of at most 2 files and at most 6 files in
cycles in all; today there are none, and this test keeps it so). Where a lower layer
needs what a higher one defines, the higher one fills a hook (gradloom/hooks.py); generic
runtime code reaches the CUDA backend by name (gradloom/runtime/backend.py).
"""

from __future__ import annotations

import itertools

from import_graph import Edges, graph

MAX_CYCLE = 1  # a strongly connected component of one file is no cycle
MAX_IN_CYCLES = 0


def _components(edges: Edges) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _cycle_path(edges: Edges, comp: list[str]) -> str:
    """One cycle through the component's first module, as file:line hops."""
    inside = set(comp)
    start = comp[0]
    parent: dict[str, str] = {}
    todo = [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(edges[v]):
            if w not in inside:
                continue
            if w == start:
                hops = [v]
                while hops[-1] != start:
                    hops.append(parent[hops[-1]])
                hops.reverse()
                hops.append(start)
                return " -> ".join(f"{a or 'gradloom'} (line {edges[a][b]})"
                                   for a, b in itertools.pairwise(hops)) + f" -> {start}"
            if w not in parent:
                parent[w] = v
                todo.append(w)
    return "?"


def test_no_import_cycles() -> None:
    edges = graph()
    problems = []
    in_cycles = 0
    for comp in _components(edges):
        in_cycles += len(comp)
        if len(comp) > MAX_CYCLE:
            problems.append(f"a cycle of {len(comp)} files {comp}: {_cycle_path(edges, comp)}")
    assert not problems, "\n".join(problems)
    assert in_cycles <= MAX_IN_CYCLES, f"{in_cycles} files in cycles"


def test_the_checker_sees_every_kind_of_import() -> None:
    edges = graph()
    assert "hooks" in edges["types.values"]  # module level, relative
    assert "" in edges["optim._kernels"]  # `import gradloom` (kernel source)
    assert "loading" in edges["__main__"] or "" in edges["__main__"]  # inside a function
    assert "builtins.registry" in edges["builtins.quat"]
    cycle = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    assert _components(cycle) == [["a", "b", "c"]]
    assert _cycle_path(cycle, ["a", "b", "c"]).startswith("a (line 1) -> b (line 2)")
