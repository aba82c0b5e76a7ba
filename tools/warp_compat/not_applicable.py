"""Warp tests that do not apply to gradloom (Warp-private internals, CUDA-only), each with its reason.

Tests that reach ``warp._src`` at run time are recognised automatically (the shim's placeholders
raise ``WarpPrivate``); this table holds the rest. Keys are ``fnmatch`` patterns on
``Class.test_name`` per test module. Keep it short: anything public belongs in the score.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

NOT_APPLICABLE: dict[str, dict[str, str]] = {}


def reason_for(module: str, test: str) -> str:
    """The reason ``test`` of ``module`` is not applicable, or '' if it is."""
    for pattern, reason in NOT_APPLICABLE.get(module, {}).items():
        if fnmatchcase(test, pattern):
            return reason
    return ""
