"""Maps the two halves of the import package: pure/ is metaharness.pure, shell/ is metaharness.shell,
and vectors/ ships as the package data metaharness.vectors."""

from setuptools import find_namespace_packages, setup

HALVES = {"metaharness.pure": "pure", "metaharness.shell": "shell", "metaharness.vectors": "vectors"}


def _packages(prefix: str, directory: str) -> list[str]:
    found = find_namespace_packages(directory, exclude=["*__pycache__*"])
    return [prefix, *(f"{prefix}.{name}" for name in found)]


setup(
    packages=[name for prefix, directory in HALVES.items() for name in _packages(prefix, directory)],
    package_dir=HALVES,
    package_data={"metaharness.vectors": ["**/*"]},
    include_package_data=True,
)
