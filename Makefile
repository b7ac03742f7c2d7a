# Two commands for a fresh clone:  `make demo`  and  `make test`.  `make docs` builds the site.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
DEPS   := $(shell cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)
STAMP  := $(VENV)/.installed-$(DEPS)
DOCS_STAMP := $(VENV)/.installed-docs-$(DEPS)
LINTED := src tests benchmarks examples

.PHONY: install demo test lint data bench docs clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -c constraints.txt -e ".[test,plot,data,faiss]"
	touch $(STAMP)

$(DOCS_STAMP): $(STAMP)
	$(PIP) install --quiet -c constraints.txt -e ".[test,plot,data,faiss,docs]"
	touch $(DOCS_STAMP)

install: $(STAMP)

data: install
	$(BIN)/rankmetric data fetch all

demo: install
	$(BIN)/rankmetric demo

# ruff, then the layer contract of docs/architecture.md (no module imports from a layer above).
lint: install
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/test_layers.py

test: data lint
	$(BIN)/python -m pytest -q -ra

bench: data
	$(BIN)/rankmetric bench all

# The documentation site (Sphinx): guides, examples gallery, generated API reference.
# Warnings are errors; the site is written to docs/_build/html.
docs: $(DOCS_STAMP)
	$(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache docs/_build docs/generated docs/api.rst docs/examples.rst
