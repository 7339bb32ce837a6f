"""Storage and format: a slice file's names and parts (:mod:`.slicefile`), writing one
(:mod:`.writer`), reading one (:mod:`.reader`), checking parts and folders (:mod:`.checks`),
listing a folder's slice files (:mod:`.listing`), the header's digest (:mod:`.integrity`),
chunked datasets (:mod:`.chunkio`) and their group coding (:mod:`.groupcode`), the meaning
of a stored value (:mod:`.values`), the compact win/draw/loss part's encoding (:mod:`.wdl`),
and copying a database (:mod:`.export`)."""
