"""Module hashes and kernel options as Warp defines them: what a module hash covers (kernel
options, generic overloads, options resolved against the config, `verify_fp`), `@wp.func`'s
`module` and `inline`, the checks of CUDA kernel options, and the CUDA kernel queries on the CPU."""

from typing import Any

import pytest

import gradloom as wp
from gradloom import config


def _make(**options: Any) -> Any:
    @wp.kernel(module="unique", **options)
    def k(a: wp.array(dtype=int)):
        a[wp.tid()] = 0

    return k


@pytest.fixture
def restore_config():
    saved = {n: getattr(config, n) for n in ("mode", "verify_fp", "optimization_level")}
    yield
    for name, value in saved.items():
        setattr(config, name, value)


def test_kernel_options_are_part_of_the_module_hash():
    assert _make(launch_bounds=64).module.hash_module() != _make(launch_bounds=128).module.hash_module()
    assert _make(cluster_dim=2).module.hash_module() != _make(cluster_dim=4).module.hash_module()
    assert _make(cluster_dim=2).module.hash_module() == _make(cluster_dim=2).module.hash_module()
    assert (_make(cuda_max_registers=32).module.hash_module()
            != _make(cuda_max_registers=64).module.hash_module())


def test_options_are_resolved_against_the_config(restore_config):
    a, b = _make(), _make(launch_bounds=None)
    assert a.module is b.module  # the same kernel declared twice: one module
    m = a.module
    config.mode = "release"
    m.options["mode"] = None
    inherited = m.hash_module()
    m.options["mode"] = "release"
    assert m.hash_module() == inherited  # None means the config's mode
    m.options["mode"] = None
    config.mode = "debug"
    assert m.hash_module() != inherited
    config.mode = "release"
    config.verify_fp = True
    assert m.hash_module() != inherited
    config.verify_fp = False
    assert m.hash_module() == inherited
    assert m.hashers[m.options["block_dim"]] == inherited  # the latest hash, by block_dim


def test_config_optimization_level_is_honoured_and_hashed(restore_config):
    k = _make()
    assert k.module.options["optimization_level"] is None
    hashes = set()
    for level in (None, 2, 3):
        config.optimization_level = level
        hashes.add(k.module.hash_module())
        assert k.opt_level == (config.opt_level if level is None else level)
    assert len(hashes) == 3  # None (the default level) is a level of its own
    with pytest.raises(ValueError):
        config.optimization_level = 5
    out = wp.zeros(2, dtype=int)
    config.optimization_level = 0
    wp.launch(k, dim=2, inputs=[out])  # builds at -O0
    assert k.module.resolve_options(config)["optimization_level"] == 0


def test_a_new_overload_of_a_generic_kernel_changes_the_hash():
    @wp.kernel(module="unique")
    def twice(x: wp.array(dtype=Any), y: wp.array(dtype=Any)):
        i = wp.tid()
        y[i] = x[i] + x[i]

    m = twice.module
    h0 = m.get_module_hash()
    wp.launch(twice, dim=2, inputs=[wp.ones(2, dtype=float), wp.zeros(2, dtype=float)])
    h1 = m.get_module_hash()
    wp.launch(twice, dim=2, inputs=[wp.ones(2, dtype=int), wp.zeros(2, dtype=int)])
    h2 = m.get_module_hash()
    wp.launch(twice, dim=2, inputs=[wp.ones(2, dtype=float), wp.zeros(2, dtype=float)])
    assert len({h0, h1, h2}) == 3 and m.get_module_hash() == h2


@wp.func
def _plus_one(x: float) -> float:
    return x + 1.0


def test_func_module_and_inline_hint():
    assert _plus_one.module is wp.get_module(__name__)

    def make(inline: Any) -> Any:
        @wp.func(inline=inline, module="unique")
        def f(x: float) -> float:
            return x + 1.0

        @wp.kernel(enable_backward=False, module=f.module)
        def k(a: wp.array(dtype=float)):
            a[wp.tid()] = f(1.0)

        assert f.inline is inline and f.module is not wp.get_module(__name__)
        return f.module, k

    hashes = {make(inline)[0].hash_module() for inline in (None, False, True)}
    assert len(hashes) == 3
    assert make(False)[0].hash_module() == make(False)[0].hash_module()
    _, k = make(True)
    a = wp.zeros(1, dtype=float)
    wp.launch(k, dim=1, inputs=[a])
    assert a.numpy()[0] == 2.0
    with pytest.raises(TypeError):
        wp.func(inline=1)


def test_cuda_kernel_options_are_checked_when_declared():
    for value, error in ((True, TypeError), (1.5, TypeError), (0, ValueError), (-1, ValueError)):
        with pytest.raises(error, match="cuda_max_registers"):
            _make(cuda_max_registers=value)
    with pytest.raises(ValueError, match="cuda_max_registers and launch_bounds"):
        _make(launch_bounds=128, cuda_max_registers=64)
    for value in (0, 1, 1.0, "true"):
        with pytest.raises(TypeError, match="enable_cuda_smem_spilling"):
            _make(enable_cuda_smem_spilling=value)
    assert _make(enable_cuda_smem_spilling=False).options == _make().options
    assert "enable_cuda_smem_spilling" in _make(enable_cuda_smem_spilling=True).options
    for value in (0, -1, 17):
        with pytest.raises(ValueError, match="cluster_dim"):
            _make(cluster_dim=value)
    with pytest.raises(TypeError, match="cluster_dim"):
        _make(cluster_dim=(2, 1, 1))


def test_a_module_cluster_dim_set_by_hand_is_checked_at_the_build():
    k = _make(launch_bounds=7)
    k.module.options["cluster_dim"] = 17
    with pytest.raises(ValueError, match="cluster_dim"):
        wp.launch(k, dim=1, inputs=[wp.zeros(1, dtype=int)])
    k.module.options["cluster_dim"] = 1
    wp.launch(k, dim=1, inputs=[wp.zeros(1, dtype=int)])


def test_cuda_kernel_queries_on_the_cpu():
    k = _make()

    @wp.kernel(module="unique")
    def generic(a: wp.array(dtype=Any)):
        a[wp.tid()] = a.dtype(0)

    with pytest.raises(RuntimeError, match="requires a CUDA device"):
        wp.get_cuda_kernel_properties(k, device="cpu")
    with pytest.raises(RuntimeError, match="concrete overload"):
        wp.get_cuda_kernel_properties(generic, device="cpu")
    for bad in (lambda: None, "not a kernel"):
        with pytest.raises(TypeError, match="expected a wp.Kernel"):
            wp.get_cuda_kernel_properties(bad)
    with pytest.raises(ValueError, match="block_dim"):
        wp.get_cuda_kernel_properties(k, device="cpu", block_dim=0)
    assert wp.get_cuda_max_cluster_dim(k, "cpu") == 1


def _length_kernel(vec_type: Any) -> Any:
    @wp.kernel
    def k(out: wp.array(dtype=float)):
        v = vec_type(1.0)
        out[0] = float(wp.length_sq(v))

    return k


def _cast_kernel(scalar: Any) -> Any:
    @wp.kernel
    def k(out: wp.array(dtype=float)):
        out[0] = float(scalar(16777217.0))  # float32 rounds it, float64 keeps it

    return k


def test_captured_types_are_part_of_the_cache_key():
    # two kernels alike but for a captured type must not share compiled code (a disk cache hit
    # of the first for the second gave vec2's result for vec3)
    k2, k3 = _length_kernel(wp.vec2), _length_kernel(wp.vec3)
    assert k2.cache_key() != k3.cache_key()
    out = wp.zeros(1, dtype=float)
    for k, expected in ((k2, 2.0), (k3, 3.0)):
        wp.launch(k, dim=1, inputs=[out])
        assert out.numpy()[0] == expected
    f32, f64 = _cast_kernel(wp.float32), _cast_kernel(wp.float64)
    assert f32.cache_key() != f64.cache_key()
    assert (_length_kernel(wp.types.vector(length=5, dtype=wp.float64)).cache_key()
            != _length_kernel(wp.types.vector(length=5, dtype=wp.float32)).cache_key())


def test_module_identifier_takes_warps_block_dim():
    m = _make(launch_bounds=3).module
    assert m.get_module_identifier(block_dim=64) == m.get_module_identifier()
    assert m.get_module_identifier().startswith(f"wp_{m.name}_")
