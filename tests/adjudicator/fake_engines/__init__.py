"""Small fake engines for the match tests: a Hub engine (:mod:`hub_fake`) and a DXP engine
(:mod:`dxp_fake`), each playing legal moves until told to misbehave."""
