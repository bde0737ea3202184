# Commands for a fresh machine with only Python >= 3.10:
#   make demo   set up .venv with privdist alone and run the main job (a private fit on the shipped Adult data)
#   make test   set up .venv with the test, Ray and docs extras, build the docs strictly, run the fast suite (CI)
#   make docs   regenerate the generated pages of docs/ and build the site into site/ (strict)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_STAMP := $(VENV)/.installed-privdist
DEV_STAMP := $(VENV)/.installed-privdist-dev
export NO_MKDOCS_2_WARNING := 1

.PHONY: demo test test-all docs docs-build bench bench-utility clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# the demo needs privdist's own dependencies only (no Ray, no test or docs tools)
$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,ray,docs]'
	touch $@ $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/privdist fit adult --agents 10 --epsilon 1 --delta 1e-5 --evaluation --out results/demo

docs-build: $(DEV_STAMP)
	$(BIN)/mkdocs build --strict --quiet

docs: $(DEV_STAMP)
	$(BIN)/python tools/gen_docs.py
	$(BIN)/mkdocs build --strict

test: docs-build
	$(BIN)/python -m pytest -m "not slow" -q

test-all: docs-build
	$(BIN)/python -m pytest -q

bench: $(DEV_STAMP)
	$(BIN)/python benchmarks/run.py --json results/benchmarks.json

# The utility benchmark with its diffprivlib column: diffprivlib 0.6.6 does not import beside scikit-learn >= 1.8,
# so it runs in its own environment (scikit-learn < 1.8), apart from the project's .venv.
DPL_VENV ?= .venv-diffprivlib
bench-utility:
	test -x $(DPL_VENV)/bin/python || $(PYTHON) -m venv $(DPL_VENV)
	$(DPL_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[bench]' 'scikit-learn>=1.5,<1.8' 'diffprivlib==0.6.6'
	$(DPL_VENV)/bin/python benchmarks/bench_utility.py --page docs/benchmarks.md --readme README.md $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(DPL_VENV) results site .pytest_cache
