"""The ``tablebase`` command line (:mod:`.main`); ``stats --plot`` draws with :mod:`.plot`."""

from tablebase.cli.main import main

__all__ = ["main"]
