"""Retrograde solving of one slice pair: the skeleton that runs the passes
(:mod:`.skeleton`) with the kernels over the whole pair (:mod:`.whole`: the state words,
passes 1 and 3; :mod:`.levels`: the level passes and their schedule), one men
configuration at a time (:mod:`.men`, in bands out of core: :mod:`.bands`), with king runs
(:mod:`.runs`); the named records the kernels take (:mod:`.records`), a solved slice's
statistics (:mod:`.stats`), a task's memory model (:mod:`.memory`), and the two machine
operations the parallel passes need (:mod:`.atomics`)."""
