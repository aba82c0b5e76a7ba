"""pytest configuration shared by the test suite.

Puts ``tests/`` (for ``wpcompat``) and the repository root (for ``gradloom``) on ``sys.path``.
The backend used by the Warp-style kernel tests is chosen with ``GL_TEST_BACKEND``
(``gradloom``, the default, or ``warp``); see ``tests/wpcompat.py``.
"""

import os
import sys

import pytest

_TESTS = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_TESTS)
for _p in (_TESTS, _ROOT):
    if _p not in sys.path:
        sys.path.insert(0, _p)


def pytest_report_header(config):
    return (
        f"kernel tests backend (GL_TEST_BACKEND): {os.environ.get('GL_TEST_BACKEND', 'gradloom')}"
    )


@pytest.fixture
def simd_width_16():
    """The SIMD thread loop at 16 lanes, on one thread, whatever the host (tests of the lane
    loop's code and bits)."""
    from gradloom import config

    saved = config.simd, config.simd_width, config.num_threads
    config.simd, config.simd_width, config.num_threads = True, 16, 1
    yield
    config.simd, config.simd_width, config.num_threads = saved
