"""`@wp.kernel(module_options=...)` checked as Warp checks it, and Module.get_module_hash."""

import pytest

import gradloom as wp


def _body(a: wp.array(dtype=float)):
    a[0] = 1.0


def test_module_options_must_be_a_dict_of_known_names():
    with pytest.raises(TypeError, match="must be a dict, got str"):
        wp.kernel(module="unique", module_options="fast_math")(_body)
    with pytest.raises(ValueError, match="fast_mth.*Valid options"):
        wp.kernel(module="unique", module_options={"fast_mth": True})(_body)
    with pytest.raises(ValueError, match='module="unique"'):
        wp.kernel(module_options={})(_body)
    k = wp.kernel(module="unique", module_options={})(_body)
    assert k.module.options["fast_math"] is False


@pytest.mark.parametrize("value,exc", [(True, TypeError), (1.5, TypeError), ("2", TypeError),
                                       (-1, ValueError)])
def test_deterministic_max_records_is_a_non_negative_int(value, exc):
    with pytest.raises(exc, match="deterministic_max_records"):
        wp.kernel(module="unique", module_options={"deterministic_max_records": value})(_body)
    k = wp.kernel(module="unique", module_options={"deterministic_max_records": 2})(_body)
    assert k.module.options["deterministic_max_records"] == 2


def test_get_module_hash_follows_the_options():
    m = wp.get_module("module_options_hash_test")
    before = m.get_module_hash()
    assert before == m.hash_module() and isinstance(before, bytes)
    wp.set_module_options({"max_unroll": 3}, module=m)
    assert m.get_module_hash() != before


def test_force_load_max_workers_and_execs():
    m = wp.get_module("module_force_load_workers_test")
    k = wp.Kernel(func=_body, module=m)
    assert m.execs == {}
    wp.force_load(device="cpu", modules=[m], max_workers=0)
    assert k.built("forward")
    assert list(m.execs) == [(None, m.options["block_dim"])]
    with pytest.raises(ValueError, match="max_workers"):
        wp.force_load(modules=[m], max_workers=-1)
    wp.load_module(m, max_workers=2)


def test_load_module_without_warp_content_raises():
    import json

    with pytest.raises(RuntimeError, match="no_such_kernel_module.*does not contain any Warp"):
        wp.load_module("no_such_kernel_module")
    with pytest.raises(RuntimeError, match="'json' does not contain any Warp kernels"):
        wp.load_module(json)
