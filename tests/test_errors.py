"""Bad kernels and bad launches give a clear gradloom error that points at the user's line.

Compile errors surface at the first launch. Each test marks the offending statement with a
`# <- here` comment; the expected line is found from the source, never hard-coded.
"""

# ruff: noqa: B018, E731, F821, F841

import inspect
import os

import numpy as np
import pytest

import gradloom as wp
from gradloom.errors import (
    CompileError,
    GradloomError,
    KernelTypeError,
    LaunchError,
    UnknownNameError,
    UnsupportedSyntaxError,
)

THIS_FILE = os.path.abspath(__file__)
MARK = "# <- here"


def _pyfunc(obj):
    return getattr(obj, "pyfunc", None) or getattr(obj, "func", obj)


def marked_line(obj):
    """(absolute line, statement text) of the line marked `# <- here` in obj's source."""
    lines, first = inspect.getsourcelines(_pyfunc(obj))
    hits = [
        (first + k, text.split(MARK)[0].strip()) for k, text in enumerate(lines) if MARK in text
    ]
    assert len(hits) == 1, f"expected one '{MARK}' marker in {obj!r}"
    return hits[0]


def farr(n=4):
    return wp.zeros(n, dtype=float, device="cpu")


def compile_error(kernel, cls, phrase, *, where=None, inputs=None, dim=1):
    """Launch kernel, expect cls at the marked line of `where` (default: the kernel itself)."""
    line, text = marked_line(where if where is not None else kernel)
    with pytest.raises(cls) as info:
        wp.launch(kernel, dim, inputs=[farr()] if inputs is None else inputs, device="cpu")
    err = info.value
    msg = str(err)
    assert isinstance(err, CompileError)
    assert os.path.abspath(err.loc.file) == THIS_FILE
    assert err.loc.line == line, msg
    first = msg.splitlines()[0]
    assert first.startswith(f"{err.loc.file}:{line}:"), msg
    notes = "\n".join(getattr(err, "__notes__", []))
    assert text in notes, notes  # the caret excerpt (a note under the message) shows the line
    assert "^" in notes
    assert phrase.lower() in msg.lower(), msg
    return err


# =============================================================================================
# unsupported syntax


def test_class_definition_in_kernel():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        class Foo:  # <- here
            pass

    compile_error(k, UnsupportedSyntaxError, "class definition")


def test_lambda_in_kernel():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        f = lambda v: v + 1.0  # <- here
        x[0] = 1.0

    compile_error(k, UnsupportedSyntaxError, "lambda")


def test_try_except_in_kernel():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        try:  # <- here
            x[0] = 1.0
        except Exception:
            pass

    compile_error(k, UnsupportedSyntaxError, "try/except")


def test_with_statement_in_kernel():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        with open("f"):  # <- here
            x[0] = 1.0

    compile_error(k, UnsupportedSyntaxError, "with-statement")


def test_while_else():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        n = int(0)
        while n < 3:  # <- here
            n += 1
        else:
            x[0] = 1.0

    compile_error(k, UnsupportedSyntaxError, "while/else")


def test_for_over_a_list():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        for v in [1.0, 2.0]:  # <- here
            x[0] = v

    compile_error(k, UnsupportedSyntaxError, "range")


@wp.func
def recursive_fn(n: int) -> int:
    if n <= 0:
        return 0
    return recursive_fn(n - 1) + 1  # <- here


@wp.kernel
def direct_recursion_kernel(x: wp.array(dtype=float)):
    x[0] = float(recursive_fn(3))


def test_direct_recursion():
    compile_error(direct_recursion_kernel, UnsupportedSyntaxError, "recursion", where=recursive_fn)


@wp.func
def ping(n: int) -> int:
    return pong(n - 1)


@wp.func
def pong(n: int) -> int:
    return ping(n - 1)  # <- here


@wp.kernel
def mutual_recursion_kernel(x: wp.array(dtype=float)):
    x[0] = float(ping(3))


def test_mutual_recursion():
    compile_error(mutual_recursion_kernel, UnsupportedSyntaxError, "recursion", where=pong)


# =============================================================================================
# names


def test_unknown_builtin():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        x[0] = wp.not_a_builtin(x[0])  # <- here

    err = compile_error(k, AttributeError, "not_a_builtin")  # as Warp: an AttributeError
    assert "Could not find function wp.not_a_builtin" in str(err)


def test_undefined_name():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        x[0] = undefined_thing + 1.0  # <- here

    compile_error(k, UnknownNameError, "'undefined_thing' is not defined")


# =============================================================================================
# types


def test_none_as_a_value_is_a_type_error():
    # Warp reports it as a WarpCodegenTypeError ("None type unsupported")
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        i = wp.tid()
        x[i] = None  # <- here

    compile_error(k, KernelTypeError, "None type unsupported")


def test_int_plus_float_is_a_type_error():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        i = wp.tid()
        y = i + x[0]  # <- here
        x[0] = y

    compile_error(k, KernelTypeError, "int32")


def test_float_literal_into_int_array():
    @wp.kernel
    def k(a: wp.array(dtype=int)):
        a[0] = 1.5  # <- here

    compile_error(k, KernelTypeError, "float", inputs=[wp.zeros(4, dtype=int, device="cpu")])


def test_float_value_into_int_array():
    @wp.kernel
    def k(a: wp.array(dtype=int), x: wp.array(dtype=float)):
        a[0] = x[0]  # <- here

    compile_error(
        k, KernelTypeError, "float32", inputs=[wp.zeros(4, dtype=int, device="cpu"), farr()]
    )


@wp.func
def takes_vec(v: wp.vec3) -> float:
    return v[0]


def test_func_wrong_argument_type():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        x[0] = takes_vec(x[0])  # <- here

    compile_error(k, KernelTypeError, "argument 'v'")


def test_func_wrong_argument_count():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        x[0] = takes_vec(wp.vec3(), 2.0)  # <- here

    compile_error(k, KernelTypeError, "takes_vec")


def test_vec3_plus_mat33():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        v = wp.vec3(1.0, 2.0, 3.0)
        m = wp.identity(n=3, dtype=float)
        w = v + m  # <- here
        x[0] = w[0]

    compile_error(k, KernelTypeError, "vec3")


def test_vector_indexed_with_float():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        v = wp.vec3(1.0, 2.0, 3.0)
        x[0] = v[x[1]]  # <- here

    compile_error(k, CompileError, "indices must be integers")


def test_kernel_returning_a_value():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        return x[0]  # <- here

    compile_error(k, KernelTypeError, "kernels cannot return values")


def test_kernel_argument_without_annotation():
    @wp.kernel
    def k(x: wp.array(dtype=float), n):  # <- here
        x[0] = 1.0

    err = compile_error(k, KernelTypeError, "needs a type annotation", inputs=[farr(), 1])
    assert "'n'" in str(err)


def test_variable_changes_type_inside_loop():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        s = int(0)
        # the type conflict is reported at the assignment that changed the type
        for j in range(3):
            s = float(j) * 0.5  # <- here
        x[0] = float(s)

    err = compile_error(k, KernelTypeError, "'s'")
    assert "int32 before the loop but float32" in str(err)


def test_variable_of_different_types_on_two_branches():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        # the type conflict is reported at the assignment lowered last (the else branch's)
        if x[0] > 0.0:
            s = int(1)
        else:
            s = float(2.0)  # <- here
        x[1] = float(s)

    err = compile_error(k, KernelTypeError, "'s'")
    assert "int32 on one branch and float32" in str(err)


@wp.func
def bad_helper(v: float) -> float:
    w = v + wp.vec3(1.0, 2.0, 3.0)  # <- here
    return w[0]


@wp.kernel
def calls_bad_helper(x: wp.array(dtype=float)):
    x[0] = bad_helper(x[0])


def test_error_inside_func_reports_the_funcs_line():
    err = compile_error(calls_bad_helper, KernelTypeError, "vec3", where=bad_helper)
    assert err.loc.func == "bad_helper"


def test_compile_error_is_raised_again_on_the_next_launch():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        x[0] = nowhere  # <- here

    compile_error(k, UnknownNameError, "nowhere")
    compile_error(k, UnknownNameError, "nowhere")


def test_shape_index_out_of_range():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        x[0] = float(x.shape[5])  # <- here

    compile_error(k, CompileError, "5")


def test_tid_with_more_than_four_indices():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        _i, _j, _k, _m, _n = wp.tid()  # <- here
        x[0] = 1.0

    compile_error(k, CompileError, "tid")


def test_builtin_error_names_the_called_builtin():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        x[0] = wp.length(x[0])  # <- here

    err = compile_error(k, KernelTypeError, "needs a vector")
    assert "length_sq" not in str(err)


CALLABLE_CONST = 3


def test_calling_a_non_function_names_it():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        x[0] = CALLABLE_CONST(1.0)  # <- here

    compile_error(k, CompileError, "'CALLABLE_CONST'")


# =============================================================================================
# launch errors


@wp.kernel
def scale_kernel(x: wp.array(dtype=float), factor: float, count: int, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[i] * factor + float(count)


@wp.kernel
def vec_kernel(points: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(points[i])


@wp.kernel
def grid_kernel(grid: wp.array2d(dtype=float)):
    i, j = wp.tid()
    grid[i, j] = float(i * 10 + j)


@wp.struct
class Params:
    scale: float


@wp.struct
class OtherParams:
    scale: float


@wp.kernel
def struct_kernel(p: Params, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = p.scale


def launch_error(kernel, dim, inputs, *phrases):
    with pytest.raises(LaunchError) as info:
        wp.launch(kernel, dim, inputs=inputs, device="cpu")
    msg = str(info.value)
    for p in phrases:
        assert p in msg, msg
    return msg


def test_launch_wrong_argument_count():
    launch_error(scale_kernel, 4, [farr(), 1.0], "takes 4 arguments", "got 2", "factor")


def test_launch_wrong_array_dtype():
    launch_error(vec_kernel, 4, [farr(), farr()], "'points'", "vec3")


def test_launch_wrong_ndim():
    grid = wp.zeros(4, dtype=float, device="cpu")
    launch_error(grid_kernel, (2, 2), [grid], "'grid'", "ndim=1")


def test_launch_non_array_where_array_expected():
    launch_error(scale_kernel, 4, [[0.0, 0.0, 0.0, 0.0], 1.0, 1, farr()], "'x'")


def test_launch_numpy_array_of_the_wrong_dtype():
    # numpy arrays are accepted zero-copy (docs/interop.md); a converting copy would lose the
    # kernel's writes, so a dtype mismatch is an error naming the argument and both dtypes
    launch_error(scale_kernel, 4, [np.zeros(4, np.float64), 1.0, 1, farr()], "'x'", "float64")


def test_launch_float_where_int_expected():
    launch_error(scale_kernel, 4, [farr(), 1.0, 2.5, farr()], "'count'", "int32")


def test_launch_array_where_scalar_expected():
    launch_error(scale_kernel, 4, [farr(), farr(), 1, farr()], "'factor'")


def test_launch_struct_of_wrong_type():
    p = OtherParams()
    p.scale = 1.0
    launch_error(struct_kernel, 4, [p, farr()], "'p'", "Params")


def test_launch_non_kernel():
    def plain(x):
        pass

    with pytest.raises(LaunchError, match="@wp.kernel"):
        wp.launch(plain, 4, inputs=[farr()], device="cpu")


@pytest.mark.parametrize("dim", [-1, (2, -3), (1, 1, 1, 1, 1), ()])
def test_launch_invalid_dim(dim):
    with pytest.raises(LaunchError, match="dim"):
        wp.launch(scale_kernel, dim, inputs=[farr(), 1.0, 1, farr()], device="cpu")


def test_launch_2d_tid_with_1d_dim():
    grid = wp.zeros((2, 2), dtype=float, device="cpu")
    launch_error(grid_kernel, 4, [grid], "grid_kernel", "wp.tid()")


def test_launch_on_cuda_is_a_clear_error():
    with pytest.raises(GradloomError) as info:
        wp.launch(scale_kernel, 4, inputs=[farr(), 1.0, 1, farr()], device="cuda")
    assert "cuda" in str(info.value).lower()


def test_calling_a_kernel_directly_is_a_type_error():
    with pytest.raises(TypeError, match="wp.launch"):
        scale_kernel(farr(), 1.0, 1, farr())


def test_failed_launch_leaves_output_unchanged():
    x = wp.array(np.arange(4, dtype=np.float32), dtype=float, device="cpu")
    out = wp.array(np.full(4, 7.0, np.float32), dtype=float, device="cpu")
    # a bad argument after `out` is packed: the launch must not run at all
    bad_inputs = [
        [x, 2.0, 1.5, out],  # float for int 'count'
        [x, 2.0, 1, out, 5],  # too many arguments
        [x, 2.0, 1, np.zeros(4)],  # numpy array for the output
    ]
    for inputs in bad_inputs:
        with pytest.raises(LaunchError):
            wp.launch(scale_kernel, 4, inputs=inputs, device="cpu")
        np.testing.assert_array_equal(out.numpy(), np.full(4, 7.0, np.float32))
    with pytest.raises(LaunchError):
        wp.launch(
            grid_kernel, 4, inputs=[wp.zeros((2, 2), dtype=float, device="cpu")], device="cpu"
        )
    # and the kernel still works afterwards
    wp.launch(scale_kernel, 4, inputs=[x, 2.0, 1, out], device="cpu")
    np.testing.assert_allclose(out.numpy(), np.arange(4) * 2.0 + 1.0)


@pytest.mark.parametrize(
    "inputs",
    [
        [farr(), "two", 1, farr()],
        [farr(), 1j, 1, farr()],
        [farr(), 1.0, "3", farr()],
        [farr(), 1.0, 2**40, farr()],
    ],
    ids=["str-for-float", "complex-for-float", "str-for-int", "int32-overflow"],
)
def test_launch_bad_scalar_values(inputs):
    launch_error(scale_kernel, 4, inputs, "argument '")


@pytest.mark.parametrize(
    "dim",
    [2.5, None, "ab", True, (2, 2.0), (2**40, 2**40)],
    ids=["float", "None", "str", "bool", "float-in-tuple", "product-overflow"],
)
def test_launch_dim_of_wrong_type(dim):
    with pytest.raises(LaunchError, match="dim"):
        wp.launch(scale_kernel, dim, inputs=[farr(), 1.0, 1, farr()], device="cpu")


def test_launch_dim_beyond_int64():
    with pytest.raises(LaunchError, match="dim"):
        wp.launch(scale_kernel, 2**70, inputs=[farr(), 1.0, 1, farr()], device="cpu")


# =============================================================================================
# internal errors that used to leak, and what the traceback shows


def test_builtin_called_with_too_many_arguments_names_its_signatures():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        i = wp.tid()
        x[i] = wp.sin(x[i], x[i])  # <- here

    err = compile_error(k, KernelTypeError, "wp.sin() got 2 arguments")
    assert "sin(x: Float) -> Float" in str(err)


def test_builtin_called_with_an_unknown_keyword():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        i = wp.tid()
        x[i] = wp.clamp(x[i], lo=0.0, hi=1.0)  # <- here

    compile_error(k, KernelTypeError, "keywords lo, hi")


def test_numpy_functions_suggest_the_builtin():
    # Python's math functions are the builtins of their name, as in Warp
    # (tests/test_library_constructs.py); NumPy's are refused with the builtin named
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        i = wp.tid()
        x[i] = np.sin(x[i])  # <- here

    compile_error(k, UnknownNameError, "use the kernel builtin wp.sin instead")


@pytest.mark.parametrize("what", ["an f-string", "a list comprehension",
                                  "a dict comprehension", "a generator expression"])
def test_unsupported_expressions_are_named_in_words(what):
    if what == "an f-string":
        @wp.kernel
        def k(x: wp.array(dtype=float)):
            s = f"{x}"  # <- here
    elif what == "a list comprehension":
        @wp.kernel
        def k(x: wp.array(dtype=float)):
            s = [v for v in range(3)]  # <- here
    elif what == "a dict comprehension":
        @wp.kernel
        def k(x: wp.array(dtype=float)):
            s = {v: v for v in range(3)}  # <- here
    else:
        @wp.kernel
        def k(x: wp.array(dtype=float)):
            s = sum(v for v in range(3))  # <- here

    err = compile_error(k, UnsupportedSyntaxError, what)
    assert "JoinedStr" not in str(err) and "Comp" not in str(err)


async def async_kernel_body(x: wp.array(dtype=float)):  # <- here
    x[0] = 1.0


def test_async_def_kernel_points_at_its_line():
    k = wp.kernel(async_kernel_body)
    line, _ = marked_line(async_kernel_body)
    with pytest.raises(UnsupportedSyntaxError) as info:
        wp.launch(k, 1, inputs=[farr()], device="cpu")
    assert info.value.loc.line == line and os.path.abspath(info.value.loc.file) == THIS_FILE
    assert "async def" in str(info.value)


def test_a_compile_error_traceback_shows_the_users_error_only():
    import traceback

    @wp.kernel
    def k(x: wp.array(dtype=float)):
        x[0] = undefined_name  # <- here

    with pytest.raises(UnknownNameError) as info:
        wp.launch(k, 1, inputs=[farr()], device="cpu")
    text = "".join(traceback.format_exception(info.value))
    assert "During handling" not in text and "_gl_prepared" not in text
    package = os.path.dirname(os.path.abspath(wp.__file__))
    internal = [tb for tb in traceback.extract_tb(info.value.__traceback__)
                if os.path.abspath(tb.filename).startswith(package)]
    assert len(internal) <= 1, internal  # at most the public entry point that re-raised it


def test_a_launch_error_traceback_has_no_internal_frames_beyond_the_entry_point():
    import traceback

    with pytest.raises(LaunchError) as info:
        wp.launch(scale_kernel, 4, inputs=[farr(), "two", 1, farr()], device="cpu")
    package = os.path.dirname(os.path.abspath(wp.__file__))
    internal = [tb for tb in traceback.extract_tb(info.value.__traceback__)
                if os.path.abspath(tb.filename).startswith(package)]
    assert len(internal) <= 1, internal


# =============================================================================================
# help() and the package's surface


def test_help_of_a_builtin_shows_its_signatures_and_meaning():
    import pydoc

    text = pydoc.render_doc(wp.sin, renderer=pydoc.plaintext)
    assert "sin(x: Float) -> Float" in text and "sin(x: Vector) -> Vector" in text
    assert "kernel builtin" in text and "Differentiable" in text
    assert "Builtin(name" not in text and "__delattr__" not in text  # not the dataclass's
    from gradloom.builtins.registry import REGISTRY

    missing = [n for n, b in REGISTRY.items() if b.signatures[0] not in (b.__doc__ or "")]
    assert not missing, missing


def test_help_of_a_type_explains_it():
    import pydoc

    text = pydoc.render_doc(wp.vec3, renderer=pydoc.plaintext)
    assert "a vector of 3 float32 components" in text and "dtype=wp.vec3f" in text
    assert "__delattr__" not in text
    assert "3x3 matrix of float64" in wp.mat33d.__doc__
    assert "16-bit floating-point" in wp.float16.__doc__


def test_help_of_launch_documents_every_argument():
    doc = wp.launch.__doc__
    for arg in ("kernel", "dim", "inputs", "outputs", "adj_inputs", "device", "adjoint",
                "record_tape", "record_cmd", "KeyboardInterrupt", "LaunchError"):
        assert arg in doc, arg


def test_the_package_ships_py_typed():
    assert os.path.exists(os.path.join(os.path.dirname(wp.__file__), "py.typed"))


@wp.kernel
def exch_not_differentiable(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.atomic_exch(x, i, 1.0)


def test_compile_error_at_backward_hides_internal_frames():
    import traceback
    from pathlib import Path

    x = wp.zeros(3, requires_grad=True)
    y = wp.zeros(3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(exch_not_differentiable, 3, inputs=[x, y])
    with pytest.raises(wp.CompileError) as info:
        tape.backward(grads={y: np.ones(3, np.float32)})
    package = str(Path(wp.__file__).parent)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert sum(f.filename.startswith(package) for f in frames) <= 1, frames
    assert info.value.__suppress_context__
