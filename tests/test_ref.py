"""`wp.ref[T]` function parameters: what the function assigns changes the caller's storage."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
from gradloom.errors import CompileError


@wp.func
def _bump(x: wp.ref[wp.int32]):
    x += 1


@wp.func
def _bump_twice(x: wp.ref[wp.int32]):
    _bump(x)  # a ref parameter forwarded to another
    _bump(x)


@wp.func
def _scale(x: wp.ref[float], s: float):
    x = x * s


@wp.func
def _swap(a: wp.ref[float], b: wp.ref[float]):
    a, b = b, a


@wp.func
def _by_value(x: wp.int32):
    x += 100


@wp.struct
class _Box:
    value: float
    count: wp.int32


@wp.func
def _fill_box(b: wp.ref[_Box], v: float):
    b.value = v
    b.count += 1


@wp.kernel
def _targets(arr: wp.array[float], counts: wp.array[wp.int32], boxes: wp.array[_Box],
             vecs: wp.array[wp.vec3]):
    i = wp.tid()
    n = wp.int32(i)
    _bump_twice(n)
    _by_value(n)
    counts[i] = n
    _scale(arr[i], 3.0)
    _fill_box(boxes[i], float(i) + 0.5)
    v = vecs[i]
    _scale(v.y, -1.0)
    _swap(v.x, v.z)
    vecs[i] = v
    b = _Box()
    _fill_box(b, 2.0)
    m = 0  # an untyped local is an int32 variable in gradloom (Warp folds it to a constant)
    _bump(m)
    b.count += m - 1
    _bump(counts[i])
    counts[i] = counts[i] + b.count * 10


def test_every_kind_of_target_is_written_back():
    arr = wp.array([1.0, 2.0], dtype=float)
    counts = wp.zeros(2, dtype=wp.int32)
    boxes = wp.zeros(2, dtype=_Box)
    vecs = wp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=wp.vec3)
    wp.launch(_targets, dim=2, inputs=[arr, counts, boxes, vecs])
    np.testing.assert_array_equal(arr.numpy(), [3.0, 6.0])
    np.testing.assert_array_equal(counts.numpy(), [13, 14])  # i + 2, + 1, + 10 (by value: +0)
    np.testing.assert_array_equal(boxes.numpy()["value"], [0.5, 1.5])
    np.testing.assert_array_equal(boxes.numpy()["count"], [1, 1])
    np.testing.assert_array_equal(vecs.numpy(), [[3.0, -2.0, 1.0], [6.0, -5.0, 4.0]])


def test_annotation_object():
    r = wp.ref[wp.int32]
    assert r.dtype is wp.int32 and r.value_type is wp.int32
    assert r == wp.ref[wp.int32] and hash(r) == hash(wp.ref[wp.int32])
    assert r != wp.ref[wp.float32]
    assert repr(r) == "wp.ref[int32]"


def _launch_source(body: str) -> None:
    ns: dict = {}
    code = (
        "import gradloom as wp\n"
        "from tests.test_ref import _bump\n"
        "@wp.func\n"
        "def make() -> wp.int32:\n"
        "    return wp.int32(1)\n"
        "@wp.kernel\n"
        "def k(out: wp.array[wp.int32]):\n"
        f"    {body}\n"
        "    out[0] = 0\n"
    )
    import importlib.util
    import pathlib
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d) / "ref_case.py"
        path.write_text(code)
        spec = importlib.util.spec_from_file_location("ref_case", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        ns["k"] = mod.k
        wp.launch(mod.k, dim=1, inputs=[wp.zeros(1, dtype=wp.int32)])


@pytest.mark.parametrize("body, message", [
    ("_bump(wp.int32(5))", "not a variable"),
    ("_bump(make())", "not a variable"),
])
def test_unaddressable_arguments_are_refused(body: str, message: str):
    with pytest.raises(CompileError, match=message):
        _launch_source(body)


@wp.func
def _accumulate(acc: wp.ref[wp.float64], x: wp.float64):
    acc += wp.sin(x) * x


@wp.kernel
def _energy(x: wp.array[wp.float64], out: wp.array[wp.float64]):
    i = wp.tid()
    acc = wp.float64(0.0)
    _accumulate(acc, x[i])
    _accumulate(acc, x[i] * x[i])
    out[i] = acc
    _accumulate(out[i], 2.0 * x[i])


def test_gradients_through_ref_parameters_match_finite_differences():
    x0 = np.array([0.4, -1.3, 2.2])
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    out = wp.zeros(3, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_energy, dim=3, inputs=[x, out])
    tape.backward(grads={out: wp.ones(3, dtype=wp.float64)})

    def f(v: np.ndarray) -> float:
        res = wp.zeros(3, dtype=wp.float64)
        wp.launch(_energy, dim=3, inputs=[wp.array(v, dtype=wp.float64), res])
        return float(res.numpy().sum())

    h = 1e-6
    fd = [(f(x0 + h * e) - f(x0 - h * e)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6, atol=1e-9)
    g = lambda t: np.sin(t) * t  # noqa: E731 - the expected value, written from the kernel
    np.testing.assert_allclose(out.numpy(), g(x0) + g(x0 * x0) + g(2 * x0), rtol=1e-12)
