"""Assignments into parts of values: `v.x = `, `m[i, j] = `, `s.f = `, `a[i].x = `, `a[i] += `."""

from __future__ import annotations

import ast
from typing import Any

from ..builtins import arrayview, fixedarray, memory, ops, tile_index
from ..builtins.transform import transform_part, with_part
from ..builtins.values import (
    ArrayVal,
    Composite,
    Ctx,
    FixedArrayVal,
    Literal,
    StructVal,
    TileVal,
    Value,
    describe,
    materialize,
    scalar,
    type_of,
    zeros_of,
)
from ..errors import CompileError, CompileValueError, KernelTypeError, UnsupportedSyntaxError
from ..types import ArrayType, IndexedArrayType, MatrixType, ScalarType, VectorType
from .expr import ExprLowerer
from .slices import constant_keys, has_slice, read_slice, write_slice

Step = tuple[str, Any]  # ("attr", name) or ("index", value)


class GroupStart(tuple):  # type: ignore[type-arg]
    """The first ("index", key) step of a subscript with several keys (`a[i][j, k]`); `size`
    is how many keys it has, which an array it applies to must take together."""

    size: int


class StoreLowerer(ExprLowerer):
    """Writes through a target path: functional updates of locals, stores into arrays."""

    def target_path(self, target: ast.expr) -> tuple[ast.Name, list[Step]]:
        steps: list[Step] = []
        node = target
        while isinstance(node, (ast.Subscript, ast.Attribute)):
            if isinstance(node, ast.Attribute):
                steps.append(("attr", node.attr))
            else:
                keys = self.indices(node.slice)
                if has_slice(keys):  # the keys of a slice apply together (`m[1:, 0]`)
                    steps.append(("slice", keys))
                else:
                    group: list[Step] = [("index", i) for i in keys]
                    if len(keys) > 1:
                        group[0] = GroupStart(group[0])
                        group[0].size = len(keys)  # type: ignore[attr-defined]
                    steps.extend(reversed(group))
            node = node.value
        if not isinstance(node, ast.Name):
            raise UnsupportedSyntaxError("assignment into this expression is not supported", self.info.loc(target))
        steps.reverse()
        return node, steps

    def store_path(self, target: ast.expr, value: Value, node: ast.stmt,
                   aug: str | None = None) -> None:
        self.store_steps(target, *self.target_path(target), value, aug)

    def aug_store_path(self, target: ast.expr, value_node: ast.expr, aug: str) -> None:
        """`a[i].x += v`: the target's indices first, then v (Python's order, as in Warp: an
        index with side effects that v reads)."""
        base_node, steps = self.target_path(target)
        self.store_steps(target, base_node, steps, self.value(value_node), aug)

    def store_steps(self, target: ast.expr, base_node: ast.Name, steps: list[Step],
                    value: Value, aug: str | None) -> None:
        ctx = self.ctx(target)
        base = self.expr(base_node)
        new = self.update(ctx, base, steps, value, aug)
        if new is not base:
            if base_node.id not in self.env:
                raise CompileError(f"cannot assign into global '{base_node.id}'", ctx.loc)
            self.env[base_node.id] = new

    def update(self, ctx: Ctx, cur: Any, steps: list[Step], value: Value,
               aug: str | None) -> Any:
        """The new value of cur after writing value at steps (cur itself if memory changed)."""
        if not steps:
            return self.replace_whole(ctx, cur, value, aug)
        kind, key = steps[0]
        if isinstance(cur, ArrayVal):
            return self.update_array(ctx, cur, steps, value, aug)
        if isinstance(cur, TileVal) and all(k in ("index", "slice") for k, _ in steps):
            keys = [x for k, key in steps for x in (key if k == "slice" else [key])]
            tile_index.assign(ctx, cur, keys, value, aug)  # in place, as Warp's tiles
            return cur
        if isinstance(cur, FixedArrayVal):  # a new value with the element replaced
            n = 0
            while n < min(len(steps), cur.type.ndim) and steps[n][0] == "index":
                n += 1
            return fixedarray.put(ctx, cur, [k for _, k in steps[:n]],
                                  lambda old: self.update(ctx, old, steps[n:], value, aug))
        if isinstance(cur, StructVal) and kind == "attr":
            names = [n for n, _ in cur.type.fields]
            if key not in names:
                raise CompileError(f"struct {cur.type.name} has no field '{key}'", ctx.loc)
            sub = cur.get(key)
            new_sub = self.update(ctx, sub, steps[1:], value, aug)
            if new_sub is sub:
                return cur
            fields = list(cur.fields)
            fields[names.index(key)] = new_sub
            return StructVal(cur.type, tuple(fields))
        part = transform_part(cur, key) if isinstance(cur, Composite) and kind == "attr" else None
        if part is not None:  # `xform.p = v`, `xform.q.w = 1.0`
            assert isinstance(cur, Composite)
            new_part = self.update(ctx, part, steps[1:], value, aug)
            return with_part(cur, key, new_part)
        if isinstance(cur, Composite) and kind == "slice":  # `v[1:3] = `, `m[0, 1:] += `
            return self.update_slice(ctx, cur, steps, value, aug)
        if isinstance(cur, Composite):
            index = self.step_index(ctx, cur, kind, key)
            sub = self.component(ctx, cur, index)
            new_sub = self.update(ctx, sub, steps[1:], value, aug)
            return self.replace_component(ctx, cur, index, new_sub)
        raise CompileError(f"cannot assign into a part of {describe(cur)}", ctx.loc)

    def update_slice(self, ctx: Ctx, cur: Composite, steps: list[Step], value: Value,
                     aug: str | None) -> Composite:
        key = constant_keys(ctx, steps[0][1])
        sub = read_slice(ctx, cur, key)
        if len(steps) == 1 and aug is None:
            check_vector_slice_value(ctx, sub, value)
        return write_slice(ctx, cur, key, self.update(ctx, sub, steps[1:], value, aug))

    def step_index(self, ctx: Ctx, cur: Composite, kind: str, key: Any) -> Value:
        if kind == "attr":
            idx = {"x": 0, "y": 1, "z": 2, "w": 3}.get(key)
            if idx is None or not isinstance(cur.type, VectorType) or idx >= cur.type.length:
                raise CompileError(f"{cur.type!r} has no component '{key}'", ctx.loc)
            return Literal(idx)
        return key  # type: ignore[no-any-return]

    def replace_whole(self, ctx: Ctx, cur: Value, value: Value, aug: str | None) -> Value:
        if aug is not None:
            value = self.apply_aug(ctx, aug, cur, value)
        t = type_of(cur)
        new = materialize(ctx, value, t if isinstance(t, ScalarType) else None)
        if type_of(new) != t:
            raise KernelTypeError(f"cannot assign {describe(value)} to a part of type {t!r}",
                                  ctx.loc)
        return new

    def replace_component(self, ctx: Ctx, cur: Composite, index: Value, new_sub: Any) -> Value:
        t = cur.type
        if isinstance(t, MatrixType):
            width = t.cols
            parts = [cur.comps[r * width:(r + 1) * width] for r in range(t.rows)]
            new_parts: tuple[Any, ...] = new_sub.comps
        else:
            width = 1
            parts = [(c,) for c in cur.comps]
            new_parts = (scalar(ctx, new_sub),)
        n = len(parts)
        if isinstance(index, Literal):
            i = int(index.value) % n
            parts[i] = new_parts
        else:
            i_var = scalar(ctx, index)
            for k in range(n):
                hit = ctx.op("eq", i_var, ctx.const(k, i_var.type))
                parts[k] = tuple(ctx.op("select", hit, a, b)
                                 for a, b in zip(new_parts, parts[k], strict=True))
        assert all(len(p) == width for p in parts)
        return Composite(t, tuple(c for p in parts for c in p))

    def update_array(self, ctx: Ctx, arr: ArrayVal, steps: list[Step], value: Value,
                     aug: str | None) -> ArrayVal:
        place, rest = self.element_place(ctx, arr, steps)
        if any(kind == "slice" for kind, _ in rest):  # `a[i][1:3] = v`: read, update, write
            elem = memory.load(ctx, place)
            memory.store(ctx, place, self.update(ctx, elem, rest, value, aug))
            return arr
        for n, (kind, key) in enumerate(rest):
            if isinstance(place.type, (ArrayType, IndexedArrayType)):  # `s[i].values[j] = `
                self.update_array(ctx, memory.load(ctx, place), rest[n:], value, aug)  # type: ignore[arg-type]
                return arr
            place = memory.component_place(ctx, place, self.place_key(ctx, place, kind, key))
        if rest and aug is None:  # `a[i].y = v`: Warp's words for a value of another type
            t = place.type
            got = type_of(materialize(ctx, value, t if isinstance(t, ScalarType) else None))
            if got != t:
                raise KernelTypeError(f"Composite slot assignment expects value of type {t!r}, "
                                      f"got {got!r}", ctx.loc)
        self.write_place(ctx, place, value, aug)
        return arr

    def element_place(self, ctx: Ctx, arr: ArrayVal,
                      steps: list[Step]) -> tuple[memory.Place, list[Step]]:
        """The array element the leading steps select (through views: `a[1:][i] = v`), and the
        steps left for its parts."""
        cur: ArrayVal | memory.Place = arr
        while isinstance(cur, ArrayVal):
            n = cur.type.ndim
            if steps and steps[0][0] == "slice":
                cur = arrayview.view(ctx, cur, steps[0][1])
                steps = steps[1:]
                continue
            if steps and getattr(steps[0], "size", 0) > n:  # `a[i][j, k]` on a 2-D array
                raise CompileError("Incorrect number of indices specified for array indexing: "
                                   f"{steps[0].size} indices for a {n}-D array",  # type: ignore[attr-defined]
                                   ctx.loc)
            k = 0
            while k < min(n, len(steps)) and steps[k][0] == "index" and \
                    not (k and isinstance(steps[k], GroupStart)):  # a new subscript: a view
                k += 1
            if k == 0:
                raise CompileError(f"assignment to a {n}-D array needs {n} indices", ctx.loc)
            for _, key in steps[:k]:
                t = type_of(key) if not isinstance(key, Literal) else type(key.value)
                if (isinstance(t, ScalarType) and not t.is_int) or t is float:
                    raise KernelTypeError("Array slot write indices must be integers, got "
                                          f"{getattr(t, '__name__', t)}", ctx.loc)
            cur = memory.index_array(ctx, cur, [key for _, key in steps[:k]])
            steps = steps[k:]
        return cur, steps

    def place_key(self, ctx: Ctx, place: memory.Place, kind: str, key: Any) -> Any:
        if kind == "attr" and isinstance(place.type, VectorType) and \
                place.type.kind == "transform" and key in ("p", "q"):
            return key  # `xforms[i].p = v`
        if kind == "attr" and isinstance(place.type, VectorType):
            idx = {"x": 0, "y": 1, "z": 2, "w": 3}.get(key)
            if idx is None or idx >= place.type.length:
                raise CompileError(f"{place.type!r} has no component '{key}'", ctx.loc)
            return idx
        if isinstance(key, Literal):
            return int(key.value)
        return key

    def write_place(self, ctx: Ctx, place: memory.Place, value: Value, aug: str | None) -> None:
        """arr[...] = value; `+=` / `-=` are atomic, as in Warp; other ops read-modify-write, and
        so do `+=` / `-=` that a user's operator function takes (Warp's operator overloading)."""
        if aug is not None and self.user_operator(aug, zeros_of(ctx, place.type), value):
            memory.store(ctx, place, self.apply_aug(ctx, aug, memory.load(ctx, place), value))
            return
        if aug in ("add", "sub"):
            if aug == "sub":
                value = ops.unary(ctx, "neg", value)
            memory.atomic(ctx, "atomic_add", place, value)
            return
        if aug is not None:
            value = ops.binary(ctx, aug, memory.load(ctx, place), value)
        memory.store(ctx, place, value)

    def apply_aug(self, ctx: Ctx, aug: str, cur: Value, value: Value) -> Value:
        """cur <op> value: the user's operator function where one takes them, else the
        builtin operator."""
        user = self.user_operator(aug, cur, value)
        if user is None:
            return ops.binary(ctx, aug, cur, value)
        operand = ast.Name("_", ast.Load(), lineno=ctx.loc.line, col_offset=0)
        return materialize(ctx, self.call_operator(ctx, user, aug, (operand, operand), cur,
                                                   value))



def check_vector_slice_value(ctx: Ctx, sub: Value, value: Value) -> None:
    """`v[1:] = value`: a vector of the slice's length and dtype (Warp's words otherwise)."""
    if not (isinstance(sub, Composite) and isinstance(sub.type, VectorType)):
        return
    n, dt = sub.type.length, sub.type.dtype
    if isinstance(value, Composite) and isinstance(value.type, VectorType):
        if value.type.length != n:
            raise CompileValueError(f"The length of the provided vector ({value.type.length}) "
                                        f"isn't compatible with the given slice (expected {n}).",
                                        ctx.loc)
        if value.type.dtype != dt:
            raise CompileValueError(f"The provided vector is expected to be of length {n} "
                                        f"with dtype {dt}.", ctx.loc)
    elif not isinstance(value, Literal):
        raise CompileValueError(f"The provided value is expected to be a vector of length "
                                    f"{n}, with dtype {dt}.", ctx.loc)
