"""``python -m tablebase.cli``: the ``tablebase`` command."""

from tablebase.cli.main import main

main()
