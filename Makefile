# Two commands for a fresh clone:  `make demo`  and  `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)

.PHONY: install demo test lint data bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -c constraints.txt -e ".[test,plot,data]"
	touch $(STAMP)

install: $(STAMP)

data: install
	$(BIN)/rankmetric data fetch all

demo: install
	$(BIN)/rankmetric demo

lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

test: data lint
	$(BIN)/python -m pytest -q -ra

bench: data
	$(BIN)/rankmetric bench all

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
