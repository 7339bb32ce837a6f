"""Scan's endgame bitbases: the file format of the engine Scan 3.1, written and read here.

Scan (Fabien Letouzey's International and Frisian draughts engine) probes win/draw/loss
bitbases, one file per material, at ``data/bb<variant>/<pieces>/<name>`` under its working
folder. This package writes them from a database of ours and reads them back, one module per
concept (the format itself is specified in ``docs/SCAN.md``):

- :mod:`tablebase.scanbb.index` - Scan's material id and its dense index of positions;
- :mod:`tablebase.scanbb.codec` - the run-length bytes of a file's values;
- :mod:`tablebase.scanbb.files` - a folder of bitbase files: paths, writing, reading, probing;
- :mod:`tablebase.scanbb.export` - our database's win/draw/loss mapped onto Scan's index:
  the export and the comparison of a folder with a database.
"""
