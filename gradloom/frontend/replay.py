"""`@wp.func_replay(f)`: accepted for Warp code; gradloom's adjoint never replays a forward."""

from __future__ import annotations

from typing import Any

from ..errors import GradloomError
from .func import Function, annotated_params
from .generic import is_generic
from .source import parse_function


def func_replay(forward: Function) -> Any:
    """Decorator: Warp runs the decorated function instead of f when its backward pass replays
    the forward (so that side effects such as atomic counters are not repeated). gradloom's
    adjoint keeps the forward's values instead of replaying the forward, so the replay function
    is only checked to match an overload of f and is otherwise unused."""
    if not isinstance(forward, Function):
        raise GradloomError(f"wp.func_replay() takes a @wp.func, got {forward!r}")

    def register(replay: Any) -> Any:
        types = [t for _, t in annotated_params(parse_function(replay))]
        if any(is_generic(t) for t in types):
            raise RuntimeError(f"Cannot define custom replay definition for {forward.key}: the "
                               "replay function has generic parameters")
        matching = [o for o in forward.overloads if [t for _, t in o.param_types()] == types]
        if not matching:
            raise RuntimeError(f"Could not find forward definition of function {forward.key} "
                               "that matches the custom replay definition's parameters")
        matching[0].replay = replay  # kept (unused) so calls can refuse what Warp refuses
        return replay

    return register
