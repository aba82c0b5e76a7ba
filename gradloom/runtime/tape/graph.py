"""`Tape.visualize()`: the recording as GraphViz DOT text (operations, the arrays they read and
write, and the recording's named scopes as clusters)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..recording import FuncRecord
from .adjoint import LaunchRecord


def tape_dot(records: Sequence[Any], scopes: Sequence[tuple[int, str | None, Any]], *,
             simplify_graph: bool = True, hide_readonly_arrays: bool = False,
             array_labels: dict[Any, str] | None = None, ignore_graph_scopes: bool = False,
             graph_direction: str = "LR") -> str:
    """DOT source: one node per operation (consecutive launches of one kernel on the same
    arguments merged into one "repeated Nx" node when simplify_graph), one per array, edges
    from the arrays an operation reads and to those it writes."""
    g = _Graph(array_labels or {}, hide_readonly_arrays)
    events = [] if ignore_graph_scopes else list(scopes)
    groups = _groups(records, simplify_graph)
    lines = ["digraph Tape {", f"  rankdir={graph_direction};",
             '  node [shape=box, style="rounded,filled", fillcolor="#e8f0fe"];']
    depth, e = 0, 0
    for start, group in groups:
        while e < len(events) and events[e][0] <= start:
            depth += _scope_line(lines, events[e], depth, e)
            e += 1
        lines.extend("  " * (depth + 1) + ln for ln in g.operation(group))
    while e < len(events):
        depth += _scope_line(lines, events[e], depth, e)
        e += 1
    lines.extend("  }" for _ in range(depth))
    lines.extend("  " + ln for ln in g.array_nodes())
    lines.extend("  " + ln for ln in g.edges)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _scope_line(lines: list[str], event: tuple[int, str | None, Any], depth: int,
                k: int) -> int:
    """Open (name) or close (None) a cluster; the change in depth."""
    _, name, _ = event
    if name is None:
        if depth == 0:
            return 0
        lines.append("  " * depth + "}")
        return -1
    pad = "  " * (depth + 1)
    lines.append(f"{pad}subgraph cluster_{k} {{")
    lines.append(f'{pad}  label={_quote(name)}; style="rounded,dashed";')
    return 1


def _groups(records: Sequence[Any], simplify: bool) -> list[tuple[int, list[Any]]]:
    """(index of the first record, the records) per node: runs of the same launch merged."""
    out: list[tuple[int, list[Any]]] = []
    for i, r in enumerate(records):
        if simplify and out and _same_launch(out[-1][1][-1], r) and out[-1][0] + len(
                out[-1][1]) == i:
            out[-1][1].append(r)
        else:
            out.append((i, [r]))
    return out


def _same_launch(a: Any, b: Any) -> bool:
    if not isinstance(a, LaunchRecord) or not isinstance(b, LaunchRecord):
        return False
    return a.kernel is b.kernel and a.dims == b.dims and len(a.args) == len(b.args) and all(
        x is y or (_is_scalar(x) and x == y) for x, y in zip(a.args, b.args, strict=True))


def _is_scalar(v: Any) -> bool:
    return isinstance(v, (bool, int, float, str))


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Graph:
    """Node names for operations and arrays, and the edges between them."""

    def __init__(self, labels: dict[Any, str], hide_readonly: bool) -> None:
        self.labels = labels
        self.hide_readonly = hide_readonly
        #: id(array) -> (array, label, written by an operation, node name)
        self.arrays: dict[int, tuple[Any, str, bool, str]] = {}
        self.edges: list[str] = []
        self.ops = 0

    def operation(self, group: list[Any]) -> list[str]:
        r = group[0]
        name = f"op{self.ops}"
        self.ops += 1
        label = _record_label(r)
        if len(group) > 1:
            label += f" (repeated {len(group)}x)"
        tip = f"dim={r.dims}" if isinstance(r, LaunchRecord) else "recorded function"
        for a, arg_name, reads, writes in _touches(r):
            node = self.array(a, arg_name, writes)
            if reads:
                self.edges.append(f"{node} -> {name};")
            if writes:
                self.edges.append(f"{name} -> {node};")
        return [f"{name} [label={_quote(label)}, tooltip={_quote(tip)}];"]

    def array(self, a: Any, arg_name: str, writes: bool) -> str:
        """The node of array a (its label: array_labels', else the first argument name)."""
        key = id(a)
        if key not in self.arrays:
            label = self.labels.get(a, arg_name) if _hashable(a) else arg_name
            self.arrays[key] = (a, label, writes, f"a{len(self.arrays)}")
        elif writes:
            arr, label, _, node = self.arrays[key]
            self.arrays[key] = (arr, label, True, node)
        return self.arrays[key][3]

    def array_nodes(self) -> list[str]:
        out = []
        for a, label, written, node in self.arrays.values():
            if self.hide_readonly and not written:
                continue
            tip = f"array: dtype={getattr(a, 'dtype', '?')!r}, shape={getattr(a, 'shape', '?')}"
            out.append(f"{node} [label={_quote(label)}, shape=ellipse, fillcolor=\"#fef7e0\", "
                       f"tooltip={_quote(tip)}];")
        if self.hide_readonly:
            shown = {node for _, _, w, node in self.arrays.values() if w}
            self.edges = [e for e in self.edges
                          if not e.startswith("a") or e.split(" ", 1)[0] in shown]
        return out


def _hashable(a: Any) -> bool:
    try:
        hash(a)
    except TypeError:
        return False
    return True


def _record_label(r: Any) -> str:
    if isinstance(r, LaunchRecord):
        return str(getattr(r.kernel, "key", r.kernel))
    if isinstance(getattr(r, "label", None), str):
        return str(r.label)  # a record naming itself (a checkpointed rollout)
    fn = getattr(r, "backward", None)
    name = str(getattr(fn, "__qualname__", None) or "recorded function")
    return name.split(".<locals>", 1)[0]  # an array operation's backward: the operation


def _touches(r: Any) -> list[tuple[Any, str, bool, bool]]:
    if isinstance(r, LaunchRecord):
        return r.named_touches()
    if isinstance(r, FuncRecord):
        return [(a, "output" if writes else "input", reads, writes)
                for a, reads, writes in r.touches()]
    return []
