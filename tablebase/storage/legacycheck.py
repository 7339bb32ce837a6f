"""Run as a script in a child process: parse version 1 or 2 slice files' metadata.

``python legacycheck.py`` reads one file path per line of stdin (a JSON string), opens the
file with h5py and reads everything a reader reads before the data (every attribute of the
file and its datasets, each dataset's type, shape, filters and chunk index), and answers one
line: ``ok``, or the error. A damaged file may instead hang or crash the HDF5 library: the
parent (:func:`tablebase.storage.integrity.check_legacy`) gives each answer a time limit,
reads a crash from the end of the output, and starts a new child for the next file. Imports
nothing of the package, so it starts quickly.
"""

from __future__ import annotations

import sys


def parse(path: str) -> None:
    """Read the file's metadata as the readers do (any damage raises)."""
    import h5py

    with h5py.File(path, "r") as f:
        for _, v in f.attrs.items():
            _ = v
        for name in f:
            ds = f[name]
            for _, v in ds.attrs.items():
                _ = v
            _ = ds.dtype, ds.shape, ds.chunks
            plist = ds.id.get_create_plist()
            for i in range(plist.get_nfilters()):
                plist.get_filter(i)
            if ds.chunks is not None:
                for i in range(ds.id.get_num_chunks()):
                    ds.id.get_chunk_info(i)
            ds.id.get_storage_size()


def main() -> None:
    import json

    for line in sys.stdin:
        try:
            parse(json.loads(line))
            answer = "ok"
        except Exception as e:  # noqa: BLE001 - any error of the library is the file's damage
            text = str(e).strip().splitlines()[0] if str(e).strip() else ""
            answer = f"{type(e).__name__}: {text}"
        print(answer, flush=True)


if __name__ == "__main__":
    main()
