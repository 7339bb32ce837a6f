"""The ``tablebase`` command line: the commands (:mod:`.main`), their shared options and
helpers (:mod:`.common`); ``stats --plot`` draws with :mod:`.plot`."""

from tablebase.cli.main import main

__all__ = ["main"]
