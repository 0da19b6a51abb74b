"""A backend with the mandatory hooks only (setuptools underneath): no PEP 660 editable hooks and
no prepare_metadata_for_build_wheel."""

from setuptools import build_meta as _setuptools


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _setuptools.build_wheel(wheel_directory, config_settings)


def build_sdist(sdist_directory, config_settings=None):
    return _setuptools.build_sdist(sdist_directory, config_settings)


def get_requires_for_build_wheel(config_settings=None):
    return _setuptools.get_requires_for_build_wheel(config_settings)
