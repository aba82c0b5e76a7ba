"""wp.Volume's checks of NanoVDB buffers: feature arrays (blind data) read and bounded, files of
several grids kept in one buffer (load_next_grid aliases it, save_to_nvdb writes them all), each
grid checked on load, header checks (name, type, size, layout) and quantized float grids."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest

import gradloom as wp

GRID, TREE = 672, 672
INVALID = "Invalid NanoVDB grid structure"


def _grid(n: int = 1) -> np.ndarray:
    """A float grid of n leaves along x (gradloom's writer), as bytes."""
    vol = wp.Volume.allocate(min=[0, 0, 0], max=[8 * n - 1, 7, 7], voxel_size=1.0)
    return vol.array().numpy().copy()


def _with_blind(grid: np.ndarray, payload: bytes, value_size: int, data_type: int,
                name: bytes = b"feat") -> np.ndarray:  # fmt: skip
    """grid with one blind-metadata entry and its data appended (sizes padded to 32 bytes)."""
    size = len(grid)
    entry = bytearray(288)
    struct.pack_into("<qQIIII", entry, 0, 288, len(payload) // value_size, value_size, 0, 0, data_type)
    entry[32:32 + len(name)] = name
    body = bytes(entry) + payload
    body += b"\0" * (-len(body) % 32)
    out: Any = np.concatenate([grid, np.frombuffer(body, np.uint8)])
    struct.pack_into("<Q", out, 32, len(out))
    struct.pack_into("<qI", out, 640, size, 1)
    return out


def _nvdb(*grids: np.ndarray) -> bytes:
    """An uncompressed .nvdb file of the grids (grid_index / grid_count set)."""
    metas, bodies = b"", b""
    for n, source in enumerate(grids):
        g: Any = source.copy()
        struct.pack_into("<II", g, 24, n, len(grids))
        meta = bytearray(176)
        struct.pack_into("<QQ", meta, 0, len(g), len(g))
        struct.pack_into("<I", meta, 136, 1)
        metas += bytes(meta) + b"\0"
        bodies += g.tobytes()
    return struct.pack("<QIHH", 0x304244566F6E614E, (32 << 21) | (3 << 10) | 3, len(grids), 0) + metas + bodies


def test_feature_arrays_are_read_typed_and_snapshotted():
    values = np.array([3, -7, 1 << 40], np.int64)
    grid = _with_blind(_grid(), values.tobytes(), 8, 5)
    data = wp.array(grid, dtype=wp.uint8)
    vol = wp.Volume(data, copy=False)
    assert vol.get_feature_array_count() == 1
    info = vol.get_feature_array_info(0)
    assert (info.name, info.value_size, info.value_count, info.type_str) == ("feat", 8, 3, "int64")
    assert info.ptr == vol.id + len(_grid()) + 288
    np.testing.assert_array_equal(vol.feature_array(0).numpy(), values)
    np.testing.assert_array_equal(vol.feature_array(0, dtype=wp.uint8).numpy(), np.frombuffer(values.tobytes(), np.uint8))
    with pytest.raises(RuntimeError, match="8-byte"):
        vol.feature_array(0, dtype=wp.int32)
    # bytes view as any type they divide into
    raw = wp.Volume(_with_blind(_grid(), values.tobytes(), 1, 0))
    assert raw.get_feature_array_info(0).type_str == "?"
    np.testing.assert_array_equal(raw.feature_array(0, dtype=wp.int64).numpy(), values)
    # the metadata is read once: later writes to the shared buffer do not change it
    mutated = grid.copy()
    struct.pack_into("<qQI", mutated, len(_grid()), -1, 1, 1)
    data.assign(mutated)
    assert vol.get_feature_array_info(0) == info
    assert wp.Volume(_grid()).get_feature_array_count() == 0


@pytest.mark.parametrize("case", ["before_grid", "past_grid", "count_overflow", "table_past_grid",
                                  "table_in_tree", "unterminated_name"])  # fmt: skip
def test_feature_arrays_outside_their_grid_are_refused(case):
    grid = _with_blind(_grid(), bytes(16), 1, 0)
    meta = len(_grid())
    if case == "before_grid":
        struct.pack_into("<q", grid, meta, -meta - 1)
    elif case == "past_grid":
        struct.pack_into("<q", grid, meta, len(grid) - meta + 1)
    elif case == "count_overflow":
        struct.pack_into("<QI", grid, meta + 8, 1 << 63, 3)
    elif case == "table_past_grid":
        struct.pack_into("<I", grid, 648, 0xFFFFFFFF)
    elif case == "table_in_tree":
        struct.pack_into("<q", grid, 640, meta - 32)
    else:
        grid[meta + 32:meta + 32 + 256] = ord("A")
    with pytest.raises(RuntimeError, match=INVALID):
        wp.Volume(wp.array(grid, dtype=wp.uint8))


def test_a_negative_feature_offset_inside_the_grid_is_accepted():
    grid = _with_blind(_grid(), bytes(16), 1, 0)
    struct.pack_into("<qQ", grid, len(_grid()), -len(_grid()), 8)
    vol = wp.Volume(grid)
    np.testing.assert_array_equal(vol.feature_array(0).numpy(), grid[:8])


def test_files_of_several_grids_share_one_buffer(tmp_path):
    a, b = _grid(1), _grid(3)
    vol = wp.Volume.load_from_nvdb(_nvdb(a, b))
    assert vol.array().shape == (len(a) + len(b),) and vol.get_tile_count() == 1
    nxt = vol.load_next_grid()
    assert nxt.get_tile_count() == 3 and nxt.get_grid_info().grid_index == 1
    assert nxt.id == vol.id + len(a) and nxt.load_next_grid() is None
    for codec in ("none", "zip"):
        vol.save_to_nvdb(tmp_path / f"two_{codec}.nvdb", codec=codec)
        again = wp.Volume.load_from_nvdb(tmp_path / f"two_{codec}.nvdb")
        np.testing.assert_array_equal(again.array().numpy(), vol.array().numpy())
    with pytest.raises(RuntimeError, match="load_next_grid"):
        nxt.save_to_nvdb(tmp_path / "aliased.nvdb")


def test_every_grid_of_a_file_is_checked_before_any_layout_complaint():
    a, b = _grid(1), _grid(2)
    bad = b.copy()
    struct.pack_into("<Q", bad, TREE + 24, len(bad))  # the root outside the grid
    with pytest.raises(RuntimeError, match=INVALID):
        wp.Volume.load_from_nvdb(_nvdb(a, bad))
    depth_first = a.copy()
    depth_first[20] &= 0xFF ^ (1 << 5)
    with pytest.raises(RuntimeError, match="Unsupported NanoVDB tree layout"):
        wp.Volume.load_from_nvdb(_nvdb(depth_first, b))
    with pytest.raises(RuntimeError, match=INVALID):
        wp.Volume.load_from_nvdb(_nvdb(depth_first, bad))


def test_grid_headers_are_checked():
    grid = _grid()
    bad_type = grid.copy()
    struct.pack_into("<I", bad_type, 636, 0)
    unnamed = grid.copy()
    unnamed[40:40 + 256] = ord("A")
    for bad in (bad_type, unnamed):
        with pytest.raises(RuntimeError, match=INVALID):
            wp.Volume(wp.array(bad, dtype=wp.uint8))
    # one byte more than a multiple of 32: kept by the constructor, refused in a file
    longer = np.concatenate([grid, np.zeros(1, np.uint8)])
    struct.pack_into("<Q", longer, 32, len(longer))
    assert wp.Volume(longer).get_tile_count() == 1
    with pytest.raises(RuntimeError, match=INVALID):
        wp.Volume.load_from_nvdb(_nvdb(longer))
    for size in (0, len(grid) + 1):
        wrong = grid.copy()
        struct.pack_into("<Q", wrong, 32, size)
        with pytest.raises(RuntimeError, match=INVALID):
            wp.Volume(wrong)


def _quantized(grid_type: int, log_bits: int, keep: int) -> np.ndarray:
    """gradloom's one-leaf float grid retyped as a quantized one: its leaf's first `keep` bytes."""
    grid: Any = _grid()
    leaf0 = TREE + struct.unpack_from("<Q", grid, TREE)[0]
    out: Any = grid[:leaf0 + keep].copy()
    struct.pack_into("<I", out, 636, grid_type)
    struct.pack_into("<Q", out, 32, len(out))
    out[leaf0 + 15] = log_bits << 5
    return out


def test_quantized_float_grids_are_checked_by_their_leaf_sizes():
    fpn = wp.Volume(_quantized(16, 1, 96 + 2 * 64))  # FpN, 2 bits per value
    assert fpn.get_grid_info().type_str == "FloatN" and fpn.dtype is None
    with pytest.raises(RuntimeError, match="leaves of varying sizes"):
        fpn.get_tiles()
    fp8 = wp.Volume(_quantized(14, 0, 96 + 8 * 64))  # Fp8: fixed-size leaves
    np.testing.assert_array_equal(fp8.get_tiles().numpy(), [[0, 0, 0]])
    for grid in (_quantized(16, 4, 96 + 2 * 64), _quantized(14, 0, 96 + 4 * 64)):
        with pytest.raises(RuntimeError, match=INVALID):
            wp.Volume(grid)
