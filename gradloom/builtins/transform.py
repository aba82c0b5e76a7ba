"""Rigid transform builtins."""

from __future__ import annotations
