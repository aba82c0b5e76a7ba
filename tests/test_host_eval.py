"""Python-scope values and calls compute what kernels compute: builtins, @wp.func calls and
operators are lowered with the kernel library and evaluated on the host (ir/evaluate.py).

Checked against (a) the same expression in a gradloom kernel, (b) warp-lang at Python scope
when it is installed, and bit for bit against kernels for float32 builtins without fused
multiply-adds.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from host_cases import ALL, BITWISE_F32, Case, random_inputs

import gradloom as wp
from gradloom.builtins.registry import REGISTRY
from gradloom.errors import UNKNOWN_LOC, GradloomError, KernelTypeError
from gradloom.ir.builder import Builder
from gradloom.ir.evaluate import HostUnavailableError, evaluate
from gradloom.ir.hostops import Unavailable
from gradloom.ir.prims import PRIMS, UNARY_FLOAT_PRIMS, Effect
from gradloom.types import VecValue, scalar_from_numpy

FLOATS = {"f32": wp.float32, "f64": wp.float64}
TOL = {"f32": {"rtol": 2e-6, "atol": 2e-6}, "f64": {"rtol": 1e-13, "atol": 1e-13}}


def _params(warp: bool = False) -> list[Any]:
    out = []
    for case in ALL:
        marks = []
        if warp and "warp_xfail" in case.flags:
            marks.append(pytest.mark.xfail(strict=True, reason="gradloom's kernels differ "
                                           "from warp-lang's here too"))
        for name in ("f32",) if "f32" in case.flags else ("f32", "f64"):
            out.append(pytest.param(case, name, id=f"{case.id}-{name}", marks=marks))
    return out


def _host(case: Case, F: Any, args: list[Any]) -> Any:
    env = {"wp": wp, "F": F, **{f"x{i}": a for i, a in enumerate(args)}}
    return eval(case.expr, env)


def _gl_type(v: Any) -> Any:
    if isinstance(v, VecValue):
        return v.gl_type
    if isinstance(v, np.generic):
        return scalar_from_numpy(v.dtype)
    return {bool: wp.bool, int: wp.int32, float: wp.float32}[type(v)]


# -- the same expression in a kernel ----------------------------------------------------------------


def _kernel_module(tmp: Path, name: str, case: Case, F: Any, args: list[Any], outs: tuple) -> Any:
    n_in, n_out = len(args), len(outs)
    params = [f"a{i}: wp.array(dtype=T{i})" for i in range(n_in)]
    params += [f"o{i}: wp.array(dtype=R{i})" for i in range(n_out)]
    lines = ["import gradloom as wp", "", "", "@wp.kernel", f"def k({', '.join(params)}):"]
    lines += [f"    x{i} = a{i}[0]" for i in range(n_in)]
    targets = ", ".join(f"r{i}" for i in range(n_out))
    lines.append(f"    {targets} = {case.expr}")
    lines += [f"    o{i}[0] = r{i}" for i in range(n_out)]
    path = tmp / f"{name}.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update({"F": F, **{f"T{i}": _gl_type(a) for i, a in enumerate(args)},
                            **{f"R{i}": _gl_type(r) for i, r in enumerate(outs)}})
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _kernel(tmp: Path, name: str, case: Case, F: Any, args: list[Any], host: Any) -> tuple:
    outs = host if isinstance(host, tuple) else (host,)
    module = _kernel_module(tmp, name, case, F, args, outs)
    ins = [wp.array(np.array([np.asarray(a)]), dtype=_gl_type(a)) for a in args]
    out_arrays = [wp.zeros(1, dtype=_gl_type(r)) for r in outs]
    wp.launch(module.k, dim=1, inputs=[*ins, *out_arrays])
    return tuple(o.numpy()[0] for o in out_arrays)


def _host_dtype(v: Any) -> np.dtype:
    """A Python-scope result's type: Python float and int stand for float32 and int32 there
    (Warp returns those two types as Python numbers)."""
    if isinstance(v, float) and not isinstance(v, np.generic):
        return np.dtype(np.float32)
    if isinstance(v, int) and not isinstance(v, (bool, np.generic)):
        return np.dtype(np.int32)
    return np.asarray(v).dtype


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("host_eval_kernels")


@pytest.mark.parametrize(("case", "fname"), _params())
def test_python_scope_matches_kernel(case: Case, fname: str, kernel_dir: Path) -> None:
    if "python" in case.flags:
        pytest.skip("a Python-scope-only form (Warp accepts it at Python scope only)")
    F = FLOATS[fname]
    args = case.args(F)
    host = _host(case, F, args)
    name = f"k{abs(hash((case.expr, repr(args), fname))):x}"
    kernel = _kernel(kernel_dir, name, case, F, args, host)
    hosts = host if isinstance(host, tuple) else (host,)
    for h, k in zip(hosts, kernel, strict=True):
        # the kernel stores r into an array of the host value's type: a different kernel type
        # fails to compile; here the layout and the values
        assert (_host_dtype(h), np.shape(h)) == (np.asarray(k).dtype, np.shape(k))
        np.testing.assert_allclose(np.asarray(h, dtype=np.float64),
                                   np.asarray(k, dtype=np.float64), equal_nan=True,
                                   **TOL[fname])


# -- warp-lang at Python scope -------------------------------------------------------------------


@pytest.fixture(scope="module")
def warp() -> Any:
    w = pytest.importorskip("warp")
    w.config.quiet = True
    w.init()
    return w


def _to_warp(w: Any, v: Any) -> Any:
    if isinstance(v, VecValue):
        t = v.gl_type
        return getattr(w, t.__name__)(*np.asarray(v).ravel().tolist())
    if isinstance(v, np.generic):
        return getattr(w, _gl_type(v).name)(v.item())
    return v


def _from_warp(r: Any) -> Any:
    if isinstance(r, tuple):
        return tuple(_from_warp(i) for i in r)
    if hasattr(r, "_shape_") and len(r._shape_) == 2:
        return np.array([[float(r[i][j]) for j in range(r._shape_[1])]
                         for i in range(r._shape_[0])])
    if hasattr(r, "__len__"):
        return np.array([float(x) for x in r])
    return np.float64(r)


@pytest.mark.parametrize(("case", "fname"), _params(warp=True))
def test_python_scope_matches_warp(case: Case, fname: str, warp: Any) -> None:
    if "nowarp" in case.flags:
        pytest.skip("a gradloom extension or a documented difference")
    F = FLOATS[fname]
    args = case.args(F)
    host = _host(case, F, args)
    env = {"wp": warp, "F": getattr(warp, F.name),
           **{f"x{i}": _to_warp(warp, a) for i, a in enumerate(args)}}
    try:
        expected = _from_warp(eval(case.expr, env))
    except (RuntimeError, AttributeError) as exc:  # e.g. float64 with a Python float literal
        pytest.skip(f"warp-lang cannot evaluate this at Python scope: {exc}")
    np.testing.assert_allclose(np.asarray(host, dtype=np.float64), expected, equal_nan=True,
                               **{"f32": {"rtol": 2e-6, "atol": 2e-6},
                                  "f64": {"rtol": 1e-12, "atol": 1e-12}}[fname])


# -- bit-for-bit with kernels ----------------------------------------------------------------------


@pytest.mark.parametrize(("expr", "nargs"), BITWISE_F32, ids=[e for e, _ in BITWISE_F32])
def test_float32_bits_match_kernel(expr: str, nargs: int, kernel_dir: Path) -> None:
    """The host rounds every float32 op as the kernel does and calls the same C math library;
    200 inputs over eight decades give identical bits."""
    data = random_inputs(200, nargs)
    name = f"bits{abs(hash(expr)):x}"
    params = ", ".join(f"a{i}: wp.array(dtype=float)" for i in range(nargs))
    loads = "".join(f"    x{i} = a{i}[t]\n" for i in range(nargs))
    path = kernel_dir / f"{name}.py"
    path.write_text(f"import gradloom as wp\n\n\n@wp.kernel\ndef k({params}, "
                    f"out: wp.array(dtype=float)):\n    t = wp.tid()\n{loads}"
                    f"    out[t] = {expr}\n")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    out = wp.zeros(len(data), dtype=float)
    wp.launch(module.k, dim=len(data),
              inputs=[*(wp.array(data[:, i].copy(), dtype=float) for i in range(nargs)), out])
    host = np.array([eval(expr, {"wp": wp, **{f"x{i}": row[i] for i in range(nargs)}})
                     for row in data], dtype=np.float32)
    assert host.view(np.uint32).tolist() == out.numpy().view(np.uint32).tolist()


# -- products at Python scope, totality, funcs, caching, errors ------------------------------------


def test_products_at_python_scope() -> None:
    """Products at Python scope (matrix * vector, quaternion * quaternion, ...) are those Warp
    and kernels give, not element-wise ones."""
    m = wp.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    assert (m * wp.vec3(1.0, 2.0, 3.0)).tolist() == [14.0, 32.0, 50.0]
    q = wp.quat(0.0, 0.0, 0.0, 1.0) * wp.quat(0.5, 0.5, 0.5, 0.5)
    assert q.tolist() == [0.5, 0.5, 0.5, 0.5]
    assert float(wp.dot(wp.vec3(1.0, 2.0, 3.0), wp.vec3(1.0, 2.0, 3.0))) == 14.0
    assert float(wp.length(wp.vec3(3.0, 4.0, 0.0))) == 5.0
    assert wp.transform_point(wp.transform_identity(), wp.vec3(1.0, 2.0, 3.0)).tolist() == \
        [1.0, 2.0, 3.0]


# permute reads the table a host object's descriptor points at (a hash grid's point ids)
_LAUNCH_ONLY = {"arg", "tid", "ptr_add", "check_bounds", "permute"}


def test_every_primitive_has_a_host_rule_or_says_why_not() -> None:
    """A primitive added without a host rule fails here; only primitives that need a launch
    (memory, the thread index, kernel arguments, the adjoint stack) may be unavailable."""
    assert [n for n, p in PRIMS.items() if p.host is None] == []
    for name, prim in PRIMS.items():
        if isinstance(prim.host, Unavailable):
            thread_local = bool(prim.effects & (Effect.LOCAL | Effect.LOCAL_WRITE))  # tile buffers
            assert prim.memory or thread_local or name in _LAUNCH_ONLY or \
                name in ("push", "pop") or name.startswith("adj_"), \
                f"{name} computes a value: it needs a host rule"
            assert prim.host.reason
        else:
            assert callable(prim.host), name


_UNARY_REFERENCE = {
    "sqrt": math.sqrt, "cbrt": np.cbrt, "sin": math.sin, "cos": math.cos, "tan": math.tan,
    "asin": math.asin, "acos": math.acos, "atan": math.atan, "sinh": math.sinh,
    "cosh": math.cosh, "tanh": math.tanh, "exp": math.exp, "exp2": lambda x: 2.0 ** x,
    "log": math.log, "log2": math.log2, "log10": math.log10, "floor": math.floor,
    "ceil": math.ceil, "round": lambda x: math.copysign(math.floor(abs(x) + 0.5), x),
    "rint": round, "trunc": math.trunc, "erf": math.erf, "erfc": math.erfc,
}


@pytest.mark.parametrize("prim", sorted(UNARY_FLOAT_PRIMS))
def test_each_unary_float_rule_computes_its_function(prim: str) -> None:
    """Every unary float primitive (exp2 too, which no builtin uses yet) in float16/32/64."""
    for t, tol in ((wp.float16, 2e-3), (wp.float32, 2e-7), (wp.float64, 1e-15)):
        for x in (0.37, 2.5, -0.5):
            if (prim in ("sqrt", "log", "log2", "log10") and x < 0) or \
                    (prim in ("asin", "acos") and abs(x) > 1):
                continue
            b = Builder()
            arg = b.new_var(t)
            b.open_block()
            block = b.close_block([b.op(prim, [arg], UNKNOWN_LOC)])
            (got,) = evaluate(block, {arg: t(x)})
            assert type(got) is t.np_dtype.type
            xv = float(t(x))
            assert float(got) == pytest.approx(float(_UNARY_REFERENCE[prim](xv)), rel=tol,
                                               abs=tol), (t, x)


def test_svd3_with_output_arguments_fills_them() -> None:
    a = wp.mat33(2.0, -1.0, 0.5, 0.3, 1.5, -0.7, 1.1, 0.2, 3.0)
    u, sigma, v = wp.mat33(), wp.vec3(), wp.mat33()
    assert wp.svd3(a, u, sigma, v) is None
    rebuilt = np.asarray(u) @ np.diag(np.asarray(sigma)) @ np.asarray(v).T
    np.testing.assert_allclose(rebuilt, np.asarray(a), atol=1e-5)
    np.testing.assert_allclose(np.asarray(sigma), np.linalg.svd(np.asarray(a))[1], rtol=1e-5)


def test_python_float_arguments_are_cached_per_type_not_value() -> None:
    """Two probe lowerings turn a Python float argument into a slot: one program, every
    value right (checked against the closed form)."""
    b = REGISTRY["quat_from_axis_angle"]
    axis = wp.vec3(0.0, 0.0, 1.0)
    wp.quat_from_axis_angle(axis, 0.25)
    before = len(b.host_cache._programs)
    for angle in (0.1, 0.5, 1.3, -2.0, 3.0):
        q = wp.quat_from_axis_angle(axis, angle)
        half = np.float32(angle) / np.float32(2.0)
        assert q[2] == pytest.approx(math.sin(half), abs=1e-7)
        assert q[3] == pytest.approx(math.cos(half), abs=1e-7)
    assert len(b.host_cache._programs) == before


def test_folded_python_floats_are_cached_per_value() -> None:
    """Two literals fold at compile time (as in a kernel): programs are kept per value."""
    assert wp.add(1.0, 2.0) == 3.0
    assert wp.add(2.0, 5.0) == 7.0
    assert wp.add(2.0, 5.0) == 7.0


def test_python_floats_used_at_compile_time_are_never_cached_as_slots() -> None:
    """A literal returned as is, or deciding a branch at compile time (its truth), must give
    each call its own value (regressions: the probe value leaked, and 0.0 was taken as true)."""
    assert (wp.pos(0.5), wp.pos(0.25)) == (0.5, 0.25)
    v = wp.vec3(1.0, 2.0, 3.0)
    assert wp.where(1.0, v, -v).tolist() == [1.0, 2.0, 3.0]
    assert wp.where(0.0, v, -v).tolist() == [-1.0, -2.0, -3.0]
    assert (v * 2.0).tolist() == [2.0, 4.0, 6.0] and (v * 3.0).tolist() == [3.0, 6.0, 9.0]


def test_errors_name_the_python_line() -> None:
    with pytest.raises(KernelTypeError, match=r"(?s)test_host_eval\.py:\d+.*differ: vec3f and vec3d"):
        wp.dot(wp.vec3(1.0, 2.0, 3.0), wp.vec3d(1.0, 2.0, 3.0))
    with pytest.raises(KernelTypeError, match=r"(?s)test_host_eval\.py:\d+.*cw_mul"):
        _ = wp.vec3(1.0, 2.0, 3.0) * wp.vec3(1.0, 2.0, 3.0)
    with pytest.raises(HostUnavailableError, match=r"test_host_eval\.py:\d+:\d+: wp\.tid\(\) cannot "
                       r"run in Python"):
        wp.tid()
    with pytest.raises(GradloomError, match=r"test_host_eval\.py:\d+:\d+: wp\.atomic_add\(\) cannot "
                       r"run in Python: .* array memory; call it inside a @wp\.kernel"):
        wp.atomic_add(wp.zeros(3, dtype=float), 0, 1.0)


def test_print_at_python_scope_matches_kernel_format(capfd: pytest.CaptureFixture[str]) -> None:
    wp.print(wp.vec3(1.0, 2.5, -3.0))
    wp.printf("%lld: %f %d\n", wp.int64(7), wp.float32(0.5), True)
    wp.print(wp.mat22(1.0, 2.0, 3.0, 4.0))
    out = capfd.readouterr().out
    assert out == "1 2.5 -3 \n7: 0.500000 1\n1 2 \n3 4 \n"


# -- @wp.func called from Python: the kernel's semantics --------------------------------------------


@wp.func
def poly_until(x: float, n: int):
    s = float(0.0)
    for i in range(n):
        if s > 100.0:
            break
        s = s * x + float(i)
    return s


@wp.func
def first_positive(v: wp.vec3):
    for i in range(3):
        if v[i] > 0.0:
            return i
    return -1


@wp.func
def int_divide(a: int, b: int):
    return a / b


@wp.func
def scaled(v: Any, s: float):
    return v * s


@wp.struct
class Body:
    pos: wp.vec3
    mass: float


@wp.func
def momentum(b: Body, vel: wp.vec3):
    return vel * b.mass


@wp.func
def make_body(p: wp.vec3, m: float):
    b = Body()
    b.pos = p
    b.mass = m * 2.0
    return b


@wp.kernel
def funcs_in_a_kernel(x: wp.array(dtype=float), v: wp.array(dtype=wp.vec3),
                      out_f: wp.array(dtype=float), out_i: wp.array(dtype=int),
                      out_v: wp.array(dtype=wp.vec3)):
    out_f[0] = poly_until(x[0], 7)
    out_f[1] = poly_until(x[0], 2)
    out_i[0] = first_positive(v[0])
    out_i[1] = first_positive(-v[0])
    out_i[2] = int_divide(-7, 2)
    out_v[0] = scaled(v[0], x[0])
    b = Body()
    b.mass = x[0]
    out_v[1] = momentum(b, v[0])
    out_v[2] = make_body(v[0], x[0]).pos * make_body(v[0], x[0]).mass


def test_funcs_called_from_python_match_the_kernel() -> None:
    """Loops, break, return inside a loop, generic parameters and structs; integer division
    truncates as in a kernel (Warp runs the Python function instead: 7 / 2 == 3.5)."""
    x, v = np.float32(1.7), wp.vec3(-1.0, 0.5, 2.0)
    out_f, out_i, out_v = (wp.zeros(2, dtype=float), wp.zeros(3, dtype=int),
                           wp.zeros(3, dtype=wp.vec3))
    wp.launch(funcs_in_a_kernel, dim=1,
              inputs=[wp.array([x], dtype=float), wp.array(np.array([v]), dtype=wp.vec3),
                      out_f, out_i, out_v])
    host_f = [poly_until(x, 7), poly_until(x, 2)]
    np.testing.assert_allclose(host_f, out_f.numpy(), rtol=1e-6)
    assert [first_positive(v), first_positive(-v), int_divide(-7, 2)] == out_i.numpy().tolist()
    body = make_body(v, x)
    assert isinstance(body, Body) and body.mass == np.float32(x * np.float32(2.0))
    host_v = [scaled(v, x), momentum(Body(pos=v, mass=float(x)), v), body.pos * body.mass]
    np.testing.assert_allclose(np.array(host_v), out_v.numpy(), rtol=1e-6)
    # a Python float argument is a float32 literal; a float32 result is a Python float (Warp's)
    assert type(poly_until(1.5, 3)) is float and poly_until(1.5, 3) == np.float32(poly_until(1.5, 3))
