"""Interpreter start-up hook of a gradloom compatibility child's own children: `import warp` is
gradloom there too.

Warp's tests start Python subprocesses as ``[sys.executable, "-c", ...]``
(``unittest_utils.run_python_subprocess``), a plain interpreter whose ``import warp`` would load
the installed warp-lang wheel, so the runner would measure warp-lang. The runner puts this
directory on a gradloom child's ``PYTHONPATH`` and names the shim directory in
``WARP_COMPAT_SHIM`` (runner.child_env); every interpreter started under that environment then
installs gradloom's ``warp`` (with the shim's packages) before running anything.
"""

from __future__ import annotations

import os

_SHIM = os.environ.get("WARP_COMPAT_SHIM")
if _SHIM:
    from tools.warp_compat import shimlib

    shimlib.install_for_subprocess(_SHIM)
