"""wmdemo.sub: a subpackage with a variant extension of its own."""

from __future__ import annotations

from ._nested import build_major

__all__ = ["build_major"]
