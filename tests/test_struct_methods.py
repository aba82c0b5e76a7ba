"""`@wp.struct` classes keep their Python methods and class attributes on instances, as Warp's do
(checked side by side with warp-lang 1.19); kernels see the fields only."""

import numpy as np
import pytest

import gradloom as wp


@wp.struct
class Body:
    n: int
    x: wp.array(dtype=float)
    mass: float
    LIMIT = 7

    def init(self, n):
        self.n = n
        self.x = wp.zeros(n, dtype=float)
        self.mass = 2.0
        return self

    @staticmethod
    def make(n):
        return Body().init(n)

    @classmethod
    def made_by(cls, n):
        return cls().init(n)

    @property
    def weight(self):
        return self.mass * 9.8

    @staticmethod
    @wp.kernel
    def fill(x: wp.array(dtype=float), v: float):
        i = wp.tid()
        x[i] = v

    def __init__(self, whatever):  # Warp never calls a user __init__
        raise AssertionError("not called")


@wp.kernel
def weigh(b: Body, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = b.x[i] * b.mass + float(b.n)


def test_instance_methods_fill_fields():
    b = Body()
    assert b.init(3) is b
    assert b.n == 3 and b.mass == 2.0 and b.x.shape == (3,)


def test_static_and_class_methods_and_properties():
    assert Body.make(4).n == 4 and Body().make(2).n == 2
    assert Body.made_by(5).n == 5 and isinstance(Body.made_by(1), Body)
    assert Body.make(1).weight == pytest.approx(19.6)
    assert Body.LIMIT == 7 and Body().LIMIT == 7


def test_kernels_in_the_class_body_launch_and_see_fields_only():
    b = Body.make(3)
    wp.launch(Body.fill, 3, inputs=[b.x, 1.5])
    out = wp.zeros(3, dtype=float)
    wp.launch(weigh, 3, inputs=[b, out])
    np.testing.assert_allclose(out.numpy(), 1.5 * 2.0 + 3.0)
    assert [name for name, _ in Body.__gl_type__.fields] == ["n", "x", "mass"]


def test_methods_are_not_fields():
    b = Body()
    with pytest.raises(AttributeError, match="no field 'weight'"):
        b.weight = 3.0  # a property without a setter is not a field (Warp refuses it too)
    with pytest.raises(AttributeError, match="no field 'other'"):
        b.other = 1
    assert list(vars(b)) == ["n", "x", "mass"]


@wp.kernel
def energy(b: Body, out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, b.mass * b.x[i] * b.x[i])


def test_a_struct_built_by_its_methods_differentiates():
    # E = mass * Σ x², so dE/dx = 2 mass x (analytic)
    b = Body.make(4)
    b.x = wp.array(np.array([0.5, -1.0, 2.0, 0.25], dtype=np.float32), requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(energy, 4, inputs=[b, out])
    tape.backward(loss=out)
    np.testing.assert_allclose(b.x.grad.numpy(), 2.0 * b.mass * b.x.numpy(), rtol=1e-6)
