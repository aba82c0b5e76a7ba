"""`wp.transform_expand` and `wp.quat_between_vectors` (Warp's small transform helpers)."""

# mypy: ignore-errors
# (kernel source: its annotations are gradloom types, which mypy cannot read)

from typing import Any

from ..builtins import catalog  # noqa: F401  (registers every builtin)
from ..builtins.registry import REGISTRY
from ..frontend.func import func
from ..types import quat, transformf, vec3

normalize, cross, dot = REGISTRY["normalize"], REGISTRY["cross"], REGISTRY["dot"]


def transform_expand(t: Any) -> Any:
    """A transform from its 7 components: position (3), then quaternion (x, y, z, w)."""
    return transformf(*t)


@func
def quat_between_vectors(a: vec3, b: vec3) -> quat:
    """The shortest-arc rotation taking the direction of `a` onto the direction of `b` (any
    nonzero lengths; opposite directions are degenerate, as in Warp)."""
    ua, ub = normalize(a), normalize(b)
    axis = cross(ua, ub)
    return normalize(quat(axis[0], axis[1], axis[2], 1.0 + dot(ua, ub)))
