"""Building a database: the build (:mod:`.generate`: the pair tasks a database lacks, run
on this machine or a cluster), compiling the kernels ahead of it (:mod:`.warmup`), the pair
task (:mod:`.task`), its scheduling on this machine (:mod:`.schedule`) or a Dask cluster
(:mod:`.cluster`, :mod:`.clusterbands`, :mod:`.workertask`), pairs solved out of core
(:mod:`.outofcore`), progress (:mod:`.progress`), the folder lock (:mod:`.folderlock`), the
errors a build reports (:mod:`.faults`) and verification (:mod:`.verify`, :mod:`.sampled`)."""
