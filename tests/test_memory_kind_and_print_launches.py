"""Warp's `wp.MemoryKind` / `array.memory_kind` (what memory an array was allocated as) and
`wp.config.print_launches` (each launch's line goes to the active logger's info)."""

from __future__ import annotations

import numpy as np

import gradloom as wp


def test_memory_kinds() -> None:
    assert [int(k) for k in wp.MemoryKind] == [0, 1, 2, 3, 4, 5]
    assert wp.MemoryKind(1) is wp.MemoryKind.HOST
    a = wp.empty(4, dtype=float)
    assert a.memory_kind is wp.MemoryKind.HOST and a[1:].memory_kind is wp.MemoryKind.HOST
    data = np.zeros(3, np.float32)
    assert wp.array(data, dtype=float, copy=False).memory_kind is wp.MemoryKind.HOST
    assert wp.array(dtype=float).memory_kind is wp.MemoryKind.UNKNOWN  # an annotation
    assert not hasattr(wp.indexedarray(a, wp.array([0, 1], dtype=int)), "memory_kind")


@wp.kernel
def _noop(a: wp.array(dtype=float)):
    a[wp.tid()] = 1.0


class _Capture:
    def __init__(self) -> None:
        self.infos: list[str] = []

    def debug(self, message: str) -> None:
        pass

    def info(self, message: str) -> None:
        self.infos.append(message)

    def warning(self, message: str, category: object = None, stacklevel: int = 1) -> None:
        pass

    def error(self, message: str) -> None:
        pass


def test_print_launches_goes_to_the_active_logger() -> None:
    logger, saved = _Capture(), wp.config.print_launches
    assert saved is False  # off unless asked for
    a = wp.zeros(2, dtype=float)
    try:
        with wp.ScopedLogger(logger):
            wp.config.print_launches = True
            wp.launch(_noop, dim=0, inputs=[a])
            wp.config.print_launches = False
            wp.launch(_noop, dim=2, inputs=[a])
    finally:
        wp.config.print_launches = saved
    assert len(logger.infos) == 1 and logger.infos[0].startswith("kernel: ") and \
        "_noop dim: 0 inputs: [" in logger.infos[0] and logger.infos[0].endswith("device: cpu")
