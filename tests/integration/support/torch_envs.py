"""The torch environments of scripts/torch-envs.sh, for the suites that build and run torch
extensions: one virtual environment per pinned torch release (made without the network from
wheels downloaded once into ~/.cache/wheelmerge/torch), never changed by a test. A test installs
what it builds into a directory of its own and puts that in front with PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import pytest

from conftest import ROOT, clean_env, run, tool_python

SCRIPT = ROOT / "scripts" / "torch-envs.sh"
CACHE = Path(os.environ.get("TORCH_CACHE") or Path.home() / ".cache" / "wheelmerge" / "torch")
# The variant label each pinned release is built as, with torch.version.cuda of the release on
# the package index.
RELEASES = {"torch210_cu12": ("2.10.0", "12.8"), "torch211_cu13": ("2.11.0", "13.0"),
            "torch215_cu13": ("2.15.0", "13.2")}
# The two releases most suites build and run with; 2.15 (the newest on the index when pinned)
# is for the stable-ABI example, whose build against 2.11 must run there.
BUILT = ("torch210_cu12", "torch211_cu13")


# Imports PACKAGE; prints the import error's class, module and message, or what was selected.
_IMPORT = r"""
import json
try:
    import PACKAGE
except ImportError as error:
    print(json.dumps({"error": type(error).__name__, "module": type(error).__module__, "message": str(error)}))
else:
    print(json.dumps({"error": None, "selected": PACKAGE._wheelmerge.selected()}))
"""


@dataclass(frozen=True)
class TorchEnv:
    """One release's environment: its interpreter, and the directory of wheels it was made from."""

    label: str
    version: str  # "2.10.0"
    cuda: str  # torch.version.cuda, "12.8"
    python: Path
    wheels: Path

    @property
    def release(self) -> str:
        """major.minor, "2.10"."""
        return ".".join(self.version.split(".")[:2])

    def run(self, *args: str | Path, site: Path | None = None, extra: Mapping[str, str] | None = None,
            check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """Runs the environment's Python; `site` (a directory of installed packages) goes first
        on sys.path. The working directory is the environment's own (no source tree there)."""
        env = clean_env(extra)
        if site is not None:
            env["PYTHONPATH"] = str(site)
        return run([self.python, *args], env=env, check=check, timeout=timeout,
                   cwd=self.python.parent.parent)

    def import_report(self, package: str, site: Path, extra: Mapping[str, str] | None = None) -> dict:
        """Imports `package` (a merged wheel's, installed in `site`): {"error": None, "selected":
        LABEL}, or the ImportError's class, module and message."""
        return json.loads(self.run("-c", _IMPORT.replace("PACKAGE", package), site=site, extra=extra).stdout)


def prepare(labels: Sequence[str] = BUILT) -> tuple[dict[str, TorchEnv], str, float]:
    """Runs scripts/torch-envs.sh for the releases of `labels`: the environments, the script's
    messages and its run time. Downloading and making both environments takes minutes the
    first time (about 4 GB, 2.7 GB and 2.8 GB of wheels); an intact environment is reused in a second."""
    versions = [RELEASES[label][0] for label in labels]
    started = time.monotonic()
    result = run([SCRIPT, *versions], env=clean_env(), timeout=3600)
    seconds = time.monotonic() - started
    pythons = dict(line.split(" ", 1) for line in result.stdout.splitlines() if line.strip())
    envs = {}
    for label in labels:
        version, cuda = RELEASES[label]
        if version not in pythons:
            pytest.fail(f"{SCRIPT} printed no environment for torch {version}:\n{result.stdout}\n{result.stderr}",
                        pytrace=False)
        envs[label] = TorchEnv(label, version, cuda, Path(pythons[version]), CACHE / version)
    return envs, result.stderr, seconds


def site_factory(base: Path) -> Callable[[Path], Path]:
    """install(wheel) -> a directory under `base` the wheel is installed into (pip --target, once
    per wheel), to be put first on a torch environment's sys.path (TorchEnv.run's `site`): the
    shared environments are never changed."""
    sites: dict[Path, Path] = {}

    def install(wheel: Path) -> Path:
        if wheel not in sites:
            target = base / f"site-{len(sites)}"
            run([tool_python(), "-m", "pip", "install", "--no-deps", "--no-index", "--target", target, wheel])
            sites[wheel] = target
        return sites[wheel]

    return install
