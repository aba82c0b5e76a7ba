"""The CPU backend's registration: imports the CPU's launch modules and provides their parts.

Loaded by name (runtime/backend.py) the first time generic code needs the CPU backend; generic
modules never import it, so their dependencies point this way only.
"""

from __future__ import annotations

from . import cpu_command, cpu_launch
from .backend import CPU_BACKEND

CPU_BACKEND.provide(
    # launches and recorded launches
    prepared=cpu_launch.prepared, command=cpu_command.command,
)
