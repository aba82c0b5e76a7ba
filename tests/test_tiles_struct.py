"""Tiles of @wp.struct elements: loads/stores, tile_map, field-by-field sums and additions, atomic
additions (bool / narrow-integer fields carried, not added), sorts with a struct payload,
wp.where on structs; gradients through struct tiles against an analytic derivative."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp

N = 6


@wp.struct
class P:
    x: wp.float32
    y: wp.vec3


@wp.struct
class Flagged:
    flag: wp.bool
    small: wp.int8
    value: wp.float32


@wp.func
def _scale(s: P) -> P:
    out = P()
    out.x = s.x * 2.0
    out.y = s.y + wp.vec3(1.0, 1.0, 1.0)
    return out


@wp.func
def _energy(s: P) -> float:
    return s.x * s.x + wp.dot(s.y, s.y)


@wp.func
def _bigger(a: P, b: P) -> P:
    return wp.where(a.x < b.x, b, a)


@wp.kernel
def _ops(src: wp.array(dtype=P), keys: wp.array(dtype=float), mapped: wp.array(dtype=P),
         total: wp.array(dtype=P), doubled: wp.array(dtype=P), acc: wp.array(dtype=P),
         srt: wp.array(dtype=P), best: wp.array(dtype=P)):
    t = wp.tile_load(src, shape=N)
    wp.tile_store(mapped, wp.tile_map(_scale, t))
    wp.tile_store(total, wp.tile_sum(t))
    wp.tile_store(doubled, t + t)
    wp.tile_atomic_add(acc, t)
    k = wp.tile_load(keys, shape=N)
    payload = wp.tile_load(src, shape=N)
    wp.tile_sort(k, payload)
    wp.tile_store(srt, payload)
    wp.tile_store(best, wp.tile_reduce(_bigger, t))


def _data() -> tuple[np.ndarray, list]:
    rng = np.random.default_rng(5)
    x = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal((N, 3)).astype(np.float32)
    items = []
    for i in range(N):
        s = P()
        s.x = float(x[i])
        s.y = wp.vec3(*y[i])
        items.append(s)
    return np.concatenate([x[:, None], y], axis=1), items


def _rows(a: wp.array) -> np.ndarray:
    v = a.numpy()
    return np.concatenate([v["x"][:, None], v["y"]], axis=1)


def test_struct_tile_operations() -> None:
    ref, items = _data()
    src = wp.array(items, dtype=P)
    keys = np.array([3.0, -1.0, 2.0, 0.5, -4.0, 1.0], dtype=np.float32)
    outs = [wp.zeros(N, dtype=P) for _ in range(3)] + [wp.zeros(1, dtype=P)]
    total, acc, srt = wp.zeros(1, dtype=P), wp.zeros(N, dtype=P), wp.zeros(N, dtype=P)
    mapped, doubled, _, best = outs
    wp.launch_tiled(_ops, dim=[1], inputs=[src, wp.array(keys), mapped, total, doubled, acc,
                                            srt, best], block_dim=1)
    np.testing.assert_allclose(_rows(mapped), np.concatenate(
        [2 * ref[:, :1], ref[:, 1:] + 1], axis=1), rtol=1e-6)
    np.testing.assert_allclose(_rows(total), ref.sum(axis=0, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(_rows(doubled), 2 * ref, rtol=1e-6)
    np.testing.assert_allclose(_rows(acc), ref, rtol=1e-6)
    np.testing.assert_allclose(_rows(srt), ref[np.argsort(keys, kind="stable")], rtol=1e-6)
    np.testing.assert_allclose(_rows(best), ref[[np.argmax(ref[:, 0])]], rtol=1e-6)


@wp.kernel
def _flagged(src: wp.array(dtype=Flagged), acc: wp.array(dtype=Flagged),
             total: wp.array(dtype=Flagged)):
    t = wp.tile_load(src, shape=4)
    wp.tile_atomic_add(acc, t)
    wp.tile_store(total, wp.tile_sum(t))


def test_struct_tile_narrow_fields_are_carried_not_added() -> None:
    items = []
    for i in range(4):
        s = Flagged()
        s.flag = True
        s.small = wp.int8(3)
        s.value = float(i + 1)
        items.append(s)
    acc, total = wp.zeros(4, dtype=Flagged), wp.zeros(1, dtype=Flagged)
    wp.launch_tiled(_flagged, dim=[1], inputs=[wp.array(items, dtype=Flagged), acc, total],
                    block_dim=1)
    a, s = acc.numpy(), total.numpy()
    np.testing.assert_array_equal(a["value"], [1, 2, 3, 4])
    np.testing.assert_array_equal(a["flag"], [False] * 4)  # not accumulated: zero stays
    np.testing.assert_array_equal(a["small"], [0] * 4)
    assert s["value"][0] == 10.0 and s["flag"][0] and s["small"][0] == 3


@wp.kernel
def _loss(src: wp.array(dtype=P), loss: wp.array(dtype=float)):
    t = wp.tile_load(src, shape=N)
    u = t + t
    wp.tile_store(loss, wp.tile_sum(wp.tile_map(_energy, u)))


def test_struct_tile_gradient() -> None:
    ref, items = _data()
    src = wp.array(items, dtype=P, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(_loss, dim=[1], inputs=[src, loss], block_dim=1)
    assert loss.numpy()[0] == pytest.approx(4.0 * float(np.sum(ref.astype(np.float64) ** 2)),
                                            rel=1e-5)
    tape.backward(loss=loss)
    g = src.grad.numpy()
    grad = np.concatenate([g["x"][:, None], g["y"]], axis=1)
    np.testing.assert_allclose(grad, 8.0 * ref, rtol=1e-5)  # d/ds sum |2s|^2 = 8 s


def test_struct_tile_refusals() -> None:
    @wp.kernel(module="unique")
    def ones() -> None:
        wp.tile_ones(shape=4, dtype=P)

    @wp.kernel(module="unique")
    def tmin(src: wp.array(dtype=P)) -> None:
        wp.tile_min(wp.tile_load(src, shape=N))

    with pytest.raises(RuntimeError, match="tile_ones.*Warp struct"):
        wp.launch_tiled(ones, dim=[1], inputs=[], block_dim=1)
    with pytest.raises(RuntimeError, match="tile_min.*Warp struct"):
        wp.launch_tiled(tmin, dim=[1], inputs=[wp.zeros(N, dtype=P)], block_dim=1)


@wp.struct
class Holder:
    values: wp.array(dtype=float)
    scale: wp.float32


@wp.kernel
def _holder_tile_k(src: wp.array(dtype=float), out: wp.array(dtype=float),
                   stored: wp.array(dtype=Holder)):
    h = Holder()
    h.values = src
    h.scale = 2.0
    full = wp.tile_full(4, value=h, dtype=Holder)
    zeros = wp.tile_zeros(4, dtype=Holder)
    e = full[2]
    out[0] = e.values[3] * e.scale  # the array field, read back from the tile, still reads src
    out[1] = float(e.values.shape[0])
    out[2] = float(zeros[1].values.shape[0])  # a zero tile holds null arrays
    wp.tile_store(stored, full)


def test_struct_tile_with_array_field() -> None:
    """Warp's tile.test_tile_construction builds tiles of a struct holding an array: the field is
    kept as the array's descriptor, so an element's array reads the source array."""
    src = wp.array(np.arange(5, dtype=np.float32) + 1.0)
    out = wp.zeros(3, dtype=float)
    stored = wp.empty(4, dtype=Holder)
    wp.launch_tiled(_holder_tile_k, dim=1, inputs=[src, out, stored], block_dim=1)
    np.testing.assert_array_equal(out.numpy(), [8.0, 5.0, 0.0])
    back = stored.list()
    assert all(np.array_equal(b.values.numpy(), src.numpy()) and b.scale == 2.0 for b in back)


@wp.kernel
def _holder_sort_k(payloads: wp.array(dtype=Holder), keys: wp.array(dtype=int),
                   sorted_payloads: wp.array(dtype=Holder)):
    k = wp.tile_load(keys, shape=4)
    v = wp.tile_load(payloads, shape=4)
    wp.tile_sort(k, v)  # the array fields move with their structs (warp-lang's test_tile_struct)
    wp.tile_store(sorted_payloads, v)


def test_struct_tile_with_array_field_sorts() -> None:
    arrays = [wp.array(np.full(2, float(i), dtype=np.float32)) for i in range(4)]
    payloads = []
    for i, a in enumerate(arrays):
        h = Holder()
        h.values, h.scale = a, float(i)
        payloads.append(h)
    src = wp.array(payloads, dtype=Holder)
    out = wp.empty(4, dtype=Holder)
    wp.launch_tiled(_holder_sort_k, dim=1, inputs=[src, wp.array([3, 1, 2, 0], dtype=int), out],
                    block_dim=1)
    back = out.list()
    assert [b.scale for b in back] == [3.0, 1.0, 2.0, 0.0]
    assert [float(b.values.numpy()[0]) for b in back] == [3.0, 1.0, 2.0, 0.0]
