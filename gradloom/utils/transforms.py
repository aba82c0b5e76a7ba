"""`wp.transform_expand` and `wp.quat_between_vectors` (Warp's small transform helpers)."""

# mypy: ignore-errors
# (kernel source: its annotations are gradloom types, which mypy cannot read)

from typing import Any

import gradloom as wp


def transform_expand(t: Any) -> Any:
    """A transform from its 7 components: position (3), then quaternion (x, y, z, w)."""
    return wp.transformf(*t)


@wp.func
def quat_between_vectors(a: wp.vec3, b: wp.vec3) -> wp.quat:
    """The shortest-arc rotation taking the direction of `a` onto the direction of `b` (any
    nonzero lengths; opposite directions are degenerate, as in Warp)."""
    ua, ub = wp.normalize(a), wp.normalize(b)
    axis = wp.cross(ua, ub)
    return wp.normalize(wp.quat(axis[0], axis[1], axis[2], 1.0 + wp.dot(ua, ub)))
