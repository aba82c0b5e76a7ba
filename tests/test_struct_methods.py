"""`@wp.struct` classes keep their Python methods and class attributes on instances, as Warp's do
(checked side by side with warp-lang 1.19); kernels see the fields only. Deliberate differences
(docs/differences.md): class methods work on the class, property setters run, and a field named
like a property is refused."""

import copy
import pickle

import numpy as np
import pytest

import gradloom as wp
from gradloom.errors import StructFieldError


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
    with pytest.raises(AttributeError, match="weight"):
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


# -- more of the class kept (each checked against warp-lang 1.19 unless marked) ---------------

@wp.struct
class Spring:
    stiffness: float
    rest: float = 1.5  # a class-level value of a field: the class keeps it, instances start at 0
    SCALE = 2.5

    @property
    def compliance(self):
        return 1.0 / self.stiffness

    @compliance.setter
    def compliance(self, c):  # Warp refuses a setter; gradloom runs it (docs/differences.md)
        self.stiffness = 1.0 / c

    def __repr__(self):
        return f"Spring<{self.stiffness}>"

    def __eq__(self, other):
        return isinstance(other, Spring) and self.stiffness == other.stiffness

    __hash__ = None

    def __len__(self):
        return 2

    def describe(self):
        return "spring"

    @wp.kernel
    def stretch(x: wp.array(dtype=float), s: float):  # a kernel in the class body
        i = wp.tid()
        x[i] = x[i] * s


@wp.struct
class Named:
    a: float

    def a(self):  # a method named like a field: instances see the field, as in Warp
        return "method"

    def twice(self):
        return 2.0 * self.a


@wp.kernel
def spring_force(s: Spring, n: Named, out: wp.array(dtype=float)):
    out[0] = s.stiffness * Spring.SCALE + s.rest + n.a


def test_property_setter_assigns_fields():
    s = Spring()
    s.compliance = 0.25
    assert s.stiffness == 4.0 and s.compliance == 0.25
    with pytest.raises(AttributeError, match="no field 'SCALE'"):
        s.SCALE = 1.0  # class attributes are not fields (Warp refuses this too)


def test_user_dunders_are_kept_and_init_is_not_called():
    s, t = Spring(), Spring()
    s.stiffness = t.stiffness = 3.0
    assert repr(s) == "Spring<3.0>" and s == t and len(s) == 2 and s.describe() == "spring"
    with pytest.raises(TypeError, match="unhashable"):
        hash(s)  # __eq__ without __hash__: Python's rule, as in Warp
    assert Body().n == 0  # Body's own __init__ raises: never called


def test_class_values_of_fields_and_methods_named_like_fields():
    assert Spring.rest == 1.5 and Spring().rest == 0.0
    n = Named()
    n.a = 4.0
    assert n.a == 4.0 and n.twice() == 8.0 and Named().a == 0.0
    assert Named.a(None) == "method"
    assert [name for name, _ in Named.__gl_type__.fields] == ["a"]
    s = Spring()
    s.stiffness = 2.0
    out = wp.zeros(1, dtype=float)
    wp.launch(spring_force, 1, inputs=[s, n, out])
    assert out.numpy()[0] == pytest.approx(2.0 * 2.5 + 0.0 + 4.0)  # rest is 0 in the instance


def test_a_field_named_like_a_property_is_refused():
    with pytest.raises(StructFieldError, match="'speed' is both a field and a property"):
        @wp.struct
        class Bad:
            speed: float

            @property
            def speed(self):
                return 1.0


def test_kernel_in_the_class_body_without_staticmethod():
    x = wp.array(np.array([1.0, 2.0], dtype=np.float32))
    wp.launch(Spring.stretch, 2, inputs=[x, 3.0])
    wp.launch(Spring().stretch, 2, inputs=[x, 0.5])
    np.testing.assert_allclose(x.numpy(), [1.5, 3.0])


def test_super_works_in_user_methods():
    @wp.struct
    class Counted:
        k: int

        def __setattr__(self, name, value):  # the user's __setattr__ runs, as in Warp
            super().__setattr__(name, value * 10 if name == "k" else value)

    c = Counted()
    c.k = 2
    assert c.k == 20
    with pytest.raises(AttributeError, match="no field 'j'"):
        c.j = 1  # super() reaches gradloom's checked assignment


def test_layout_arrays_numpy_and_cache_keys_see_fields_only():
    def plain():
        @wp.struct
        class Body:
            n: int
            x: wp.array(dtype=float)
            mass: float
        return Body

    Plain = plain()
    assert Body.__gl_type__.size == Plain.__gl_type__.size
    assert Body.__gl_type__.offsets == Plain.__gl_type__.offsets
    assert Body.__gl_fingerprint__(set()) == Plain.__gl_fingerprint__(set())
    assert Body.numpy_dtype() == Plain.numpy_dtype()
    a = Body.make(2)
    a.mass = 3.0
    arr = wp.array([a, Body.make(5)], dtype=Body)
    assert arr.numpy()["n"].tolist() == [2, 5] and arr.numpy()["mass"].tolist() == [3.0, 2.0]
    assert a.numpy_value()["mass"] == 3.0


@wp.struct
class Settings:
    dt: float
    steps: int

    def substep(self):
        return self.dt / self.steps


def test_copy_and_pickle_keep_the_class():
    s = Settings()
    s.dt, s.steps = 0.5, 4
    for t in (copy.copy(s), copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        assert type(t) is Settings and t.substep() == 0.125 and t is not s


@wp.kernel
def spring_energy(s: Spring, x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    d = x[i] - s.rest
    wp.atomic_add(out, 0, 0.5 * s.stiffness * d * d)


def test_gradient_through_a_struct_set_by_its_property_setter():
    # E = Σ ½ k (x - r)², k set through the compliance setter: dE/dx = k (x - r) (analytic)
    s = Spring()
    s.compliance = 0.5
    s.rest = 0.25
    x0 = np.array([1.0, -2.0, 0.75], dtype=np.float32)
    x = wp.array(x0, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(spring_energy, 3, inputs=[s, x, out])
    tape.backward(loss=out)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * (x0 - 0.25), rtol=1e-6)


def test_class_constants_read_by_a_kernel_are_in_its_cache_key():
    # Spring.SCALE read in spring_force: another value must not load the cached code (the
    # struct type's own key is its fields only)
    before = spring_force.content_hash(), spring_force.cache_key()
    Spring.SCALE = 3.0
    try:
        after = spring_force.content_hash(), spring_force.cache_key()
    finally:
        Spring.SCALE = 2.5
    assert before[0] != after[0] and before[1] != after[1]
    assert (spring_force.content_hash(), spring_force.cache_key()) == before
