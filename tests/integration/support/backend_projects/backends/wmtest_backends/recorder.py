"""setuptools.build_meta, recording every hook call.

Each call appends one JSON line to the file named by $WMTEST_RECORD (when set): the hook, the
config_settings it was given, the CUDA major of the build (WHEELMERGE_BUILD_CUDA_MAJOR), the
working directory, and where this module and setuptools were imported from (which environment
the hook ran in). Settings whose key starts with "rec-" are this backend's own and do not reach
setuptools. Every hook setuptools has is offered, build_editable included.
"""

import json
import os

import setuptools
from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403 - the hooks not wrapped below


def _record(hook, config_settings):
    path = os.environ.get("WMTEST_RECORD")
    if path:
        line = json.dumps({"hook": hook, "config_settings": config_settings,
                           "major": os.environ.get("WHEELMERGE_BUILD_CUDA_MAJOR"), "cwd": os.getcwd(),
                           "backend_file": __file__, "setuptools_file": setuptools.__file__})
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def _setuptools_settings(config_settings):
    kept = {k: v for k, v in (config_settings or {}).items() if not k.startswith("rec-")}
    return kept or None


def get_requires_for_build_wheel(config_settings=None):
    _record("get_requires_for_build_wheel", config_settings)
    return _setuptools.get_requires_for_build_wheel(_setuptools_settings(config_settings))


def get_requires_for_build_sdist(config_settings=None):
    _record("get_requires_for_build_sdist", config_settings)
    return _setuptools.get_requires_for_build_sdist(_setuptools_settings(config_settings))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _record("build_wheel", config_settings)
    return _setuptools.build_wheel(wheel_directory, _setuptools_settings(config_settings), metadata_directory)


def build_sdist(sdist_directory, config_settings=None):
    _record("build_sdist", config_settings)
    return _setuptools.build_sdist(sdist_directory, _setuptools_settings(config_settings))


def get_requires_for_build_editable(config_settings=None):
    _record("get_requires_for_build_editable", config_settings)
    return _setuptools.get_requires_for_build_editable(_setuptools_settings(config_settings))


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    _record("prepare_metadata_for_build_editable", config_settings)
    return _setuptools.prepare_metadata_for_build_editable(metadata_directory, _setuptools_settings(config_settings))


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _record("build_editable", config_settings)
    return _setuptools.build_editable(wheel_directory, _setuptools_settings(config_settings), metadata_directory)
