"""One name per module: a probe run inside an environment where a merged wheel is installed.

NVIDIA's merged cuda-core imports one module under two names (`cuda.core.cu13.system.typing`
and `cuda.core.system.typing`), so `isinstance` fails across them (NVIDIA/cuda-python#2023):
its builds are subpackages, importable by their own names. wheelmerge stores a build's files
side by side under labelled names that no import statement can name. The probe imports every
module Python's own walker (pkgutil.walk_packages) finds in the package and every module
its loaders' manifests name, then reports modules
held in sys.modules under two names, files loaded as two modules, and labelled names that
import.
"""

from __future__ import annotations

import json

PROBE = r"""
import importlib, json, os, pkgutil, sys
package, labels = sys.argv[1], set(json.loads(sys.argv[2]))
root = importlib.import_module(package)
base = os.path.realpath(os.path.dirname(root.__file__))
found, failed, labelled = [package], {}, []
def pieces(name):
    return {piece for part in name.split(".") for piece in part.split("_")} | set(name.split("."))
for info in pkgutil.walk_packages(root.__path__, package + ".", onerror=lambda name: failed.setdefault(name, "walk")):
    found.append(info.name)
    try:
        importlib.import_module(info.name)
    except Exception as error:
        failed[info.name] = f"{type(error).__name__}: {error}"
    else:
        if pieces(info.name) & labels:
            labelled.append(info.name)
# Modules stored as each build's labelled files are no names the walker sees: the loaders'
# manifests name them, and they are imported by those names.
for loader in [n for n in found if n.endswith("._wheelmerge")]:
    for modules in getattr(sys.modules.get(loader), "_MODULES", {}).values():
        for name in modules:
            if name not in found:
                found.append(name)
                try:
                    importlib.import_module(name)
                except Exception as error:
                    failed[name] = f"{type(error).__name__}: {error}"
by_object, by_file = {}, {}
for name, module in list(sys.modules.items()):
    path = getattr(module, "__file__", None)
    if module is None or not path or not os.path.realpath(path).startswith(base + os.sep):
        continue
    by_object.setdefault(id(module), []).append(name)
    by_file.setdefault(os.path.realpath(path), []).append(name)
print(json.dumps({"found": found, "failed": failed, "labelled_imported": labelled,
                  "two_names": sorted(sorted(v) for v in by_object.values() if len(v) > 1),
                  "one_file_two_modules": sorted(sorted(v) for v in by_file.values() if len(v) > 1)}))
"""


def one_name_report(run_python, package: str, labels: list[str]) -> dict:
    """The probe's report; RUN_PYTHON(*args) runs the environment's interpreter with them."""
    return json.loads(run_python("-c", PROBE, package, json.dumps(labels)).stdout)


def assert_one_name_per_module(report: dict, allowed_failures: set[str] = frozenset()) -> None:
    assert report["two_names"] == [], report["two_names"]
    assert report["one_file_two_modules"] == [], report["one_file_two_modules"]
    assert report["labelled_imported"] == [], report["labelled_imported"]
    assert set(report["failed"]) <= set(allowed_failures), report["failed"]
