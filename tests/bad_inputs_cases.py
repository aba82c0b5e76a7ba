"""The cases of tests/test_bad_inputs.py: bad input a new user might give gradloom, each with the
error it must raise and a phrase its message must contain (the argument's name, or the kernel's
file and line as `{line:NAME}`, which the runner replaces by `<kernels file>:<line>:`, the line
of the statement marked `# @NAME` in KERNELS).

Each case is Python source run by the runner's child process after PRELUDE, in a namespace
holding `wp`, `np`, the kernels of KERNELS (imported from their own file) and the user arrays
A, B, G, V, I (checked unchanged after every case).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    id: str
    code: str
    error: str  # the exception class's name ("-" for: no error at all)
    phrase: str  # must appear in the message (case-insensitive); may hold {line:NAME}


KERNELS = '''
import gradloom as wp
import numpy as np
import math


@wp.kernel
def add_one(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + 1.0  # @add_one


@wp.kernel
def scale(a: wp.array(dtype=float), s: float, n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] * s + float(n)


@wp.kernel
def grid(g: wp.array2d(dtype=float)):
    i, j = wp.tid()
    g[i, j] = g[i, j] * 2.0


@wp.kernel
def vec_k(v: wp.array(dtype=wp.vec3), d: wp.vec3):
    i = wp.tid()
    v[i] = v[i] + d


@wp.struct
class Params:
    k: float
    data: wp.array(dtype=float)


@wp.kernel
def struct_k(p: Params, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = p.k * p.data[i]


@wp.kernel
def shift_read(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i + 1]  # @shift_read


@wp.kernel
def bad_arity(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = wp.sin(a[i], a[i])  # @bad_arity


@wp.kernel
def bad_name(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = no_such_thing(a[i])  # @bad_name


@wp.kernel
def np_call(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = np.cos(a[i])  # @np_call


@wp.kernel
def math_call(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = math.gamma(a[i])  # @math_call: no kernel builtin of that name


@wp.kernel
def fstring(a: wp.array(dtype=float)):
    i = wp.tid()
    s = f"{i}"  # @fstring


@wp.kernel
def listcomp(a: wp.array(dtype=float)):
    i = wp.tid()
    s = [j for j in range(3)]  # @listcomp


@wp.kernel
def lambda_k(a: wp.array(dtype=float)):
    f = lambda v: v  # @lambda_k


@wp.kernel
def try_k(a: wp.array(dtype=float)):
    try:  # @try_k
        a[0] = 1.0
    except Exception:
        pass


@wp.kernel
def import_k(a: wp.array(dtype=float)):
    import os  # @import_k


@wp.kernel
def vec_plus_float(a: wp.array(dtype=float)):
    v = wp.vec3(1.0, 2.0, 3.0)
    a[0] = v + 1.0  # @vec_plus_float


@wp.kernel
def too_many_indices(a: wp.array(dtype=float)):
    a[0, 1] = 1.0  # @too_many_indices


@wp.kernel
def float_index(a: wp.array(dtype=float)):
    a[1.5] = 1.0  # @float_index


@wp.kernel
def no_annotation(a):  # @no_annotation
    a[0] = 1.0


@wp.kernel
def tid_args(a: wp.array(dtype=float)):
    i = wp.tid(0)  # @tid_args
    a[i] = 1.0


@wp.kernel
def wrong_vec_len(a: wp.array(dtype=float)):
    v = wp.vec3(1.0, 2.0)  # @wrong_vec_len
    a[0] = v[0]


@wp.kernel
def bad_component(a: wp.array(dtype=float)):
    v = wp.vec3(1.0, 2.0, 3.0)
    a[0] = v.q  # @bad_component


@wp.kernel
def bad_field(p: Params, out: wp.array(dtype=float)):
    out[0] = p.nope  # @bad_field


@wp.kernel
def matmul_mismatch(a: wp.array(dtype=float)):
    m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    v = wp.vec3(1.0, 2.0, 3.0)
    w = m * v  # @matmul_mismatch
    a[0] = w[0]


@wp.kernel
def dict_k(a: wp.array(dtype=float)):
    d = {1: 2}  # @dict_k


@wp.kernel
def with_k(a: wp.array(dtype=float)):
    with open("x"):  # @with_k
        pass


@wp.kernel
def global_k(a: wp.array(dtype=float)):
    global G  # @global_k
    a[0] = 1.0


@wp.kernel
def string_value(a: wp.array(dtype=float)):
    a[0] = "text"  # @string_value


@wp.kernel
def call_kernel(a: wp.array(dtype=float)):
    add_one(a)  # @call_kernel


async def async_body(a: wp.array(dtype=float)):  # @async_body
    a[0] = 1.0


async_k = wp.kernel(async_body)
'''

PRELUDE = """
A = wp.array(np.arange(4, dtype=np.float32))
B = wp.array(np.arange(4, dtype=np.float32) * 10)
G = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3))
V = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=wp.vec3)
I = wp.array(np.arange(4, dtype=np.int32))
"""

_SHAPES = [("negative", "-1"), ("negative5", "-5"), ("neg_2d", "(-1, 4)"), ("neg_inner", "(2, -3)"),
           ("float", "2.5"), ("str", "'ab'"), ("bool", "True"), ("five_dims", "(1, 1, 1, 1, 1)"),
           ("huge", "10**15"), ("huge_2d", "(2**31 - 1, 2**31 - 1)"), ("float_in_tuple", "(2, 2.0)"),
           ("list_of_str", "['a']")]

_ALLOC = [f"wp.{fn}({{s}})" for fn in ("zeros", "ones", "empty")] + ["wp.full({s}, 1.0)",
                                                                   "wp.array(shape={s})"]


def _alloc_cases() -> list[Case]:
    out = []
    for fn in _ALLOC:
        for name, shape in _SHAPES:
            # a dimension past int32 is refused as Warp refuses it (kernels index in int32);
            # dimensions within it whose product does not fit in memory, as out of memory
            phrase = "32-bit" if name == "huge" else "memory" if name == "huge_2d" else (
                "4 dimensions" if name == "five_dims" else "shape")
            out.append(Case(f"{fn.split('(')[0]}-{name}", fn.format(s=shape), "GradloomError",
                            phrase))
    return out


_LAUNCH = [
    Case("launch-not-a-kernel", "wp.launch(lambda a: a, 4, [A])", "LaunchError", "@wp.kernel"),
    Case("launch-none-kernel", "wp.launch(None, 4, [A])", "LaunchError", "@wp.kernel"),
    Case("launch-dim-negative", "wp.launch(add_one, -1, [A])", "LaunchError", "dim"),
    Case("launch-dim-float", "wp.launch(add_one, 2.0, [A])", "LaunchError", "dim"),
    Case("launch-dim-str", "wp.launch(add_one, '4', [A])", "LaunchError", "dim"),
    Case("launch-dim-five", "wp.launch(add_one, (1, 1, 1, 1, 1), [A])", "LaunchError", "dim"),
    Case("launch-dim-overflow", "wp.launch(add_one, (2**40, 2**40), [A])", "LaunchError", "dim"),
    Case("launch-dim-too-few", "wp.launch(grid, 6, [G])", "LaunchError", "dim"),
    Case("launch-too-few-args", "wp.launch(scale, 4, [A, 1.0])", "LaunchError", "takes 4"),
    Case("launch-too-many-args", "wp.launch(add_one, 4, [A, B])", "LaunchError", "takes 1"),
    Case("launch-wrong-dtype", "wp.launch(add_one, 4, [I])", "LaunchError", "argument 'a'"),
    Case("launch-wrong-ndim", "wp.launch(add_one, 4, [G])", "LaunchError", "argument 'a'"),
    Case("launch-scalar-for-array", "wp.launch(add_one, 4, [1.0])", "LaunchError",
         "argument 'a'"),
    Case("launch-array-for-scalar", "wp.launch(scale, 4, [A, A, 1, B])", "LaunchError",
         "argument 's'"),
    Case("launch-str-for-float", "wp.launch(scale, 4, [A, 'x', 1, B])", "LaunchError",
         "argument 's'"),
    Case("launch-float-for-int", "wp.launch(scale, 4, [A, 1.0, 1.5, B])", "LaunchError",
         "argument 'n'"),
    Case("launch-int-overflow", "wp.launch(scale, 4, [A, 1.0, 2**40, B])", "LaunchError",
         "argument 'n'"),
    # None is an unset (null, empty) array, as in Warp: reading it is out of bounds
    Case("launch-none-array", "wp.config.mode = 'debug'\nwp.launch(add_one, 4, [None])",
         "KernelRuntimeError", "shape (0,)"),
    Case("launch-numpy-float64", "wp.launch(add_one, 4, [np.zeros(4)])", "LaunchError",
         "argument 'a'"),
    Case("launch-vec-wrong-length", "wp.launch(vec_k, 4, [V, (1.0, 2.0)])", "LaunchError",
         "argument 'd'"),
    Case("launch-vec-str", "wp.launch(vec_k, 4, [V, 'abc'])", "LaunchError", "argument 'd'"),
    Case("launch-struct-wrong", "wp.launch(struct_k, 4, [1.0, B])", "LaunchError",
         "argument 'p'"),
    # an array field of another dtype is refused when assigned (as in Warp)
    Case("launch-struct-field-wrong",
         "p = Params(); p.k = 2.0; p.data = I\nwp.launch(struct_k, 4, [p, B])", "StructFieldError",
         "field 'data'"),
    # a field named like a property of its class: Python and kernels would read different things
    Case("struct-field-named-like-property",
         "@wp.struct\nclass P:\n    speed: float\n    @property\n    def speed(self):\n"
         "        return 1.0", "StructFieldError", "'speed' is both a field"),
    Case("launch-cuda-device", "wp.launch(add_one, 4, [A], device='cuda')", "GradloomError",
         "cuda"),
    Case("launch-bad-device", "wp.launch(add_one, 4, [A], device='tpu')", "GradloomError",
         "tpu"),
    Case("launch-adjoint-bad-grad", "wp.launch(add_one, 4, [A], adj_inputs=[I], adjoint=True)",
         "LaunchError", "adjoint argument 0"),
    Case("cmd-bad-param-name", "c = wp.launch(add_one, 4, [A], record_cmd=True)\n"
         "c.set_param_by_name('zz', B)", "LaunchError", "no parameter 'zz'"),
    Case("cmd-bad-param-index", "c = wp.launch(add_one, 4, [A], record_cmd=True)\n"
         "c.set_param_at_index(5, B)", "LaunchError", "index 5"),
    Case("cmd-bad-param-value", "c = wp.launch(add_one, 4, [A], record_cmd=True)\n"
         "c.set_param_at_index(0, I)\nc.launch()", "LaunchError", "argument 'a'"),
    Case("cmd-bad-dim", "c = wp.launch(add_one, 4, [A], record_cmd=True)\nc.set_dim(-3)",
         "LaunchError", "dim"),
    Case("call-kernel-directly", "add_one(A)", "TypeError", "wp.launch"),
    Case("call-builtin-in-python", "wp.sin(1.0, 2.0, 3.0)", "KernelTypeError",
         "fits none of its signatures"),
]

_COMPILE = [
    Case("compile-builtin-arity", "wp.launch(bad_arity, 4, [A])", "KernelTypeError", "{line:bad_arity}"),
    Case("compile-unknown-name", "wp.launch(bad_name, 4, [A])", "UnknownNameError", "{line:bad_name}"),
    Case("compile-np-function", "wp.launch(np_call, 4, [A])", "UnknownNameError", "{line:np_call}"),
    Case("compile-math-function", "wp.launch(math_call, 4, [A])", "UnknownNameError",
         "{line:math_call}"),
    Case("compile-fstring", "wp.launch(fstring, 4, [A])", "UnsupportedSyntaxError", "{line:fstring}"),
    Case("compile-listcomp", "wp.launch(listcomp, 4, [A])", "UnsupportedSyntaxError",
         "{line:listcomp}"),
    Case("compile-lambda", "wp.launch(lambda_k, 4, [A])", "UnsupportedSyntaxError", "{line:lambda_k}"),
    Case("compile-try", "wp.launch(try_k, 4, [A])", "UnsupportedSyntaxError", "{line:try_k}"),
    Case("compile-import", "wp.launch(import_k, 4, [A])", "UnsupportedSyntaxError", "{line:import_k}"),
    Case("compile-vec-plus-float", "wp.launch(vec_plus_float, 4, [A])", "CompileError",
         "{line:vec_plus_float}"),
    Case("compile-too-many-indices", "wp.launch(too_many_indices, 4, [A])", "CompileError",
         "{line:too_many_indices}"),
    Case("compile-float-index", "wp.launch(float_index, 4, [A])", "CompileError",
         "{line:float_index}"),
    Case("compile-no-annotation", "wp.launch(no_annotation, 4, [A])", "KernelTypeError",
         "{line:no_annotation}"),
    Case("compile-tid-args", "wp.launch(tid_args, 4, [A])", "CompileError", "{line:tid_args}"),
    Case("compile-vec-length", "wp.launch(wrong_vec_len, 4, [A])", "CompileError",
         "{line:wrong_vec_len}"),
    Case("compile-bad-component", "wp.launch(bad_component, 4, [A])", "CompileError",
         "{line:bad_component}"),
    Case("compile-bad-field", "p = Params(); p.k = 1.0; p.data = A\n"
         "wp.launch(bad_field, 4, [p, B])", "CompileError", "{line:bad_field}"),
    Case("compile-matmul-mismatch", "wp.launch(matmul_mismatch, 4, [A])", "CompileError",
         "{line:matmul_mismatch}"),
    Case("compile-dict", "wp.launch(dict_k, 4, [A])", "UnsupportedSyntaxError", "{line:dict_k}"),
    Case("compile-with", "wp.launch(with_k, 4, [A])", "UnsupportedSyntaxError", "{line:with_k}"),
    Case("compile-global", "wp.launch(global_k, 4, [A])", "UnsupportedSyntaxError",
         "{line:global_k}"),
    Case("compile-string-value", "wp.launch(string_value, 4, [A])", "CompileError",
         "{line:string_value}"),
    Case("compile-call-kernel", "wp.launch(call_kernel, 4, [A])", "CompileError",
         "{line:call_kernel}"),
    Case("compile-async-def", "wp.launch(async_k, 4, [A])", "UnsupportedSyntaxError",
         "{line:async_body}"),
    Case("compile-adjoint-of-error", "wp.launch(bad_name, 4, [A], adjoint=True, "
         "adj_inputs=[B])", "UnknownNameError", "{line:bad_name}"),
    Case("debug-out-of-bounds", "wp.config.mode = 'debug'\n"
         "wp.launch(shift_read, 4, [A, B])", "KernelRuntimeError", "{line:shift_read}"),
    Case("debug-oob-huge-dim", "wp.config.mode = 'debug'\n"
         "wp.launch(add_one, 10**12, [A])", "KernelRuntimeError", "shape (4,)"),
]

_ARRAYS = [
    Case("array-bad-dtype-str", "wp.zeros(4, dtype='float')", "GradloomError", "dtype"),
    Case("array-bad-dtype-object", "wp.zeros(4, dtype=object)", "GradloomError", "dtype"),
    Case("array-bad-dtype-list", "wp.zeros(4, dtype=[1])", "GradloomError", "dtype"),
    Case("array-ragged-data", "wp.array([[1.0, 2.0], [3.0]])", "GradloomError", "data"),
    Case("array-object-data", "wp.array(np.array([object()]))", "GradloomError", "data"),
    Case("array-vec-data-mismatch", "wp.array(np.zeros((4, 2), np.float32), dtype=wp.vec3)",
         "GradloomError", "vec3"),
    Case("array-str-data", "wp.array('abc')", "GradloomError", "data"),
    Case("from-numpy-object", "wp.from_numpy(np.array([object()]))", "GradloomError", "numpy"),
    Case("reshape-negative", "A.reshape((-2, 2))", "GradloomError", "shape"),
    Case("reshape-two-holes", "A.reshape((-1, -1))", "GradloomError", "shape"),
    Case("reshape-wrong-size", "A.reshape(5)", "GradloomError", "reshape"),
    Case("reshape-float", "A.reshape(2.5)", "GradloomError", "shape"),
    Case("transpose-bad-axes", "G.transpose((0, 0))", "GradloomError", "axes"),
    Case("copy-negative-count", "wp.copy(B, A, count=-1)", "GradloomError", "count"),
    Case("copy-too-many", "wp.copy(B, A, count=10)", "GradloomError", "exceed"),
    Case("copy-bad-offset", "wp.copy(B, A, dest_offset=2.5)", "GradloomError", "offset"),
    Case("copy-not-array", "wp.copy(B, [1, 2, 3, 4])", "GradloomError", "copy source"),
    Case("copy-size-mismatch", "wp.copy(G, V)", "GradloomError", "incompatible"),
    Case("full-bad-value", "wp.full(4, value='x')", "GradloomError", "'x'"),
    Case("full-3d-value", "wp.full(4, value=np.zeros((2, 2, 2)))", "GradloomError",
         "dimensions"),
    Case("zeros-like-not-array", "wp.zeros_like([1, 2])", "GradloomError", "template array"),
    Case("clone-not-array", "wp.clone(np.zeros(3))", "GradloomError", "template array"),
    Case("array-assign-wrong-shape", "A.assign(np.zeros(5, np.float32))", "GradloomError",
         "shape"),
    Case("array-fill-str", "A.fill_('x')", "GradloomError", "fill"),
    Case("array-index-out-of-range", "A[7]", "IndexError", "7"),
]

_CONFIG = [
    Case("config-mode", "wp.config.mode = 'fast'", "ValueError", "config.mode"),
    Case("config-threads", "wp.config.num_threads = 0", "ValueError", "num_threads"),
    Case("config-opt-level", "wp.config.opt_level = 7", "ValueError", "opt_level"),
    Case("config-verify-fp-str", "wp.config.verify_fp = 'yes'", "ValueError", "verify_fp"),
    Case("config-unwritable-cache", "wp.config.cache_dir = '/proc/no/such/dir'\n"
         "out = wp.zeros(4)\nwp.launch(scale, 4, [A, 2.0, 1, out])", "-", ""),
    Case("tape-backward-loss-size", "t = wp.Tape()\nt.backward(loss=wp.zeros(3, requires_grad=True))",
         "GradloomError", "exactly one element"),
    Case("tape-backward-not-array", "t = wp.Tape()\nt.backward(loss=3.0)", "GradloomError",
         "loss"),
]

CASES: list[Case] = _alloc_cases() + _LAUNCH + _COMPILE + _ARRAYS + _CONFIG
