# Two commands for a fresh machine with only Python >= 3.10:
#   make demo   set up .venv and run the main job (a private fit on the shipped Adult data, 10 parties, epsilon 1)
#   make test   set up .venv and run the test suite (what CI runs)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-privdist

.PHONY: demo test test-all bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,ray]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/privdist fit adult --agents 10 --epsilon 1 --delta 1e-5 --evaluation --out results/demo

test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" -q

test-all: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py --json results/benchmarks.json

clean:
	rm -rf $(VENV) results .pytest_cache
