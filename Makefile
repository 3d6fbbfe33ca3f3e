# The two commands of the quick start: `make run` and `make test`.
VENV ?= .venv
BIN := $(VENV)/bin
DATA_DIR ?= .mailnode

.PHONY: setup run test typecheck

$(BIN)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

setup: $(BIN)/.installed

run: setup
	@$(BIN)/mailnode quickstart --data-dir $(DATA_DIR)
	$(BIN)/mailnode serve --data-dir $(DATA_DIR)

test: setup
	bash scripts/test

typecheck: setup
	$(BIN)/mypy
