"""Retrograde solving of one slice pair: over the whole pair (:mod:`.whole`), one men
configuration at a time (:mod:`.men`), with king runs (:mod:`.runs`); :mod:`.atomics` holds
the two machine operations the parallel passes need."""
