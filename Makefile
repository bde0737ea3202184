# Two commands for a fresh machine with only Python >= 3.10:
#   make demo   set up .venv and run the main job (a private fit on the shipped Adult data, 10 parties, epsilon 1)
#   make test   set up .venv and run the test suite (what CI runs)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-privdist

.PHONY: demo test test-all bench bench-utility clean

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

# The utility benchmark with its diffprivlib column: diffprivlib 0.6.6 does not import beside scikit-learn >= 1.8,
# so it runs in its own environment (scikit-learn < 1.8), apart from the project's .venv.
DPL_VENV ?= .venv-diffprivlib
bench-utility:
	test -x $(DPL_VENV)/bin/python || $(PYTHON) -m venv $(DPL_VENV)
	$(DPL_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e . 'scikit-learn>=1.5,<1.8' 'diffprivlib==0.6.6'
	$(DPL_VENV)/bin/python benchmarks/bench_utility.py --readme README.md $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(DPL_VENV) results .pytest_cache
