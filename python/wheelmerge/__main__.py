"""``python -m wheelmerge`` and the ``wheelmerge`` console script: run the executable."""

from __future__ import annotations

import os
import sys

from . import executable


def main() -> None:
    path = executable()
    os.execv(path, [path, *sys.argv[1:]])


if __name__ == "__main__":
    main()
