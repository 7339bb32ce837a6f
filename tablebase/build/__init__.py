"""Building a database: the pair task (:mod:`.task`), its scheduling on this machine
(:mod:`.schedule`) or a Dask cluster (:mod:`.cluster`), progress, the folder lock, the
errors a build reports (:mod:`.faults`) and verification (:mod:`.verify`)."""
