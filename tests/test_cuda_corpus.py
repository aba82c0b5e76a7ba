"""The gradient corpus on CUDA: every case of tests/test_grad_corpus.py (and its loop and fuzz
companions) recorded on a `wp.Tape` on a CUDA device, checked against float64 central
differences of forward launches on the same device, and against the CPU's reverse gradients.

Runs against tests/fake_cuda.py without a GPU (each launch block through the kernel's CPU
entry; the PTX is compiled for real) and on the GPU when one is present. Cases whose adjoint
needs threads to run in order are refused on CUDA: they must raise that clear error instead.
"""

from __future__ import annotations

import gradfd
import numpy as np
import pytest
import test_grad_corpus as corpus
import test_grad_corpus_fuzz as corpus_fuzz
import test_grad_corpus_loops as corpus_loops
from cuda_env import device_env, skip_unless_runnable

from gradloom.errors import LaunchError

_MODULES = (gradfd, corpus, corpus_fuzz, corpus_loops)
CASES = [*corpus.CASES, *corpus.TAPE_STRUCT_CASES, *corpus.CASES_LANGUAGE,
         *corpus.CASES_SHORT_CIRCUIT, *corpus.CASES_CUSTOM_GRAD_ARRAYS,
         *(c for c, known in corpus_fuzz.CASES if known not in corpus_fuzz.UNDEFINED_REPLAY),
         *corpus_loops.CASES]


@pytest.fixture(params=["fake", "gpu"])
def on_cuda(request, monkeypatch):
    """The corpus's programs and harness launch on "cuda": the GPU, or the fake driver."""
    skip_unless_runnable(request.param)
    for module in _MODULES:
        monkeypatch.setattr(module, "DEVICE", "cuda")
    yield from device_env(request.param)


def _program(case):
    if case.program is not None:
        return case.program
    return gradfd.kernel_program(case.kernel, case.dim, case.outputs)


def _cpu_reverse(case, weights, monkeypatch):
    for module in _MODULES:
        monkeypatch.setattr(module, "DEVICE", "cpu")
    try:
        return gradfd.reverse_gradients(_program(case), case.args, case.wrt, weights,
                                        name=case.id)
    finally:
        for module in _MODULES:
            monkeypatch.setattr(module, "DEVICE", "cuda")


def test_the_corpus_is_all_here():
    assert len(CASES) >= 120 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_gradient_on_cuda_matches_fd_and_the_cpu(case, on_cuda, monkeypatch):
    try:
        result = case.run()
    except LaunchError as exc:
        assert "cannot run on a CUDA device" in str(exc) and "on the CPU" in str(exc)
        return
    cpu = _cpu_reverse(case, result.weights, monkeypatch)
    for pos, g in result.reverse.items():
        np.testing.assert_allclose(g, cpu[pos], rtol=1e-9, atol=1e-12,
                                   err_msg=f"{case.id}: argument {pos}, CUDA against CPU")
