"""wheelmerge: one wheel for every CUDA major.

The work is done by the compiled ``wheelmerge`` executable shipped inside this package;
this package finds it (:func:`executable`), runs it (``python -m wheelmerge``) and offers the
PEP 517 backend :mod:`wheelmerge.backend`.
"""

from __future__ import annotations

import os

__all__ = ["executable"]


def executable() -> str:
    """The path of the wheelmerge executable installed with this package."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "wheelmerge")
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"the wheelmerge executable is missing from this installation: {path}")
    return path
