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

.PHONY: demo test test-all docs docs-build bench clean

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

clean:
	rm -rf $(VENV) results site .pytest_cache
