# Two commands for a fresh clone:  `make demo`  and  `make test`.  `make docs` builds the site.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
DEPS   := $(shell cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)
STAMP  := $(VENV)/.installed-$(DEPS)
DOCS_STAMP := $(VENV)/.installed-docs-$(DEPS)
LINTED := src tests benchmarks examples

.PHONY: install demo test lint data bench docs docs-browser clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -qq --upgrade pip
	$(PIP) install -qq -c constraints.txt -e ".[test,plot,data,faiss]"
	touch $(STAMP)

$(DOCS_STAMP): $(STAMP)
	$(PIP) install -qq -c constraints.txt -e ".[test,plot,data,faiss,docs]"
	touch $(DOCS_STAMP)

install: $(STAMP)

data: install
	@echo "rankmetric data fetch all -q  (the data sets into the cache; a minute the first time)"
	@$(BIN)/rankmetric data fetch all -q

demo: install
	$(BIN)/rankmetric demo

# ruff, then the layer contract of docs/architecture.md (no module imports from a layer above).
lint: install
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/test_layers.py

# The test suite (the 20 slowest tests reported), then every docstring example of the package
# run as a doctest (about 10 s); an example that teaches a deprecated call or stops before it
# converges fails.
test: data lint
	$(BIN)/python -m pytest -q -rfEs --durations=20
	$(BIN)/python -m pytest -q -rfEs --doctest-modules src/rankmetric \
		-W error::FutureWarning -W error::sklearn.exceptions.ConvergenceWarning

bench: data
	$(BIN)/rankmetric bench all

# The documentation site (Sphinx, PyData theme): landing page, user guide, the gallery (every
# script of examples/ runs at build time, so the fetched data sets come first), the API
# reference generated from __all__. Warnings are errors; the site is written to
# docs/_build/html, then every internal link, anchor and image of it is checked, no page may be
# blank, every example that draws a figure must show it, every API name that a code block of
# the landing, guide or method pages imports must link to its page, and the search must rank
# each term's defining page first ("mAP": the evaluation page) (docs/tools/check_site.py).
# `make docs-browser` adds screenshots in headless Chromium (apt-get install chromium) at 1280
# and 1920 px, the width of every code block against the text column, and the search run in
# the browser.
docs: data $(DOCS_STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html
	$(BIN)/python docs/tools/check_site.py docs/_build/html

docs-browser: docs
	$(BIN)/python docs/tools/screenshots.py docs/_build/html docs/_build/screenshots

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache docs/_build docs/generated docs/api.rst docs/examples.rst \
		docs/api docs/auto_examples docs/sg_execution_times.rst
