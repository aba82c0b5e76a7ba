"""Forward mode (JVP) on the gradient corpus (tests/test_grad_corpus*.py): for each case, the
directional derivative w·(J d) along a random direction d of its differentiable inputs, from one
forward-mode run, against a float64 central difference of w·outputs and against reverse mode by
the dot-product identity w·(J d) = (Jᵀ w)·d."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import test_grad_corpus as corpus
import test_grad_corpus_loops as loops
from gradfd import _objective, build, kernel_program, make_weights, reverse_gradients
from wpcompat import BACKEND

if BACKEND != "gradloom":
    pytest.skip("forward mode is gradloom's (warp-lang has none)", allow_module_level=True)

from gradloom.errors import GradloomError  # noqa: E402
from gradloom.forward_mode import tangent_run  # noqa: E402

CASES = [*corpus.CASES, *loops.CASES]
H = 1e-6

#: cases forward mode refuses, with the clear error it gives (a substring)
REFUSED = {
}


def _program(case: Any) -> Any:
    return case.program or kernel_program(case.kernel, case.dim, case.outputs)


def _directions(case: Any, seed: int) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {pos: rng.normal(size=np.shape(case.args[pos].numpy_value())) for pos in case.wrt}


def _forward(program: Any, case: Any, dirs: dict[int, np.ndarray],
             weights: list[np.ndarray]) -> float:
    arrays = build(case.args)
    _, tangents = tangent_run(lambda: program(arrays), [(arrays[p], d) for p, d in dirs.items()])
    return float(sum(np.sum(w * np.asarray(t, dtype=np.float64))
                     for w, t in zip(weights, tangents, strict=True) if t is not None))


def _central(program: Any, case: Any, dirs: dict[int, np.ndarray],
             weights: list[np.ndarray]) -> float:
    base = {p: case.args[p].numpy_value().astype(np.float64) for p in dirs}
    plus = {p: base[p] + H * d for p, d in dirs.items()}
    minus = {p: base[p] - H * d for p, d in dirs.items()}
    return (_objective(program, case.args, weights, plus)
            - _objective(program, case.args, weights, minus)) / (2 * H)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_jvp_matches_central_difference_and_reverse(case: Any) -> None:
    program = _program(case)
    dirs = _directions(case, 7)
    weights = make_weights(program, case.args, 0, case.weights)
    if case.id in REFUSED:
        with pytest.raises(GradloomError, match=REFUSED[case.id]):
            _forward(program, case, dirs, weights)
        return
    fwd = _forward(program, case, dirs, weights)
    fd = _central(program, case, dirs, weights)
    rtol = case.opts.get("rtol", 1e-5)
    atol = case.opts.get("atol", 1e-7)
    scale = sum(float(np.sum(np.abs(w))) for w in weights) * max(
        float(np.max(np.abs(d))) for d in dirs.values())
    assert abs(fwd - fd) <= atol * scale + rtol * abs(fd) + 1e-9, (
        f"{case.id}: jvp {fwd!r}, central difference {fd!r}")
    rev = reverse_gradients(program, case.args, case.wrt, weights, name=case.id)
    dot = float(sum(np.sum(rev[p] * d) for p, d in dirs.items()))
    assert abs(fwd - dot) <= 1e-9 * (abs(dot) + scale), (
        f"{case.id}: w·(J d) = {fwd!r} from forward mode, (Jᵀ w)·d = {dot!r} from reverse")
