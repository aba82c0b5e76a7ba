"""print / printf / expect_eq / expect_neq / expect_near inside kernels, checked on the C-level
stdout (pytest's capfd): the text of each value type, C formats, messages only on failure, no
output from the adjoint (tape.backward()), and Warp's output from explicit adjoint launches.

Expected text is built with Python's %-formatting, which follows C's printf. Runs on the backend
chosen by GL_TEST_BACKEND; validated against warp-lang 1.19 on the CPU where marked.
"""

# Expected text uses %-formatting on purpose: it is C's printf, which the kernels call.
# ruff: noqa: UP031

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE, wp

gradloom_only = pytest.mark.skipif(BACKEND != "gradloom", reason="gradloom behaviour")


def _out(capfd) -> str:
    """What the kernels printed (without warp-lang's module-load notices)."""
    text = capfd.readouterr().out
    return "".join(ln for ln in text.splitlines(keepends=True) if not ln.startswith("Module "))


def _run(kernel, dim, *inputs):
    wp.launch(kernel, dim=dim, inputs=list(inputs), device=DEVICE)
    if hasattr(wp, "synchronize"):
        wp.synchronize()


@wp.kernel
def print_scalars(x: wp.array(dtype=wp.float32), d: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.print(i)
    wp.print(x[i])
    wp.print(d[i])
    wp.print(wp.int64(i) - wp.int64(5000000000))
    wp.print(wp.uint8(200))
    wp.print(x[i] > 0.0)


def test_print_scalars(capfd):
    x = np.array([1.5, -0.1], dtype=np.float32)
    d = np.array([1e20, 3.141592653589793])
    capfd.readouterr()
    _run(print_scalars, 2, wp.array(x, dtype=wp.float32), wp.array(d, dtype=wp.float64))
    out = _out(capfd)
    blocks = []
    for i in range(2):
        blocks.append([str(i), "%g" % float(x[i]), "%g" % d[i], str(i - 5000000000), "200",
                       "True" if x[i] > 0 else "False"])
    # threads may print in any order; each thread's own lines stay in program order
    lines = out.splitlines()
    assert len(lines) == 12
    got = sorted([lines[k:k + 6] for k in range(0, 12, 6)], key=lambda b: b[0])
    assert got == blocks


@wp.kernel
def print_composites(x: wp.array(dtype=wp.float32)):
    v = x[0]
    wp.print(wp.vec3(v, 2.5, -1.0))
    wp.print(wp.vec2i(7, -3))
    wp.print(wp.mat22(v, 2.0, 3.0, 4.0))
    wp.print(wp.quat(0.0, 0.0, 0.0, 1.0))
    wp.print(wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat(0.0, 0.0, 0.0, 1.0)))
    wp.print("done: 100%")


def test_print_vectors_matrices_quaternions_transforms(capfd):
    capfd.readouterr()
    _run(print_composites, 1, wp.array(np.array([0.25], dtype=np.float32), dtype=wp.float32))
    want = ("0.25 2.5 -1 \n"
            "7 -3 \n"
            "0.25 2 \n3 4 \n"
            "0 0 0 1\n"
            "(1 2 3) (0 0 0 1)\n"
            "done: 100%\n")
    assert _out(capfd) == want


@wp.kernel
def printf_formats(x: wp.array(dtype=wp.float32), n: wp.array(dtype=wp.int64)):
    i = wp.tid()
    wp.printf("i=%d x=%8.3f hex=%x n=%lld %s|%-4s| 100%%\n", i, x[i], i + 255, n[i], "ok", "ab")
    wp.printf("%e %g %c\n", x[i], wp.float64(x[i]) * wp.float64(2.0), 65)


def test_printf_follows_c_formats(capfd):
    x = np.array([3.14159, -2.5e-7], dtype=np.float32)
    n = np.array([2**40, -7])
    capfd.readouterr()
    _run(printf_formats, 2, wp.array(x, dtype=wp.float32), wp.array(n, dtype=wp.int64))
    lines = _out(capfd).splitlines()
    want = []
    for i in range(2):
        xi = float(x[i])
        want.append("i=%d x=%8.3f hex=%x n=%d %s|%-4s| 100%%" % (i, xi, i + 255, n[i], "ok", "ab"))
        want.append("%e %g %c" % (xi, xi * 2.0, 65))
    assert sorted(lines) == sorted(want)


@wp.kernel
def expectations(a: wp.array(dtype=wp.int32), x: wp.array(dtype=wp.float32)):
    i = wp.tid()
    wp.expect_eq(a[i], 3)
    wp.expect_neq(a[i], 4)
    wp.expect_near(x[i], 1.0, 0.01)
    wp.expect_eq(wp.vec2(x[i], 2.0), wp.vec2(1.0, 2.0))


def test_expectations_print_only_when_they_fail(capfd):
    # thread 0 meets every expectation; thread 1 fails each of them
    a = wp.array(np.array([3, 4], dtype=np.int32), dtype=wp.int32)
    x = wp.array(np.array([1.0, 1.5], dtype=np.float32), dtype=wp.float32)
    capfd.readouterr()
    _run(expectations, 1, a, x)
    assert _out(capfd) == ""
    _run(expectations, 2, a, x)
    want = ("Error, expect_eq() failed:\n\t Expected: 3\n\t Actual: 4\n"
            "Error, expect_neq() failed:\n\t Expected: 4\n\t Actual: 4\n"
            "Error, expect_near() failed with tolerance 0.01\n    Expected: 1\n    Actual: 1.5\n"
            "    Absolute difference: 0.5\n"
            "Error, expect_eq() failed:\n\t Expected: 1 2 \n\t Actual: 1.5 2 \n")
    assert _out(capfd) == want


@wp.kernel
def near_vectors(x: wp.array(dtype=wp.float32)):
    v = wp.vec3(x[0], x[1], x[2])
    wp.expect_near(v, wp.vec3(1.0, 2.0, 3.0), 0.1)


def test_expect_near_on_vectors_reports_the_largest_difference(capfd):
    x = np.array([1.0, 2.5, 2.75], dtype=np.float32)
    capfd.readouterr()
    _run(near_vectors, 1, wp.array(x, dtype=wp.float32))
    want = ("Error, expect_near() failed with tolerance 0.1\n    Expected: 1 2 3 \n"
            "    Actual: 1 2.5 2.75 \n    Max absolute difference: 0.5\n")
    assert _out(capfd) == want


@gradloom_only
def test_expect_near_fails_on_nan(capfd):
    x = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    capfd.readouterr()
    _run(near_vectors, 1, wp.array(x, dtype=wp.float32))
    assert _out(capfd).startswith("Error, expect_near() failed")


@wp.kernel
def printing_loss(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    wp.printf("forward %d\n", i)
    for k in range(2):
        wp.print(k)
    if v > wp.float64(0.0):
        wp.expect_eq(v, wp.float64(-1.0))
    y[i] = v * v


@gradloom_only  # warp-lang's adjoint replays the forward code, prints included
def test_backward_prints_nothing(capfd):
    x = wp.array(np.array([0.5, 2.0]), dtype=wp.float64, requires_grad=True)
    y = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    capfd.readouterr()
    with tape:
        wp.launch(printing_loss, dim=2, inputs=[x, y], device=DEVICE)
    forward = _out(capfd)
    assert sorted(ln for ln in forward.splitlines() if ln.startswith("forward")) == \
        ["forward 0", "forward 1"]
    assert forward.count("expect_eq() failed") == 2
    tape.backward(grads={y: wp.array(np.ones(2), dtype=wp.float64)})
    assert _out(capfd) == ""
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 4.0])


@wp.kernel
def adjoint_prints(x: float, v: wp.vec2, m: wp.mat22, n: int, a: wp.array(dtype=float),
                   out: wp.array(dtype=float)):
    print(x)
    print(v)
    print(m)
    print(n)
    y = a[0] * 3.0
    print(y)
    print("text")
    wp.printf("pf %d\n", n)
    out[0] = y * 2.0


def test_explicit_adjoint_launch_prints_values_then_adjoints(capfd):
    # as warp-lang: the replay prints what the forward prints; then, last first, each
    # wp.print's adjoints (a parameter's: the one given; y's: from out's); printf none
    a, out = wp.array([1.0], dtype=float), wp.zeros(1, dtype=float)
    adj_a, adj_out = wp.zeros(1, dtype=float), wp.ones(1, dtype=float)
    capfd.readouterr()
    wp.launch(adjoint_prints, dim=1, inputs=[1.5, wp.vec2(0.5, 1.5), wp.mat22(1.0, 2.0, 3.0, 4.0),
                                             5, a, out],
              adj_inputs=[42.0, wp.vec2(1.0, 2.0), wp.mat22(4.0, 3.0, 2.0, 1.25), 7, adj_a, adj_out],
              adjoint=True, device=DEVICE)
    if hasattr(wp, "synchronize"):
        wp.synchronize()
    assert _out(capfd) == ("1.5\n0.5 1.5 \n1 2 \n3 4 \n5\n3\ntext\npf 5\n"
                           "adj: text\nadj: 2\nadj: 7\nadj: 4 3\n     2 1.25\nadj: 1 2\nadj: 42\n")
    np.testing.assert_allclose(adj_a.numpy(), [6.0])


@gradloom_only  # warp-lang fails (IndexError) without adjoints for its scalar parameters
def test_explicit_adjoint_launch_without_adj_inputs_prints_zero_adjoints(capfd):
    a, out = wp.array([1.0], dtype=float), wp.zeros(1, dtype=float)
    capfd.readouterr()
    wp.launch(adjoint_prints, dim=1, inputs=[1.5, wp.vec2(0.5, 1.5), wp.mat22(1.0, 2.0, 3.0, 4.0),
                                             5, a, out], adjoint=True, device=DEVICE)
    assert _out(capfd).endswith("adj: text\nadj: 0\nadj: 0\nadj: 0 0\n     0 0\nadj: 0 0\n"
                                "adj: 0\n")


@gradloom_only
@pytest.mark.parametrize("body, message", [
    ("wp.printf('%d %d', 1)", "more conversions"),
    ("wp.printf('%d', 1, 2)", "more values"),
    ("wp.printf('%d', wp.vec2(1.0, 2.0))", "wp.print()"),
    ("wp.print(1, 2)", "wp.printf()"),
    ("wp.expect_eq(1.0, wp.vec2(1.0, 2.0))", "different types"),
])
def test_misuse_is_a_compile_error(tmp_path, body, message):
    import importlib.util

    src = tmp_path / "bad_print_kernel.py"
    src.write_text("import gradloom as wp\n\n\n@wp.kernel\ndef k(x: wp.array(dtype=float)):\n"
                   f"    {body}\n")
    spec = importlib.util.spec_from_file_location("bad_print_kernel", src)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(wp.GradloomError, match=message.replace("(", r"\(").replace(")", r"\)")):
        wp.launch(module.k, 1, inputs=[wp.zeros(1, dtype=float)])


@wp.kernel
def python_print(x: wp.array(dtype=wp.float32)):
    i = wp.tid()
    print(x[i] * 2.0)  # Python's own print, as Warp allows


def test_python_print_is_the_print_builtin(capfd):
    capfd.readouterr()
    _run(python_print, 1, wp.array(np.array([1.25], dtype=np.float32), dtype=wp.float32))
    assert _out(capfd).splitlines() == ["%g" % 2.5]


@wp.struct
class _Pair:
    a: float
    b: float


@wp.kernel
def print_placeholders(s: _Pair, arr: wp.array(dtype=wp.float32)):
    wp.print(s)
    wp.print(arr)
    wp.print(s.a)


def test_print_struct_and_array_placeholders(capfd):
    """As warp-lang 1.19 does: structs and arrays print a placeholder line, not an error."""
    s = _Pair()
    s.a = 1.5
    _run(print_placeholders, 1, s, wp.zeros(3, dtype=wp.float32, device=DEVICE))
    placeholder = "<type without print implementation>\n"
    assert _out(capfd) == placeholder * 2 + "1.5\n"
