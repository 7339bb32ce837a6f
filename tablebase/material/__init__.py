"""Material and index: what a slice is (:mod:`.slices`) and how its positions are numbered
(:mod:`.index`)."""
