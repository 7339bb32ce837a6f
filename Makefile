# The two README commands: `make run` (main job on the embedded default) and `make test`.
# `make test-slow` runs the slower tier (deep perft, larger databases, process-level faults,
# the browser); CI (`.ci/run`) runs both tiers. The quick tier runs in TEST_JOBS worker
# processes (pytest-xdist, a test file per worker at a time so that module fixtures are
# made once), and so does the slow tier; `make test TEST_JOBS=0` runs it in one process.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_JOBS ?= auto
VARIANTS := international english russian brazilian frisian

.PHONY: run test test-slow lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,peers,cluster,plot]'
	$(BIN)/tablebase compile $(foreach v,$(VARIANTS),--variant $(v))  # kernels, compiled once
	$(BIN)/adjudicator compile
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/tablebase perft --variant international --depth 6
	$(BIN)/tablebase moves --variant international "W:W31-50:B1-20"
	$(BIN)/tablebase generate --variant international --pieces 4 --db data/international
	$(BIN)/tablebase probe --variant international --db data/international --moves \
		"W:W21:B3,4" "W:WK38:B4,18" "W:W33:B2" "B:WK1,K7:BK50"
	$(BIN)/adjudicator rule --db data/international data/sample.pdn

lint: $(STAMP)
	$(BIN)/ruff check tablebase adjudicator scripts tests
	$(BIN)/ruff format --check tablebase adjudicator scripts tests
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -q --durations=15 -n $(TEST_JOBS) --dist loadfile

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q --durations=15 -m slow -n $(TEST_JOBS) --dist loadfile

clean:
	rm -rf $(VENV)
