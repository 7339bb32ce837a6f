"""The adjudication service: the HTTP API and the endgame explorer.

Modules: :mod:`.settings` its limits and sizes (``ADJUDICATOR_*``), :mod:`.models` the
request and response models, :mod:`.service` the work behind the endpoints (probes,
rulings, the open databases), :mod:`.app` the FastAPI application (``create_app``), and
:mod:`.server` running it with uvicorn (``serve``).
"""
