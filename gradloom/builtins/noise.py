"""Perlin noise builtins: noise, pnoise, curlnoise."""

from __future__ import annotations
