"""What the running generator is: the package version and the identity of its sources.

:data:`__version__` comes from the installed package's metadata (``pyproject.toml``), so it
is never a second copy to keep in step. :func:`build_identity` adds the digest of the
project's Python sources (:func:`tablebase.jitcache.source_digest`): it is written into every
slice file (``generator_version``) and compared by the Dask submitter with every worker's, so
two processes that would solve with different code never share a build.
"""

from __future__ import annotations

import functools
from importlib.metadata import version
from pathlib import Path

from tablebase.jitcache import source_digest

__version__: str = version("draughts-tablebase")


@functools.cache
def build_identity() -> str:
    """``<version>+src.<digest>``: the version and the digest of the sources in use."""
    return f"{__version__}+src.{source_digest(Path(__file__).resolve().parent.parent)}"
