"""Calls one PEP 517 hook of a project's build backend, in the project's directory.

wheelmerge runs this file with the build environment's Python, as build frontends do:

    python hook_runner.py HOOK BACKEND BACKEND_PATH_JSON ARGS_JSON RESULT_JSON

ARGS_JSON holds the hook's keyword arguments (``wheel_directory``, ``config_settings``...);
the hook's return value, or the fact that the backend lacks an optional hook, is written to
RESULT_JSON. Output of the backend goes to this process's stdout/stderr (the variant's log).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback

OPTIONAL_HOOKS = {
    "get_requires_for_build_wheel": [],
    "get_requires_for_build_sdist": [],
    "get_requires_for_build_editable": [],
    "prepare_metadata_for_build_wheel": None,
    "prepare_metadata_for_build_editable": None,
}


def load_backend(spec: str, backend_path: list[str]):
    """Imports ``module[:object]``, from backend-path first when the project names one."""
    if backend_path:
        sys.path[:0] = [os.path.abspath(p) for p in backend_path]
    module_name, _, attribute = spec.partition(":")
    backend = importlib.import_module(module_name)
    for part in filter(None, attribute.split(".")):
        backend = getattr(backend, part)
    return backend


def main(argv: list[str]) -> int:
    hook, spec, backend_path, args_path, result_path = argv
    with open(args_path, encoding="utf-8") as f:
        kwargs = json.load(f)
    result: dict[str, object]
    try:
        backend = load_backend(spec, json.loads(backend_path))
    except Exception:
        traceback.print_exc()
        result = {"error": f"cannot import the build backend {spec!r}"}
    else:
        function = getattr(backend, hook, None)
        if function is None and hook in OPTIONAL_HOOKS:
            result = {"missing": True, "return": OPTIONAL_HOOKS[hook]}
        elif function is None:
            result = {"error": f"the build backend {spec!r} has no {hook} hook"}
        else:
            try:
                result = {"return": function(**kwargs)}
            except Exception:
                traceback.print_exc()
                result = {"error": f"{spec}.{hook} raised an exception (its traceback is in the log)"}
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0 if "error" not in result else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
