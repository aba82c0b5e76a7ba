"""Matrix decompositions: svd3, svd2, qr3, eig3."""

from __future__ import annotations
