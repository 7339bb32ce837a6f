"""The adjudication service: the HTTP API and the endgame explorer (:mod:`.app`)."""
