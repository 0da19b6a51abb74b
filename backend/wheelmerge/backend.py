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

``build_editable`` (offered when the inner backend has it) builds one variant in place, the one
named by ``-C wheelmerge.editable-variant=cu13`` or else the first whose toolkit is found, with
the environment ``wheelmerge build`` would give that variant.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import subprocess
import sys
from typing import Any, Callable, Iterator

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
    arguments = ["--no-isolation", "--python", sys.executable, *_toolkit_arguments(own)]
    if "jobs" in own:
        arguments += ["--jobs", str(own["jobs"])]
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


def _toolkit_arguments(own: dict[str, Any]) -> list[str]:
    arguments = []
    for name, value in own.items():
        if name.startswith("cuda-"):
            major = name[len("cuda-"):]
            arguments += ["--cuda", f"{major}={value}" if value else major]
    return arguments


def _editable_environment(own: dict[str, Any]) -> dict[str, str]:
    """The environment changes for the variant an editable install builds."""
    wanted = own.get("editable-variant")
    arguments = _toolkit_arguments(own)
    if wanted and not any(a.split("=")[0] == wanted.removeprefix("cu") for a in arguments[1::2]):
        arguments += ["--cuda", wanted.removeprefix("cu")]
    report = _run(["toolkit", ".", *arguments])
    toolkits = report.get("toolkits", [])
    chosen = [t for t in toolkits if t["label"] == wanted] if wanted else toolkits[:1]
    if not chosen:
        raise BuildError(f"no CUDA toolkit found for the editable variant {wanted or '(any)'}; "
                         "give one with -C wheelmerge.cuda-N=PATH")
    return chosen[0]["env"]


@contextlib.contextmanager
def _variant(changes: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    for key, value in changes.items():
        if value:
            os.environ[key] = value
        else:
            os.environ.pop(key, None)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _build_editable(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                    metadata_directory: str | None = None) -> str:
    own, inner = _split_settings(config_settings)
    with _variant(_editable_environment(own)):
        return _inner_backend().build_editable(wheel_directory, inner, metadata_directory)


def _get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    _, inner = _split_settings(config_settings)
    return list(_inner_backend().get_requires_for_build_editable(inner))


def _prepare_metadata_for_build_editable(metadata_directory: str,
                                         config_settings: dict[str, Any] | None = None) -> str:
    own, inner = _split_settings(config_settings)
    with _variant(_editable_environment(own)):
        return _inner_backend().prepare_metadata_for_build_editable(metadata_directory, inner)


_EDITABLE_HOOKS: dict[str, Callable[..., Any]] = {
    "build_editable": _build_editable,
    "get_requires_for_build_editable": _get_requires_for_build_editable,
    "prepare_metadata_for_build_editable": _prepare_metadata_for_build_editable,
}


def __getattr__(name: str) -> Any:
    """The PEP 660 hooks exist exactly when the inner backend has them."""
    if name in _EDITABLE_HOOKS and hasattr(_inner_backend(), name):
        return _EDITABLE_HOOKS[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
