"""Why known Warp tests still fail on gradloom, in a human word (shown next to each in docs/compat.md).

``NOTES`` maps a test module to ``fnmatch`` patterns on ``Class.test_name`` and the note. A note
explains a failure; it does not change the score (a failing test stays failing). Most point at a
deliberate difference (docs/differences.md) or at a Warp feature gradloom does not have.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

_DIFF = "deliberate difference (docs/differences.md): "
_PY_FUNC = (_DIFF + "a @wp.func called from Python is evaluated as the kernel computes it, not "
            "run as Python")
_RIGHT = "the test expects a gradient that is not the derivative; gradloom gives the derivative"
_RETAIN = (_DIFF + "`retain_grad=True` does not switch off gradient consumption (Warp's "
           "documented double counting)")
_NOT_IMPL = "not implemented in gradloom: "
_PRIVATE_NAME = ("the message Warp's test matches names Warp's private class path "
                 "(`warp._src.types...`)")

_NATIVE = (_DIFF + "C++/CUDA snippets (`@wp.func_native`) cannot compile through LLVM (the "
           "test's kernel calls one)")
_REF = (_DIFF + "`wp.ref[T]` parameters are copy-in, copy-out, so backward-enabled kernels may "
        "call them (differentiated like any assignment) and an untyped literal local is an "
        "ordinary variable")
_DETERMINISTIC = (_DIFF + "deterministic mode adds floats in thread order, which any kernel "
                  "allows, so it refuses nothing (no `WarpDeterminismError`)")

_PARTIAL = (_DIFF + "a partial CPU block (`wp.config.enable_cpu_blocks`, fewer threads than "
            "block_dim): Warp's inactive lanes leave their share of a tile's elements out of "
            "loads, reductions and scans; a gradloom tile kernel whose threads feed no values of "
            "their own runs one thread per block, which sees every element")
_SUBPROCESS = "(a subprocess test, measured on gradloom since the runner's fix) "
_TILE_NOTES: dict[str, dict[str, str]] = {
    "tile.test_tile_reduce": {
        "*partial_block_cpu": _PARTIAL, "*partial_slices_cpu": _PARTIAL,
        "*.test_tile_reduce_axis_empty_custom_slices_cpu": _SUBPROCESS + _NOT_IMPL + "refusing a "
            "custom `tile_reduce` over an empty axis slice",
        "*.test_tile_reduce_has_no_dynamic_shared_initialization": _SUBPROCESS + "the child "
            "compiles the module ahead of time for CUDA (`compile_aot_module` with an arch), "
            "which gradloom's AOT does not support yet"},
    "tile.test_tile": {"*.test_tile_random_generators_default_and_bounded_ranges_cpu_blocks_cpu":
                       _DIFF + "tile random generators in a CPU block: the kernel exchanges no "
                       "per-thread values, so it runs one thread per block and draws the tile "
                       "from that thread's stream, not from Warp's lanes'"},
    "tile.test_tile_shared_memory": {"*.test_tile_shared_mem_cpu_limit_cpu": _SUBPROCESS
                                     + _NOT_IMPL + "Warp's 256 KiB CPU shared-memory arena and "
                                     "its message (gradloom's tiles are per-thread memory; a "
                                     "tile's 256 KiB limit is checked at compile time)"},
    "tile.test_tile_construction": {"*.test_tile_construction_cpu*": _NOT_IMPL + "Warp's numpy "
                                    "layout of a struct's array field (data, grad, shape, "
                                    "strides, ndim): gradloom's array descriptor has no ndim "
                                    "word (tiles of structs holding arrays work)"},
    "tile.test_tile_matmul": {
        "*.test_tile_matmul_tf32_rejected_cpu": "the test passes a `str` kernel parameter, which "
            "gradloom refuses before the non-literal precision error the test expects",
    },
    "tile.test_tile_oob": {"*": _SUBPROCESS + _NOT_IMPL + "debug-mode bounds checks of tile "
                           "indices that abort the process with Warp's message (the register "
                           "case calls a `@wp.func_native` snippet)"},
    "test_cpu_block_dim": {
        "*.test_force_load_*": "`Device.context` (Warp's CUDA context handle) and "
                               "`Module.execs` are Warp's",
        "*.test_address_sanitizer_*": "Warp's AddressSanitizer build switch",
        "*.test_config_toggle_selects_distinct_specializations": "`Device.context` and "
                                                                 "`Module.execs` are Warp's",
        "*.test_cpu_block_dimension_cap_applies_*": _NOT_IMPL + "`wp.force_load(block_dim=...)` "
                                                    "does not check the CPU cap",
        "*.test_forward_and_tape_backward_*": "`Tape.launches` holds gradloom's records, not "
                                              "Warp's tuples (`launches[0][6]`)",
        "*.test_recorded_command_*": "`Launch.module_exec` is Warp's",
    },
    "test_cpu_block_codegen": {
        "*.test_scalar_tid_preserves_dimensional_aliasing": _NOT_IMPL + "warp-lang 1.19 "
            "gives a scalar `wp.tid()` of a multi-dimensional launch its first index; gradloom "
            "gives the linear index",
        "*.test_source_selects_cpu_template": "inspects Warp's generated C++",
    },
}

NOTES: dict[str, dict[str, str]] = {
    **_TILE_NOTES,
    "test_ref": {
        "*.test_native_ref_param_*": _NATIVE,
        "*.test_ref_parameter_struct_field_forwarding_*": _NATIVE,
        "*.test_address_of_*_cpu": _NATIVE,
        "*.test_ref_backward_enabled_kernel_raises": _REF,
        "*.test_ref_shared_helper_backward_raises": _REF,
        "*.test_ref_rejects_constant_local_argument": _REF,
        "*.test_address_of_rejects_constant_local": _NOT_IMPL + "`wp.address_of` (an address "
                                                    "is only of use to native snippets)",
        "*.test_ref_overload_differing_only_by_refness_rejected": _NOT_IMPL + "functions "
            "defined in a function body are not overloads of each other by name (functions at "
            "module level are, and refness-only overloads are refused there)",
        "*.test_ref_augassign_user_operator_result_type_checked": _NOT_IMPL + "a user @wp.func "
            "named `add` in the function's globals standing for `+=`",
    },
    "test_builtins_resolution": {
        "*.test_int_int_args_support_*": _DIFF + "at Python scope a Python int adopts the other "
                                         "operand's integer type, as literals do in kernels",
    },
    "test_snippet": {"*.test_cpu_snippet_*": _NATIVE},
    "cuda.test_texture": {"*.test_texture_cpu_large_dimensions": _NATIVE},
    "test_verify_fp": {"*": _DIFF + "`wp.config.verify_fp` raises KernelRuntimeError after the "
                                    "launch (naming the array and element) instead of printing"},
    "test_grad_debug": {
        "*.test_gradcheck_nan_*": _DIFF + "`length` / `normalize` at the zero vector have a "
                                  "finite (zero) gradient, so gradcheck finds no NaN",
        "*.test_gradcheck_restore_inputs_*": _DIFF + "gradcheck always runs on copies of the "
                                             "inputs, so an input-mutating function never "
                                             "drifts (`restore_inputs=False` cannot fail)",
    },
    "deterministic.test_deterministic_backward": {
        "*counter*_rejected_*": _DETERMINISTIC,
        "*.test_deterministic_overlapping_arguments_backward_rejected_*":
            "refused with a clear TapeError: two arguments alias one array the kernel writes "
            "(its adjoint would treat them as two arrays)",
    },
    "deterministic.test_deterministic_scatter": {"*_rejected": _DETERMINISTIC},
    "deterministic.test_deterministic_counter": {"*_rejected": _DETERMINISTIC},
    "test_coloring": {"*.test_coloring_balance_zero_iterations_preserves_coloring":
                      "gradloom's warnings print in Python's format, not Warp's "
                      "`Warp UserWarning: ...` line"},
    "test_arithmetic": {
        "*.test_binary_ops_float*": _DIFF + "the gradient of `wp.mod(a, b)` with respect to b "
                                    "is -trunc(a / b), the derivative; Warp's test expects 0",
    },
    "test_types": {
        "*.test_numpy_dtype_metadata": _DIFF + "bfloat16 and scalar subclasses map to numpy as "
                                       "gradloom's scalar types do",
        "*.test_numpy_dtype_scalar_inference": _DIFF + "a Python-scope scalar value is also a "
                                               "numpy scalar of its dtype (arrays of them are "
                                               "numeric, not `object`)",
    },
    "test_array": {
        "*.test_retain_grad*": _RETAIN,
        "*.test_array_runtime_zero_step_*": _DIFF + "a zero step known at run time selects "
                                            "nothing instead of stopping the process",
        "*.test_lower_bound_*": _DIFF + "`wp.lower_bound` returns the end of the range when "
                                "every element is smaller (Warp: the last index)",
    },
    "test_tape": {
        "*.test_tape_no_nested_tapes": _DIFF + "nested tapes all record",
        "*.test_tape_copy_adjoint_consumption_*": _RETAIN + " (its last case)",
    },
    "matrix.test_mat": {
        "*.test_mat_slicing_assign_backward_*": _RIGHT + " (x.grad[1] counts a component the "
                                                "kernel overwrites: 0, not 1)",
    },
    "test_quat": {
        "*.test_scalar_division_float16_*": "one float16 unit in the last place from Warp's "
                                            "gradient: gradloom's adjoint of q / s is the "
                                            "scalar rule per component (-g * (q/s) / s), "
                                            "Warp's quaternion rule is -dot(q, g) / (s * s)",
    },
    "test_func": {
        "*.test_cpython_call_user_function_*": _PY_FUNC,
        "*.test_func_decorated_signature_introspection": _NOT_IMPL + "warp.sparse",
    },
    "test_print": {
        "*.test_print_numeric_*": _PY_FUNC + " (its assert uses repr())",
    },
    **{f"deterministic.test_deterministic_{f}": {
        "*rejected*": _DIFF + "gradloom's deterministic mode adds in thread order and refuses "
                              "no kernel (Warp's deferred scatter cannot handle these)",
        "*WarpDeterminismError*": _DIFF + "deterministic mode refuses no kernel",
        "*consumed*": _DIFF + "deterministic mode refuses no kernel",
        "*counter_store*": _DIFF + "deterministic mode refuses no kernel",
    } for f in ("backward", "counter", "scatter")},
    "geometry.test_volume": {
        "*.test_volume_transform_gradient_*": _RIGHT + " (warp-lang's adjoint of "
                                              "`volume_index_to_world` applies the map, not its "
                                              "transpose; torus.nvdb's map is not symmetric)",
        "*.test_volume_from_numpy*": _NOT_IMPL + "`array.deleter`",
        "*.test_volume_sample_index_equivalent_dtype_*": "gradloom's type factories intern their "
            "types: `wp.types.vector(length=4, dtype=wp.float64)` is `wp.vec4d` itself, and the "
            "test asserts a distinct object",
        "*.test_volume_feature_array_*": _NOT_IMPL + "NanoVDB index grids (`OnIndex`)",
        "*.test_volume_multiple_grids_*": _NOT_IMPL + "NanoVDB index grids (`OnIndex`)",
    },
    "geometry.test_bvh": {
        "*.test_sah_depth_fits_query_stack": _DIFF + "`Bvh.id` points at gradloom's descriptor, "
                                             "not Warp's native header the test reads (and the "
                                             "tree is a linear BVH, not Warp's SAH tree)",
        "*.test_bvh_cubql_constructor_*": "`wp.is_cubql_available()` is False in gradloom (no "
                                          "cuBQL), so the test skips; warp-lang's wheel has it",
    },
    "geometry.test_volume_validation": {
        "*.test_volume_rejects_missing_feature_name": "the test builds a Volume without its "
            "constructor and mocks Warp's native runtime (`volume.runtime.core`); gradloom's "
            "`Volume.id` is the buffer's address, a read-only property",
    },
    "test_codegen": {
        "*.test_error_mutating_constant_in_dynamic_loop_*": _DIFF + "a variable set from a "
                                                            "literal is an ordinary loop value",
        "*.test_error_global_var_*": _PRIVATE_NAME,
        "*.test_error_unmatched_arguments_*": _DIFF + "two literals fold in Python (`1 * 1.0`)",
        "*.test_overloaded_slot_update_backward_rejected_*": _DIFF + "gradloom differentiates "
                                                             "slot updates through a user's "
                                                             "operator function (Warp refuses)",
    },
    "test_generics": {
        "*.test_type_attribute_error_*": _PRIVATE_NAME,
        "*.test_eager_generic_func_does_not_retain_array_*": "reads Warp's `Function."
                                                             "user_overloads` registry",
    },
    "test_composite_component_adjoint": {
        "*.test_array_composite_slot_augassign_backward_*": "refused with a clear CompileError: "
                                                            "the kernel reads an element it "
                                                            "updates (docs/autodiff.md)",
        "*.test_array_composite_slot_multiply_assign_backward_rejected_*":
            _DIFF + "gradloom differentiates `a[i].x *= v` (Warp refuses it)",
        "*.test_embedded_array_without_outer_gradient_*": "refused with a clear CompileError: "
                                                          "gradloom cannot differentiate an "
                                                          "array stored inside another array",
        "*.test_nested_view_component_gradient_*": _DIFF + "`backward()` from user-set "
                                                   "gradients restores them afterwards",
    },
    "test_fixedarray": {"*.test_fixedarray_ptr_*": _DIFF + "fixed arrays are values (no .ptr)"},
    "test_grad": {"*.test_mesh_grad_*": "refused with a clear CompileError: gradloom does not "
                                        "differentiate through a mesh's points read by id "
                                        "(`wp.mesh_get`)"},
    "test_grad_customs": {
        "*.test_custom_grad_tile_*": _NOT_IMPL + "tiles",
        "*.test_native_snippet_*": _DIFF + "C++/CUDA snippets (`@wp.func_native`) cannot "
                                   "compile through LLVM",
    },
    "test_subscript_types": {
        "*fabricarray*": _NOT_IMPL + "fabric arrays",
        "*.test_annotation_helpers": _NOT_IMPL + "fabric arrays",
        "*.test_any_dtype": _NOT_IMPL + "fabric arrays",
    },
}


def note_for(module: str, test: str) -> str:
    """The note on a failing test of module, or ''."""
    for pattern, note in NOTES.get(module, {}).items():
        if fnmatchcase(test, pattern):
            return note
    return ""
