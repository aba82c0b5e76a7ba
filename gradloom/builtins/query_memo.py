"""A query's answer remembered per call site and thread: asked again with the same inputs, it is read back.

Monte Carlo kernels ask the same question many times from one thread: `tile_map` over a tile of
walks that all start at one point (Warp's mcgp example: 128 walks per pixel) makes the same
closest-point query once per walk. A small direct-mapped table in thread-local memory (the
`local` buffer: zeroed when the thread starts, so nothing survives a launch) maps a key (the
query's inputs as int32 words: their bits) to the int32 the query found. An entry that was read
back once is kept (a later key hashing to its slot does not replace it), so a point every walk
starts from stays while the walks' other points come and go.

Only pure questions may be remembered: the answer must depend on the key alone within a launch
(a mesh's BVH and points do not change while a kernel runs).
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir.nodes import Var
from ..types import int32, int64
from .values import Ctx, if_values

SLOTS = 16
KEY_WORDS = 6
#: an entry: tag (0 empty, 1 filled, 2 read back: kept), the key, the answer
_WORDS = 2 + KEY_WORDS
_SIZE = SLOTS * _WORDS * 4
#: odd multipliers (int32, wrapping) that spread the key's bits over the slot index
_MIX = (-1640531535, -2048144789, 669982511, 374761393, -1028477379)


def remembered(ctx: Ctx, key: list[Var], compute: Callable[[], Var]) -> Var:
    """compute()'s int32 answer for `key` (KEY_WORDS int32 words), read back from this call
    site's table when the same key was asked before in this thread."""
    assert len(key) == KEY_WORDS
    op = ctx.op
    table = ctx.b.hoist("local", ctx.loc, attr=_SIZE)
    h = key[0]
    for mix, w in zip(_MIX, key[1:], strict=True):
        h = op("xor", op("mul", h, ctx.const(mix, int32)), w)
    h = op("xor", h, op("shr", h, ctx.const(16, int32)))
    slot = op("and", h, ctx.const(SLOTS - 1, int32))
    base = op("mul", op("cast", slot, type=int64), ctx.const(_WORDS * 4, int64))

    def at(word: int) -> Var:
        return op("add", base, ctx.const(4 * word, int64))

    def load(word: int) -> Var:
        return op("lload", table, at(word), attr=_SIZE, type=int32)

    def store(word: int, v: Var) -> None:
        ctx.b.effect("lstore", (table, at(word), v), ctx.loc, attr=_SIZE)

    tag = load(0)
    same = op("ne", tag, ctx.const(0, int32))
    for k, w in enumerate(key):
        same = op("and", same, op("eq", load(1 + k), w))

    def hit() -> list[Var]:
        store(0, ctx.const(2, int32))
        return [load(1 + KEY_WORDS)]

    def miss() -> list[Var]:
        v = compute()

        def fill() -> list[Var]:
            store(0, ctx.const(1, int32))
            for k, w in enumerate(key):
                store(1 + k, w)
            store(1 + KEY_WORDS, v)
            return []

        if_values(ctx, op("ne", tag, ctx.const(2, int32)), fill, list)
        return [v]

    return if_values(ctx, same, hit, miss)[0]
