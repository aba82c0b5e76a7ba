"""Every builtin overload in float32 and float64: reverse mode against central differences, and
forward values against numpy/scipy references. Rows live in tests/builtin_cases/."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest
from builtin_cases import all_rows
from builtin_table import (
    N_SAMPLES,
    KernelFactory,
    Row,
    fd_directional,
    random_directions,
    random_weights,
    reverse_directional,
    row_inputs,
    run_forward,
)
from wpcompat import BACKEND, wp

ROWS = all_rows()
GRAD_ROWS = [r for r in ROWS if r.grad]
REF_ROWS = [r for r in ROWS if r.ref is not None]


def _seed(row: Row) -> int:
    return zlib.crc32(row.id.encode())


@pytest.fixture(scope="module")
def factory() -> KernelFactory:
    return KernelFactory(ROWS)


def test_row_ids_are_unique() -> None:
    ids = [r.id for r in ROWS]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    assert not dupes, f"rows with the same id (give them a label): {dupes}"


@pytest.mark.parametrize("ft", ["float64", "float32"])
@pytest.mark.parametrize("row", GRAD_ROWS, ids=lambda r: r.id)
def test_gradient_matches_central_difference(factory: KernelFactory, row: Row, ft: str) -> None:
    if ft == "float32" and not row.f32:
        pytest.skip("float64-only row")
    seed = _seed(row)
    inputs = row_inputs(row, seed)
    dirs = random_directions(row, inputs, seed)
    weights = random_weights(row, N_SAMPLES, seed)
    fd = fd_directional(factory, row, inputs, weights, dirs)
    rev, scale = reverse_directional(factory, row, getattr(wp, ft), inputs, weights, dirs)
    rtol = row.rtol if ft == "float64" else row.rtol32
    tol = rtol * (np.abs(fd) + scale) + (1e-9 if ft == "float64" else 1e-6)
    bad = np.flatnonzero(~(np.abs(rev - fd) <= tol))
    assert bad.size == 0, (
        f"{row.id} {ft}: reverse-mode directional derivative differs from central difference "
        f"at threads {bad.tolist()}: reverse {rev[bad]}, fd {fd[bad]}")


@pytest.mark.parametrize("ft", ["float64", "float32"])
@pytest.mark.parametrize("row", REF_ROWS, ids=lambda r: r.id)
def test_forward_matches_reference(factory: KernelFactory, row: Row, ft: str) -> None:
    if ft == "float32" and not row.f32:
        pytest.skip("float64-only row")
    inputs = row_inputs(row, _seed(row))
    if ft == "float32":  # the reference sees the inputs the float32 kernel sees
        inputs = [np.asarray(x, dtype=np.float32).astype(np.float64) if c not in "iub" else x
                  for x, c in zip(inputs, row.args)]
    outs = run_forward(factory, row, getattr(wp, ft), inputs)
    assert row.ref is not None
    expected = row.ref(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(expected) == len(outs), f"{row.id}: reference gives {len(expected)} results"
    rtol, atol = (row.ref_rtol, row.ref_atol) if ft == "float64" else (2e-5, 2e-6)
    for j, (got, want) in enumerate(zip(outs, expected)):
        want = np.broadcast_to(np.asarray(want, dtype=np.float64), got.shape)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol,
                                   err_msg=f"{row.id} {ft}: result {j} differs from reference")


#: differentiable builtins whose arguments a table row cannot build (a texture object), with
#: the test file that checks their gradients against an independent model instead
GRADIENTS_TESTED_ELSEWHERE = {"texture_sample": "test_texture.py",
                              "tile_fft": "test_tiles_fft.py", "tile_ifft": "test_tiles_fft.py",
                              "tile_store_indexed": "test_tiles_more.py",
                              "tile_atomic_add_indexed": "test_tiles_more.py", **{
    f"tile_{n}" if n not in ("tile", "untile") else n: "test_tiles_grad.py" for n in (
        "full", "tile", "untile", "load", "store", "transpose", "broadcast", "view", "extract",
        "assign", "map", "sum", "min", "max", "reduce", "matmul", "reshape", "squeeze",
        "astype", "dot", "axpy", "scan_inclusive", "scan_exclusive", "scan_max_inclusive",
        "scan_min_inclusive", "diag_add", "from_thread", "atomic_add", "cholesky",
        "cholesky_inplace", "cholesky_solve", "cholesky_solve_inplace", "lower_solve",
        "lower_solve_inplace", "upper_solve", "upper_solve_inplace", "load_indexed", "scatter_masked", "scatter_add")}, **{
    f"volume_{n}": "test_volume.py" for n in (
        "sample_f", "sample_v", "sample", "sample_grad_f", "sample_grad", "index_to_world",
        "world_to_index", "index_to_world_dir", "world_to_index_dir", "sample_index",
        "sample_grad_index")}, **{
    f"mesh_{n}": "test_mesh.py" for n in ("query_point_no_sign", "eval_position")}, **{
    f"mesh_{n}": "test_mesh_sign.py" for n in (
        "query_point", "query_point_sign_normal", "query_point_sign_winding_number",
        "query_point_sign_parity", "eval_velocity")},
    "mesh_query_ray": "test_mesh_ray.py", "closest_point_edge_edge": "test_geometry_intersect.py"}


@pytest.mark.skipif(BACKEND != "gradloom", reason="the registry is gradloom's")
def test_every_differentiable_overload_has_a_gradient_row() -> None:
    from gradloom.builtins.registry import REGISTRY

    covered = {(r.name, r.sig) for r in GRAD_ROWS}
    missing = [f"{b.name} {sig}" for b in REGISTRY.values() if b.differentiable
               and b.name not in GRADIENTS_TESTED_ELSEWHERE
               for sig in b.signatures if (b.name, sig) not in covered]
    for name, test_file in GRADIENTS_TESTED_ELSEWHERE.items():  # the other file really tests it
        source = (Path(__file__).parent / test_file).read_text()
        assert f"wp.{name}(" in source and "tape.backward" in source, (name, test_file)
    unsigned = [b.name for b in REGISTRY.values() if not b.signatures]
    assert not unsigned, f"builtins without signatures: {unsigned}"
    assert not missing, "differentiable overloads without a gradient row:\n" + "\n".join(missing)


@pytest.mark.skipif(BACKEND != "gradloom", reason="the registry is gradloom's")
def test_rows_name_registered_overloads() -> None:
    from gradloom.builtins.registry import REGISTRY

    unknown = [r.id for r in ROWS
               if r.name not in REGISTRY or r.sig not in REGISTRY[r.name].signatures]
    assert not unknown, f"rows naming an unregistered builtin or signature: {unknown}"
