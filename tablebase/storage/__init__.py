"""Storage and format: the slice files (:mod:`.files`), their chunked datasets
(:mod:`.chunkio`), the meaning of a stored value (:mod:`.values`), the compact win/draw/loss
part (:mod:`.wdl`) and copying a database (:mod:`.export`)."""
