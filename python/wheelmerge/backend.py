"""A PEP 517 build backend that builds a project once per CUDA major and merges the wheels.

Use it from a project's ``pyproject.toml``::

    [build-system]
    requires = ["wheelmerge-cuda", "setuptools>=70"]
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
named by ``-C wheelmerge.editable-variant=cu13`` (any label of the project's, e.g. ``x86_64_v3``)
or else the first whose toolkit is found, with the environment ``wheelmerge build`` would give
that variant. When a variant has ``build-requires`` of its own, ``build_wheel`` lets
``wheelmerge build`` make an isolated environment per variant (one build environment, the
frontend's, cannot hold two torch releases); otherwise the frontend's is every variant's.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import subprocess
import sys
from typing import Any, Callable, Iterator

from . import executable

_OWN_PREFIX = "wheelmerge."


class BuildError(RuntimeError):
    """A variant's build or the merge failed; the message carries wheelmerge's report."""


def _config() -> dict[str, Any]:
    """The configuration as the executable reads it ([tool.wheelmerge] or wheelmerge.yaml)."""
    return _run(["config", "."])


def _split_settings(config_settings: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(wheelmerge's own settings without the prefix, the inner backend's settings)."""
    own: dict[str, Any] = {}
    inner: dict[str, Any] = {}
    for key, value in (config_settings or {}).items():
        if key.startswith(_OWN_PREFIX):
            name = key[len(_OWN_PREFIX):]
            if not (name in ("editable-variant", "jobs") or re.fullmatch(r"cuda-[0-9]+", name)):
                raise BuildError(
                    f"unknown config setting {key!r}: wheelmerge knows "
                    "wheelmerge.cuda-N=PATH, wheelmerge.editable-variant=LABEL and wheelmerge.jobs=N"
                )
            own[name] = value
        else:
            inner[key] = value
    return own, inner


def _inner_backend():
    config = _config()
    spec = config.get("backend")
    if not spec:
        raise BuildError('build-backend is wheelmerge.backend, but the project configures no inner backend: '
                         'add [tool.wheelmerge] backend = "setuptools.build_meta" (or another)')
    # An in-tree inner backend, as PEP 517's backend-path does for the outer one.
    for path in reversed(config.get("backend-path", [])):
        path = os.path.abspath(path)
        if path not in sys.path:
            sys.path.insert(0, path)
    module_name, _, attribute = spec.partition(":")
    backend = importlib.import_module(module_name)
    for part in filter(None, attribute.split(".")):
        backend = getattr(backend, part)
    return backend


def _run(arguments: list[str], own: dict[str, Any] | None = None) -> dict[str, Any]:
    """Runs the executable with --json; its messages pass through to the frontend's output.
    Toolkits given as wheelmerge.cuda-N=PATH reach it as WHEELMERGE_CUDA_N: a hint for that
    major, which does not change which majors are built."""
    env = {**os.environ, **_toolkit_environment(own or {})}
    process = subprocess.run([executable(), *arguments, "--json"], stdout=subprocess.PIPE, text=True, env=env)
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
    """The frontend's environment is every variant's build environment, unless a variant pins
    build requirements of its own (torch 2.10 for one, 2.11 for another): then `wheelmerge build`
    makes an isolated environment per variant, from this interpreter."""
    variants = _config().get("variants", {})
    own_requirements = any(v.get("build-requires") for v in variants.values())
    arguments = ([] if own_requirements else ["--no-isolation"]) + ["--python", sys.executable]
    if "jobs" in own:
        arguments += ["--jobs", str(own["jobs"])]
    for key, value in inner.items():
        for item in value if isinstance(value, list) else [value]:
            arguments += ["-C", f"{key}={item}"]
    return arguments


def build_wheel(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    own, inner = _split_settings(config_settings)
    report = _run(["build", ".", "-o", os.path.abspath(wheel_directory), *_build_arguments(own, inner)], own)
    return os.path.basename(report["output"])


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    own, inner = _split_settings(config_settings)
    with _variant(_variant_environments(own)[0][1]):
        return _inner_backend().build_sdist(sdist_directory, inner)


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    """What the inner backend asks for, in every variant's environment (the union)."""
    own, inner = _split_settings(config_settings)
    hook = getattr(_inner_backend(), "get_requires_for_build_wheel", None)
    if not hook:
        return []
    requires: list[str] = []
    for label, changes in _variant_environments(own):
        with _variant(changes):
            try:
                asked = hook(inner)
            except Exception as e:
                raise BuildError(f"{label}: the inner backend's get_requires_for_build_wheel failed: {e!r}") from e
            requires += [r for r in asked if r not in requires]
    return requires


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    own, inner = _split_settings(config_settings)
    hook = getattr(_inner_backend(), "get_requires_for_build_sdist", None)
    if not hook:
        return []
    with _variant(_variant_environments(own)[0][1]):
        return list(hook(inner))


def _toolkit_environment(own: dict[str, Any]) -> dict[str, str]:
    return {f"WHEELMERGE_CUDA_{name[len('cuda-'):]}": str(value)
            for name, value in own.items() if name.startswith("cuda-") and value}


def _variant_environments(own: dict[str, Any], wanted: str | None = None) -> list[tuple[str, dict[str, str]]]:
    """The environment changes of each variant whose toolkit is found (or of `wanted` only)."""
    arguments = ["--variant", wanted] if wanted else []
    toolkits = _run(["toolkit", ".", "--python", sys.executable, *arguments], own).get("toolkits", [])
    if not toolkits:
        raise BuildError(f"no CUDA toolkit found for {wanted or 'any variant'}; "
                         "give one with -C wheelmerge.cuda-N=PATH")
    return [(t["label"], t["env"]) for t in toolkits]


def _editable_environment(own: dict[str, Any]) -> dict[str, str]:
    """The environment changes for the variant an editable install builds."""
    return _variant_environments(own, own.get("editable-variant"))[0][1]


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
    own, inner = _split_settings(config_settings)
    with _variant(_editable_environment(own)):
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
