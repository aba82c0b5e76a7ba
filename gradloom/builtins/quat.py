"""Quaternion builtins."""

from __future__ import annotations
