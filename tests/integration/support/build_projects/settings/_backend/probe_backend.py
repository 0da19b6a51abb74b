"""An in-tree PEP 517 backend: setuptools.build_meta, recording each hook's config_settings.

Every hook appends a record to .probe_calls.json in the build's directory; build_wheel writes
all records into settingsprobe/_settings.py before setuptools builds the wheel. Settings whose
key starts with "probe-" are this backend's own and are not passed on to setuptools:
probe-extra-requires (space-separated requirements) is added to get_requires_for_build_wheel's
answer, and build_wheel records what `import wheelmerge_itest_helper` gives.
"""

import json
import os
import sys
from pathlib import Path

import setuptools
from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403 - every other hook unchanged

CALLS = Path(".probe_calls.json")


def _record(hook, config_settings, **extra):
    calls = json.loads(CALLS.read_text()) if CALLS.exists() else []
    calls.append({
        "hook": hook,
        "config_settings": config_settings,
        "major": os.environ.get("WHEELMERGE_BUILD_CUDA_MAJOR"),
        "backend_file": __file__,
        "cwd": os.getcwd(),
        "sys_prefix": sys.prefix,
        "sys_base_prefix": sys.base_prefix,
        "virtual_env": os.environ.get("VIRTUAL_ENV"),
        "setuptools_version": setuptools.__version__,
        "setuptools_file": setuptools.__file__,
        **extra,
    })
    CALLS.write_text(json.dumps(calls))
    return calls


def _for_setuptools(config_settings):
    kept = {k: v for k, v in (config_settings or {}).items() if not k.startswith("probe-")}
    return kept or None


def get_requires_for_build_wheel(config_settings=None):
    _record("get_requires_for_build_wheel", config_settings)
    extra = (config_settings or {}).get("probe-extra-requires", "").split()
    return list(_setuptools.get_requires_for_build_wheel(_for_setuptools(config_settings))) + extra


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    try:
        import wheelmerge_itest_helper
        helper = wheelmerge_itest_helper.VALUE
    except ImportError:
        helper = None
    calls = _record("build_wheel", config_settings, helper=helper)
    Path("settingsprobe", "_settings.py").write_text(f"CALLS = {calls!r}\n")
    return _setuptools.build_wheel(wheel_directory, _for_setuptools(config_settings), metadata_directory)
