"""The version names the file format: its minor number is the format version the package
writes (``0.F.P``: F = :data:`tablebase.storage.writer.FORMAT_VERSION`, P = releases without a
format change; CHANGELOG.md's header), and the installed version is the one in
``pyproject.toml``."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import tablebase
from tablebase.storage.writer import FORMAT_VERSION

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def release(version: str) -> tuple[int, int, int]:
    """``(major, minor, patch)`` of a version such as ``0.5.0`` (AssertionError otherwise)."""
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", version)
    assert m, f"version {version!r} is not MAJOR.MINOR.PATCH"
    return int(m[1]), int(m[2]), int(m[3])


def test_minor_version_is_the_format_version():
    _, minor, _ = release(tablebase.__version__)
    assert minor == FORMAT_VERSION, (
        f"version {tablebase.__version__} writes format {FORMAT_VERSION}: a format change "
        f"sets the version to 0.{FORMAT_VERSION}.0 (pyproject.toml, CHANGELOG.md)"
    )


def test_installed_version_is_the_project_version():
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["version"]
    assert tablebase.__version__ == declared, (
        f"installed {tablebase.__version__}, pyproject.toml says {declared}: reinstall "
        "(make .venv/.installed)"
    )
