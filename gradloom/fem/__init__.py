"""The data types of Warp's finite-element module (`warp.fem`) that plain kernels can use.

gradloom does not provide Warp's FEM library (fields, spaces, integrands); this module holds
only its small public value types, so that code declaring structs or kernels with them runs
unchanged: `Sample` (and its float64 twin), the index and coordinate aliases, and their null
constants, with Warp's definitions.
"""

from __future__ import annotations

from typing import Any

from ..runtime.array.structs import struct
from ..types import float32, float64, int32, vec2i, vec3, vec3d

#: index of a geometry element, of a quadrature point; a (node, component) degree of freedom
ElementIndex = int32
QuadraturePointIndex = int32
DofIndex = vec2i
#: coordinates of a point inside an element
Coords = vec3
Coords_f64 = vec3d

NULL_ELEMENT_INDEX = -1
NULL_QP_INDEX = -1
NULL_DOF_INDEX = DofIndex(-1, -1)


def _sample(name: str, coords: Any, weight: Any, doc: str) -> Any:
    fields = {"element_index": ElementIndex, "element_coords": coords,
              "qp_index": QuadraturePointIndex, "qp_weight": weight, "test_dof": DofIndex,
              "trial_dof": DofIndex}
    return struct(type(name, (), {"__annotations__": fields, "__doc__": doc,
                                  "__module__": __name__, "__qualname__": name}))


#: per-sample point context for evaluating fields and operators in integrands
Sample = _sample("Sample", Coords, float32, "Per-sample point context (float32).")
#: `Sample` with float64 coordinates and weight
Sample_f64 = _sample("Sample_f64", Coords_f64, float64, "Per-sample point context (float64).")


class Integrand:
    """What `@fem.integrand` makes of a function. gradloom has no FEM library to run it with,
    so defining one works (modules that declare integrands import) and calling it says so."""

    def __init__(self, func: Any) -> None:
        self.func = func
        self.name = getattr(func, "__qualname__", repr(func))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from ..errors import GradloomError

        raise GradloomError(f"integrand '{self.name}': gradloom does not provide warp.fem's "
                            "integrands, fields or spaces")


def integrand(func: Any = None, **kwargs: Any) -> Any:
    """`@fem.integrand` (with or without options): an `Integrand` that cannot be evaluated."""
    if func is None:
        return Integrand
    return Integrand(func)
