"""What the compatibility run covers: Warp's test files and examples, found in the installed wheel."""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path

# Warp 1.19 test modules (relative to ``warp.tests``) that the compatibility run covers.
TEST_FILES: tuple[str, ...] = (
    "test_grad", "test_grad_customs", "test_tape", "test_codegen", "test_codegen_continue",
    "test_conditional", "test_func", "test_generics", "test_static", "test_struct", "test_vec",
    "test_vec_constructors", "test_vec_assign_copy", "test_vec_scalar_ops",
    "matrix.test_mat", "matrix.test_mat_assign_copy", "matrix.test_mat_basics",
    "matrix.test_mat_constructors", "matrix.test_mat_elementwise_ops", "matrix.test_mat_linalg",
    "matrix.test_mat_lite",
    "test_quat", "test_quat_assign_copy", "test_spatial", "test_math", "test_arithmetic",
    "test_operators", "test_atomic", "test_atomic_cas", "test_atomic_bitwise", "test_rand",
    "test_noise", "test_lerp", "test_smoothstep", "test_array", "test_copy", "test_overwrite",
    "test_lvalue", "test_tuple", "test_unpack", "test_special_values", "test_scalar_ops",
    "test_rounding", "test_bool", "test_fp16", "test_print", "test_launch",
    "test_subscript_types", "test_future_annotations", "test_types", "test_map", "test_iter",
    "test_enum", "test_fixedarray", "test_indexedarray", "test_adam", "test_sgd", "test_utils",
    "test_array_reduce", "test_dense", "test_bit_count", "test_composite_component_adjoint",
    "test_implicit_init", "test_constant_precision", "geometry.test_hash_grid",
    "test_coloring", "test_sparse", "test_linear_solvers", "test_fsai",
    "geometry.test_volume", "geometry.test_volume_write", "geometry.test_volume_validation",
    # meshes and BVHs
    "geometry.test_mesh", "geometry.test_mesh_query_point", "geometry.test_mesh_query_ray",
    "geometry.test_mesh_query_aabb", "geometry.test_bvh",
    # isosurfaces, swept volumes, Delaunay flips (warp.geometry)
    "geometry.test_marching_cubes", "geometry.test_sparse_marching_cubes", "geometry.test_surface_nets",
    "geometry.test_swept_volume", "geometry.test_delaunay",
    # textures (warp/tests/cuda/test_texture: most of it runs on the CPU too)
    "cuda.test_texture",
    "deterministic.test_deterministic_backward", "deterministic.test_deterministic_counter",
    "deterministic.test_deterministic_options", "deterministic.test_deterministic_scatter",
    "deterministic.test_deterministic_graph_capture",
    # tiles: every file of warp/tests/tile
    "tile.test_tile_load", "tile.test_tile_view", "tile.test_tile_reduce",
    "tile.test_tile_construction", "tile.test_tile_func_arg", "tile.test_tile_oob",
    "tile.test_tile_load_extract", "tile.test_tile_fused_ops", "tile.test_tile_load_assign",
    "tile.test_tile", "tile.test_tile_mlp",
    "tile.test_tile_atomic_bitwise", "tile.test_tile_block_dim_mismatch",
    "tile.test_tile_cholesky", "tile.test_tile_cholesky_no_mathdx",
    "tile.test_tile_composite_row", "tile.test_tile_empty", "tile.test_tile_fft",
    "tile.test_tile_fft_no_mathdx", "tile.test_tile_large_offsets",
    "tile.test_tile_load_indexed", "tile.test_tile_load_vectorized",
    "tile.test_tile_low_precision_stack", "tile.test_tile_matmul",
    "tile.test_tile_matmul_no_mathdx", "tile.test_tile_matmul_strides", "tile.test_tile_print",
    "tile.test_tile_shared_memory", "tile.test_tile_solve", "tile.test_tile_solve_no_mathdx",
    "tile.test_tile_sort", "tile.test_tile_stack", "tile.test_tile_struct",
    # module machinery, options and the kernel cache
    "test_module_hashing", "test_reload", "test_unique_module", "test_transient_module",
    "test_module_variants", "test_kernel_cache", "test_compile_consts", "test_codegen_instancing",
    "test_func_inline", "test_template_launch_bounds", "test_options", "test_modules_lite",
    "test_module_contamination", "test_module_parallel_load", "test_compilation", "test_context",
    "test_import", "test_version", "test_logger", "test_diagnostics",
    # language and types
    "test_builtins_resolution", "test_array_subclass", "test_ref", "test_func_parameter_targets",
    "test_assert", "test_factory_style_array_annotations", "test_vec_lite",
    "test_spatial_assign_copy", "test_bf16", "test_fabricarray", "test_ctypes", "test_snippet",
    "test_verify_fp", "test_grad_debug", "test_fast_math", "test_large",
    # CPU code generation, devices, memory, graphs
    "test_cpu_block_codegen", "test_cpu_block_dim", "test_cpu_precompiled_headers",
    "test_cpu_vectorization", "test_block_dim_dispatch", "test_core_library_binary",
    "test_external_build", "test_devices", "test_allocator", "test_allocation_tracker",
    "test_graph", "test_sanitize", "test_cuda_profiler", "test_render_opengl",
    # geometry helpers outside geometry/, utilities, APIC
    "test_closest_point_edge_edge", "test_triangle_closest_point", "test_intersect",
    "test_runlength_encode", "test_apic", "test_apic_load_from_bytes", "test_apic_mesh",
    "test_apic_utility_algorithms",
    # interop (jax and paddle are not installed here: their tests skip on both) and AOT modules
    "interop.test_dlpack", "interop.test_torch", "interop.test_jax", "interop.test_paddle",
    "aot.test_module_aot", "test_examples",
    # warp/tests/cuda (CUDA-only on warp-lang's CPU baseline: counted, mostly skipped)
    "cuda.test_array_fill_capture", "cuda.test_async", "cuda.test_capture_mode",
    "cuda.test_capture_release", "cuda.test_clang_cuda", "cuda.test_cluster_dim",
    "cuda.test_conditional_captures", "cuda.test_cuda_arch_suffix", "cuda.test_cuda_max_registers",
    "cuda.test_cuda_smem_spilling", "cuda.test_ipc", "cuda.test_kernel_attributes",
    "cuda.test_mempool", "cuda.test_multigpu", "cuda.test_occupancy", "cuda.test_peer",
    "cuda.test_pinned", "cuda.test_streams", "cuda.test_sync_errors",
)  # fmt: skip


@dataclass(frozen=True)
class ExampleSpec:
    """One Warp example and how to run it headless on the CPU, unchanged.

    ``driver``: "main" runs the module as ``__main__`` with ``argv`` (its own command line) and
    compares the arrays of the ``example`` object it leaves; "call:<function>" calls that module
    function with ``device="cpu"`` (scripts whose main hard-codes CUDA) and compares its local
    arrays; "cloth" drives the benchmark's integrator class on a small cloth.

    ``trajectory_argv``: optimisation examples run a second time with these options, for the
    loss trajectory only; their arrays are compared after one optimisation step (Adam's
    normalised steps amplify last-bit gradient differences where gradients are near zero).
    """

    name: str
    module: str  # relative to warp.examples
    argv: tuple[str, ...] = ()
    driver: str = "main"
    loss_pattern: str = ""  # regex whose group 1 is a loss value printed once per iteration
    note: str = ""
    ignore: tuple[str, ...] = ()  # arrays not compared (e.g. never written: wp.empty garbage)
    trajectory_argv: tuple[str, ...] = ()

    def key(self) -> str:
        """What a cached run of this example depends on: its driver and options."""
        return repr((self.module, self.driver, self.argv, self.trajectory_argv))


_CPU = ("--device", "cpu")
_LOSS = r"Iteration \d+ loss: (\S+)"
_FLUID_OPT = (*_CPU, "--headless", "--num-frames", "20", "--pressure-iterations", "10")
_OPT_NOTE = "arrays after 1 Adam step; loss trajectory over 5"

EXAMPLES: tuple[ExampleSpec, ...] = (
    ExampleSpec("wave", "core.example_wave", (*_CPU, "--stage-path", "None", "--num-frames", "10")),
    ExampleSpec("fluid", "core.example_fluid", (*_CPU, "--headless", "--num-frames", "5")),
    ExampleSpec("graph_capture", "core.example_graph_capture",
                (*_CPU, "--headless", "--num-frames", "10")),
    ExampleSpec("torch", "core.example_torch", (*_CPU, "--headless", "--num-frames", "20")),
    ExampleSpec("spin_lock", "core.example_spin_lock", driver="call:test_spinlock",
                note="its main hard-codes CUDA: test_spinlock(device='cpu') is called"),
    ExampleSpec("work_queue", "core.example_work_queue", driver="call:test_work_queue",
                note="test_work_queue(device='cpu'); writes past its buffer, in warp-lang too"),
    ExampleSpec("fdtd_3d", "core.example_fdtd_3d",
                (*_CPU, "--headless", "--resolution", "48", "--num-steps", "40"),
                note="e_x_center_plane_buffer is only written when rendering: not compared",
                ignore=("e_x_center_plane_buffer",)),
    ExampleSpec("dem", "core.example_dem", (*_CPU, "--stage-path", "None", "--num-frames", "1"),
                note="chaotic: a 1e-7 relative nudge of the initial positions moves warp-lang's "
                "own v by 0.12 (relative) in one frame; positions compared, v and f not",
                ignore=("v", "f")),
    ExampleSpec("sph", "core.example_sph", (*_CPU, "--stage-path", "None", "--num-frames", "3"),
                note="chaotic: a 1e-7 relative nudge of the initial positions moves warp-lang's "
                "own v by 0.03 (relative) in three frames; x and rho compared, v and a not",
                ignore=("v", "a")),
    ExampleSpec("raymarch", "core.example_raymarch",
                (*_CPU, "--headless", "--width", "256", "--height", "128")),
    ExampleSpec("fluid_checkpoint", "optim.example_fluid_checkpoint",
                (*_FLUID_OPT, "--train-iters", "1"), loss_pattern=_LOSS,
                trajectory_argv=(*_FLUID_OPT, "--train-iters", "5"), note=_OPT_NOTE),
    ExampleSpec("fluid_checkpoint_custom_backward",
                "optim.example_fluid_checkpoint_custom_backward",
                (*_FLUID_OPT, "--train-iters", "1"), loss_pattern=_LOSS,
                trajectory_argv=(*_FLUID_OPT, "--train-iters", "5"), note=_OPT_NOTE),
    ExampleSpec("particle_repulsion", "optim.example_particle_repulsion",
                (*_CPU, "--headless", "--num-frames", "5")),
    # meshes, volumes, isosurfaces (the USD-reading ones need usd-core: `pxr`)
    ExampleSpec("mesh", "core.example_mesh", (*_CPU, "--stage-path", "None", "--num-frames", "5")),
    ExampleSpec("mesh_intersect", "core.example_mesh_intersect", (*_CPU, "--stage-path", "None")),
    ExampleSpec("raycast", "core.example_raycast", (*_CPU, "--headless", "--width", "128", "--height", "128")),
    ExampleSpec("sample_mesh", "core.example_sample_mesh",
                (*_CPU, "--stage-path", "None", "--num-frames", "5")),
    ExampleSpec("nvdb", "core.example_nvdb", (*_CPU, "--stage-path", "None", "--num-frames", "10")),
    ExampleSpec("diffray", "optim.example_diffray", (*_CPU, "--headless", "--height", "64", "--train-iters", "1"),
                loss_pattern=r"Iter: \d+ Loss: \[?([-+0-9.eE]+)",
                trajectory_argv=(*_CPU, "--headless", "--height", "64", "--train-iters", "10"),
                note="64-pixel image; arrays after 1 step, loss trajectory over 10"),
    ExampleSpec("isosurface", "geometry.example_isosurface",
                (*_CPU, "--stage-path", "None", "--num-frames", "3")),
    ExampleSpec("isosurface_nets", "geometry.example_isosurface",
                (*_CPU, "--stage-path", "None", "--num-frames", "3", "--method", "surface_nets")),
    ExampleSpec("sparse_marching_cubes", "geometry.example_sparse_marching_cubes",
                (*_CPU, "--stage-path", "None", "--num-frames", "2"),
                note="verts compared; indices are another triangulation of the same cells: gradloom's "
                "marching-cubes table is generated, not Warp's (docs/differences.md)",
                ignore=("indices",)),
    ExampleSpec("cloth_integrator", "benchmarks.benchmark_cloth_warp", driver="cloth",
                note="WpIntegrator on a 16×16 spring grid, 10 frames × 16 substeps; "
                "benchmark_cloth.py itself needs USD"),
)  # fmt: skip


def example_spec(name: str) -> ExampleSpec:
    """The example called ``name``."""
    for spec in EXAMPLES:
        if spec.name == name:
            return spec
    raise KeyError(f"unknown example {name!r}; known: {', '.join(e.name for e in EXAMPLES)}")


def warp_root() -> Path | None:
    """Directory of the installed warp-lang package, found without importing it (None: absent).

    Looks for the package's files, so a ``warp`` shim earlier on ``sys.path`` is not mistaken
    for it.
    """
    from importlib import metadata

    candidates: list[Path] = []
    with contextlib.suppress(metadata.PackageNotFoundError):
        candidates.append(Path(str(metadata.distribution("warp-lang").locate_file("warp"))))
    candidates += [Path(p or ".") / "warp" for p in sys.path]
    for root in candidates:
        if (root / "tests" / "unittest_utils.py").is_file() and (root / "_src").is_dir():
            return root.resolve()
    return None


def warp_version() -> str:
    """The installed warp-lang version, read from its package metadata."""
    from importlib import metadata

    try:
        return metadata.version("warp-lang")
    except metadata.PackageNotFoundError:
        return "unknown"


def test_file_path(root: Path, module: str) -> Path:
    """Path of the test file ``warp.tests.<module>`` inside the installed wheel."""
    return root / "tests" / (module.replace(".", "/") + ".py")
