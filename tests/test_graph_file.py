"""Saved CPU graphs (gradloom/graph_file.py): wp.capture_save / capture_load /
capture_load_from_bytes, named parameters, a fresh process, damaged and hostile files."""

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gradloom as wp
from gradloom import graph_file

N = 16


@wp.kernel
def axpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = y[i] + a * x[i]


@wp.kernel
def norms(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(v[i])


def _capture(x, y, out, v, cond):
    with wp.ScopedCapture(device="cpu", apic=True) as cap:
        wp.launch(axpy, dim=N, inputs=[x, y, 3.0])
        wp.copy(out, y)
        wp.capture_if(cond, on_true=lambda: wp.launch(norms, dim=N, inputs=[v, out]))
    return cap.graph


def _arrays():
    x = wp.array(np.arange(N, dtype=np.float32))
    y = wp.array(np.ones(N, dtype=np.float32))
    out = wp.zeros(N)
    v = wp.array(np.tile(np.array([[3.0, 4.0, 0.0]], np.float32), (N, 1)), dtype=wp.vec3)
    return x, y, out, v


def test_round_trip_with_named_parameters(tmp_path):
    x, y, out, v = _arrays()
    cond = wp.array([0], dtype=wp.int32)
    graph = _capture(x, y, out, v, cond)
    path = str(tmp_path / "g")
    wp.capture_save(graph, path, inputs={"x": x, "y": y}, outputs={"out": out, "y": y})
    assert os.path.exists(path + ".wrp")
    loaded = wp.capture_load(path)
    assert loaded.is_loaded and not graph.is_loaded
    assert set(loaded.params) == {"x", "y", "out"}
    assert loaded.params["y"].is_input and loaded.params["y"].is_output

    xs = np.linspace(-1.0, 1.0, N).astype(np.float32)
    loaded.set_param("x", wp.array(xs))
    wp.capture_launch(loaded)
    wp.capture_launch(loaded)  # y accumulates in the loaded graph's own memory
    got = wp.zeros(N)
    loaded.get_param("out", got)
    np.testing.assert_allclose(got.numpy(), 1.0 + 2 * 3.0 * xs, rtol=1e-6)
    # the captured arrays were neither run on nor touched by saving and loading
    np.testing.assert_array_equal(y.numpy(), np.ones(N, np.float32))
    assert isinstance(loaded.get_param_ptr("x"), int) and loaded.get_param_ptr("x") != 0
    assert loaded.get_param_ptr("nope") is None


def test_condition_lives_in_the_saved_memory(tmp_path):
    x, y, out, v = _arrays()
    cond = wp.array([1], dtype=wp.int32)
    graph = _capture(x, y, out, v, cond)
    path = str(tmp_path / "g.wrp")  # the extension may be given
    wp.capture_save(graph, path, inputs={"cond": cond}, outputs={"out": out})
    loaded = wp.capture_load(str(tmp_path / "g"))
    wp.capture_launch(loaded)
    got = wp.zeros(N)
    loaded.get_param("out", got)
    np.testing.assert_allclose(got.numpy(), np.full(N, 5.0), rtol=1e-6)  # |(3, 4, 0)|
    loaded.set_param("cond", wp.array([0], dtype=wp.int32))
    loaded.set_param("out", wp.zeros(N))
    wp.capture_launch(loaded)
    loaded.get_param("out", got)
    np.testing.assert_allclose(got.numpy(), 1.0 + 3.0 * np.arange(N) * 2, rtol=1e-6)


def test_load_from_bytes_copies_its_input(tmp_path):
    x, y, out, v = _arrays()
    graph = _capture(x, y, out, v, wp.array([0], dtype=wp.int32))
    path = str(tmp_path / "g")
    wp.capture_save(graph, path, outputs={"out": out})
    with open(path + ".wrp", "rb") as f:
        data = bytearray(f.read())
    os.remove(path + ".wrp")
    loaded = wp.capture_load_from_bytes(np.frombuffer(data, np.uint8))
    data[:] = bytes(len(data))
    wp.capture_launch(loaded)
    got = wp.zeros(N)
    loaded.get_param("out", got)
    np.testing.assert_allclose(got.numpy(), 1.0 + 3.0 * np.arange(N), rtol=1e-6)


def test_fresh_process_imports_the_kernel_module(tmp_path):
    (tmp_path / "saved_kernels.py").write_text(textwrap.dedent("""
        import gradloom as wp

        @wp.kernel
        def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
            i = wp.tid()
            y[i] = x[i] * x[i]
    """))
    save = textwrap.dedent("""
        import numpy as np, gradloom as wp, saved_kernels
        x = wp.array(np.arange(8, dtype=np.float32)); y = wp.zeros(8)
        with wp.ScopedCapture(apic=True) as cap:
            wp.launch(saved_kernels.square, dim=8, inputs=[x, y])
        wp.capture_save(cap.graph, "sq", inputs={"x": x}, outputs={"y": y})
    """)
    load = textwrap.dedent("""
        import numpy as np, gradloom as wp
        g = wp.capture_load("sq")
        wp.capture_launch(g)
        y = wp.zeros(8); g.get_param("y", y)
        print(y.numpy().tolist())
    """)
    env = {**os.environ, "PYTHONPATH": str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for script in (save, load):
        result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str([float(i * i) for i in range(8)])


def test_errors(tmp_path):
    x, y, out, v = _arrays()
    with wp.ScopedCapture(device="cpu") as plain:
        wp.launch(axpy, dim=N, inputs=[x, y, 1.0])
    with pytest.raises(RuntimeError, match="apic=True"):
        wp.capture_save(plain.graph, str(tmp_path / "p"))
    with pytest.raises(RuntimeError, match="loaded APIC"):
        plain.graph.get_param_ptr("x")
    with pytest.raises(RuntimeError, match="Failed to load APIC graph from .*missing.wrp"):
        wp.capture_load(str(tmp_path / "missing"))
    with pytest.raises(RuntimeError, match="not a saved gradloom graph"):
        wp.capture_load_from_bytes(b"\0" * 64)

    graph = _capture(x, y, out, v, wp.array([0], dtype=wp.int32))
    good = graph_file.graph_bytes(graph, outputs={"out": out})
    with pytest.raises(RuntimeError, match="damaged|validation"):
        wp.capture_load_from_bytes(good[: len(good) // 2])
    loaded = wp.capture_load_from_bytes(good)
    with pytest.raises(ValueError, match="binds 64 bytes"):
        loaded.set_param("out", wp.zeros(N + 1))


def test_hostile_stream_is_refused():
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    header = b'{"device": "cpu", "nodes": %d, "regions": [], "params": {}}'
    stream = pickle.dumps([Evil()])
    head = header % len(stream)
    data = graph_file._HEAD.pack(graph_file.MAGIC, graph_file.FORMAT, len(head)) + head + stream
    with pytest.raises(RuntimeError, match="never holds"):
        wp.capture_load_from_bytes(data)


def test_unsaveable_operation_is_named(tmp_path):
    x, y, _, _ = _arrays()
    with wp.ScopedCapture(device="cpu", apic=True) as cap:
        wp.launch(axpy, dim=N, inputs=[x, y, 1.0])
        with wp.Tape():
            wp.launch(axpy, dim=N, inputs=[x, y, 1.0])
    with pytest.raises(RuntimeError, match="Tape"):
        wp.capture_save(cap.graph, str(tmp_path / "t"))
    assert not os.path.exists(str(tmp_path / "t.wrp"))


@wp.kernel
def double_into(src: wp.array(dtype=wp.int64), dst: wp.array(dtype=wp.int64)):
    i = wp.tid()
    dst[i] = src[i] * wp.int64(2)


def test_views_share_their_allocation_region(tmp_path):
    # strided views of named arrays: one region per allocation, spanning every view of it
    base = wp.array(np.arange(12, dtype=np.int64), dtype=wp.int64)
    out = wp.zeros(12, dtype=wp.int64)
    with wp.ScopedCapture(device="cpu", apic=True) as cap:
        wp.launch(double_into, dim=6, inputs=[base[0:12:2], out[1:12:2]])
    path = str(tmp_path / "views")
    wp.capture_save(cap.graph, path, inputs={"base": base}, outputs={"out": out})
    loaded = wp.capture_load(path)
    assert loaded.params["base"].nbytes == 96 and loaded.params["out"].nbytes == 96
    new_base = np.array([5, -1, 7, -1, 9, -1, 11, -1, 13, -1, 15, -1], dtype=np.int64)
    loaded.set_param("base", wp.array(new_base, dtype=wp.int64))
    wp.capture_launch(loaded)
    got = wp.empty_like(out)
    loaded.get_param("out", got)
    expected = np.zeros(12, np.int64)
    expected[1::2] = 2 * new_base[::2]
    np.testing.assert_array_equal(got.numpy(), expected)


@wp.kernel
def write_then_read(first: wp.array(dtype=float), later: wp.array(dtype=float),
                    out: wp.array(dtype=float)):
    first[2] = 99.0  # later[0] is the same memory
    out[0] = later[0]
    out[1] = later[1]


def test_overlapping_foreign_views_stay_one_memory(tmp_path):
    torch = pytest.importorskip("torch")
    base = torch.arange(6, dtype=torch.float32)
    first, later = wp.from_torch(base[:]), wp.from_torch(base[2:])  # two wrappers, one storage
    out = wp.zeros(2)
    with wp.ScopedCapture(device="cpu", apic=True) as cap:
        wp.launch(write_then_read, dim=1, inputs=[first, later, out])
    path = str(tmp_path / "alias")
    wp.capture_save(cap.graph, path, inputs={"first": first, "later": later}, outputs={"out": out})
    loaded = wp.capture_load(path)
    assert loaded.params["first"].region == loaded.params["later"].region
    wp.capture_launch(loaded)
    got = wp.zeros(2)
    loaded.get_param("out", got)
    np.testing.assert_array_equal(got.numpy(), [99.0, 3.0])


def test_an_unsaveable_operation_is_named(tmp_path):
    x, y, _, _ = _arrays()
    with wp.ScopedCapture(device="cpu", apic=True) as cap:
        wp.launch(axpy, dim=N, inputs=[x, y, 1.0])
    # an operation recorded as a local closure (not a partial of a module function)
    cap.graph.add(graph_file.OpNode(lambda: None, "my_host_step()"))
    with pytest.raises(RuntimeError, match=r"my_host_step\(\)"):
        wp.capture_save(cap.graph, str(tmp_path / "c"))
    assert not os.path.exists(str(tmp_path / "c.wrp"))
