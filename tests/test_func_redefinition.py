"""A `@wp.func` defined again under the same name is a new Function holding the earlier one's
other overloads; names bound to the earlier object keep its definitions (Warp's semantics), and
kernel modules list their functions and structs (`Module.functions`, `Module.structs`)."""

import numpy as np

import gradloom as wp


@wp.func
def answer():
    return 17


answer_first = answer


@wp.func
def answer():  # noqa: F811 - a redefinition is the point
    return 42


@wp.kernel
def read_answers(a: wp.array(dtype=int)):
    a[0] = answer()
    a[1] = answer_first()


def test_a_name_bound_before_a_redefinition_keeps_its_definition():
    a = wp.zeros(2, dtype=int)
    wp.launch(read_answers, dim=1, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), [42, 17])
    assert answer is not answer_first
    assert wp.get_module(__name__).functions["answer"] is answer


def _closure_overloads(value: int):
    @wp.func
    def f():
        return value

    @wp.func
    def f(x: int):  # noqa: F811 - the second overload of the closure
        return f() * x

    return f


times_two = _closure_overloads(2)
times_three = _closure_overloads(3)


@wp.kernel
def use_closures(a: wp.array(dtype=int)):
    a[0] = times_two()
    a[1] = times_two(5)
    a[2] = times_three()
    a[3] = times_three(5)


def test_overloads_of_closures_made_by_one_factory_keep_their_captured_values():
    a = wp.zeros(4, dtype=int)
    wp.launch(use_closures, dim=1, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), [2, 10, 3, 15])
    assert len(times_two.overloads) == 2 and len(times_three.overloads) == 2


def test_overloads_with_other_parameter_types_are_kept():
    @wp.func
    def g(x: int):
        return x + 1

    @wp.func
    def g(x: float):  # noqa: F811 - a second overload
        return x * 2.0

    @wp.kernel
    def k(i: wp.array(dtype=int), f: wp.array(dtype=float)):
        i[0] = g(i[0])
        f[0] = g(f[0])

    i, f = wp.array([3], dtype=int), wp.array([1.5], dtype=float)
    wp.launch(k, dim=1, inputs=[i, f])
    assert i.numpy()[0] == 4 and f.numpy()[0] == 3.0


@wp.struct
class Pair:
    a: float
    b: int


def test_modules_list_their_structs():
    assert wp.get_module(__name__).structs["Pair"] is Pair


def _write_module(path, name: str, text: str):
    import importlib
    import sys

    (path / f"{name}.py").write_text(text)
    if name in sys.modules:
        return importlib.reload(sys.modules[name])
    return importlib.import_module(name)


def test_reloading_a_module_rebuilds_the_kernels_that_call_its_functions(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    leaf_text = "import gradloom as wp\n\n@wp.func\ndef base():\n    return {}\n"
    mid_text = ("import gradloom as wp\nimport gl_reload_leaf as leaf\n\n"
                "@wp.func\ndef scaled():\n    return {} * leaf.base()\n")
    user_text = ("import gradloom as wp\nimport gl_reload_mid as mid\n\n"
                 "@wp.kernel\ndef k(out: wp.array(dtype=float)):\n"
                 "    f = mid.scaled  # bound to a local first\n    out[0] = f()\n")
    leaf = _write_module(tmp_path, "gl_reload_leaf", leaf_text.format("1.0"))
    mid = _write_module(tmp_path, "gl_reload_mid", mid_text.format("1.0"))
    user = _write_module(tmp_path, "gl_reload_user", user_text)
    out = wp.zeros(1, dtype=float)

    def result() -> float:
        wp.launch(user.k, dim=1, inputs=[out])
        return float(out.numpy()[0])

    assert result() == 1.0
    refs = user.k.module.references
    assert mid.scaled.module in refs and leaf.base.module in refs  # through mid, too
    assert user.k.module in leaf.base.module.dependents
    mid = _write_module(tmp_path, "gl_reload_mid", mid_text.format("2.0"))
    assert result() == 2.0
    _write_module(tmp_path, "gl_reload_leaf", leaf_text.format("3.0"))
    assert result() == 6.0


def test_a_discarded_unique_module_leaves_no_dependents():
    @wp.func
    def bump(v: int) -> int:
        return v + 1

    def make():
        @wp.kernel(module="unique", enable_backward=False)
        def k(out: wp.array(dtype=int)):
            out[0] = bump(out[0])

        return k

    kernels = [make() for _ in range(3)]
    assert len({id(k) for k in kernels}) == 1  # one kernel; the copies' modules discarded
    assert kernels[0].module in bump.module.dependents
    assert sum(m.name.startswith(kernels[0].key) for m in bump.module.dependents) == 1
