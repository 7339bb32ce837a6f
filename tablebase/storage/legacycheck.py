"""Run as a script in a child process: parse a version 1 or 2 slice file's metadata.

``python legacycheck.py PATH`` opens the file with h5py and reads everything a reader reads
before the data (every attribute of the file and its datasets, each dataset's type, shape,
filters and chunk index), then exits 0; on an error it prints the error and exits 3. A
damaged file may instead hang or crash the HDF5 library: the parent
(:func:`tablebase.storage.integrity.check_legacy`) gives it a time limit and reads a crash
from the exit status. Imports nothing of the package, so it starts quickly.
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
    try:
        parse(sys.argv[1])
    except Exception as e:  # noqa: BLE001 - any error of the library is the file's damage
        print(f"{type(e).__name__}: {e}")
        sys.exit(3)


if __name__ == "__main__":
    main()
