"""A PEP 517 build backend that builds a project once per CUDA major and merges the wheels.

Use it from a project's ``pyproject.toml``::

    [build-system]
    requires = ["wheelmerge", "setuptools>=70"]
    build-backend = "wheelmerge.backend"

    [tool.wheelmerge]
    backend = "setuptools.build_meta"      # the backend that builds each variant
    cuda = [12, 13]

``build_wheel`` runs ``wheelmerge build --no-isolation`` (the frontend made the build
environment): the build logic stays in the executable. Config settings named
``wheelmerge.cuda-N`` give toolkit roots (``-C wheelmerge.cuda-12=/usr/local/cuda-12.9``);
every other setting goes to the inner backend unchanged. The sdist and the optional hooks are
the inner backend's own; ``prepare_metadata_for_build_wheel`` is not offered, because the
merged wheel's METADATA (per-variant extras) is only known after the merge.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from typing import Any

from . import executable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on older Pythons only
    import tomli as tomllib

_OWN_PREFIX = "wheelmerge."
_OWN_KEYS = ("cuda-", "editable-variant", "jobs")


class BuildError(RuntimeError):
    """A variant's build or the merge failed; the message carries wheelmerge's report."""


def _config() -> dict[str, Any]:
    with open("pyproject.toml", "rb") as f:
        return tomllib.load(f).get("tool", {}).get("wheelmerge", {})


def _split_settings(config_settings: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(wheelmerge's own settings without the prefix, the inner backend's settings)."""
    own: dict[str, Any] = {}
    inner: dict[str, Any] = {}
    for key, value in (config_settings or {}).items():
        if key.startswith(_OWN_PREFIX):
            name = key[len(_OWN_PREFIX):]
            if not name.startswith(_OWN_KEYS):
                raise BuildError(
                    f"unknown config setting {key!r}: wheelmerge knows "
                    "wheelmerge.cuda-N=PATH, wheelmerge.editable-variant=cuNN and wheelmerge.jobs=N"
                )
            own[name] = value
        else:
            inner[key] = value
    return own, inner


def _inner_backend():
    spec = _config().get("backend")
    if not spec:
        raise BuildError('build-backend is wheelmerge.backend, but pyproject.toml has no [tool.wheelmerge] backend = "..."')
    module_name, _, attribute = spec.partition(":")
    backend = importlib.import_module(module_name)
    for part in filter(None, attribute.split(".")):
        backend = getattr(backend, part)
    return backend


def _run(arguments: list[str]) -> dict[str, Any]:
    """Runs the executable with --json; its messages pass through to the frontend's output."""
    process = subprocess.run([executable(), *arguments, "--json"], stdout=subprocess.PIPE, text=True)
    try:
        report = json.loads(process.stdout or "{}")
    except json.JSONDecodeError:
        report = {}
    if process.returncode != 0:
        problems = report.get("error", {}).get("problems", [])
        details = "\n".join(p.get("message", "") for p in problems) or process.stdout
        raise BuildError(f"wheelmerge {arguments[0]} failed (exit status {process.returncode}):\n{details}")
    return report


def _build_arguments(own: dict[str, Any], inner: dict[str, Any]) -> list[str]:
    arguments = ["--no-isolation", "--python", sys.executable]
    for name, value in own.items():
        if name.startswith("cuda-"):
            major = name[len("cuda-"):]
            arguments += ["--cuda", f"{major}={value}" if value else major]
        elif name == "jobs":
            arguments += ["--jobs", str(value)]
    for key, value in inner.items():
        for item in value if isinstance(value, list) else [value]:
            arguments += ["-C", f"{key}={item}"]
    return arguments


def build_wheel(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    own, inner = _split_settings(config_settings)
    report = _run(["build", ".", "-o", os.path.abspath(wheel_directory), *_build_arguments(own, inner)])
    return os.path.basename(report["output"])


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    _, inner = _split_settings(config_settings)
    return _inner_backend().build_sdist(sdist_directory, inner)


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    _, inner = _split_settings(config_settings)
    hook = getattr(_inner_backend(), "get_requires_for_build_wheel", None)
    return list(hook(inner)) if hook else []


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    _, inner = _split_settings(config_settings)
    hook = getattr(_inner_backend(), "get_requires_for_build_sdist", None)
    return list(hook(inner)) if hook else []
