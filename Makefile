# The two commands of the quick start: `make run` and `make test`.
VENV ?= .venv
BIN := $(VENV)/bin
DATA_DIR ?= .mailnode

.PHONY: setup run test typecheck

# Each step says what it installs before it runs (the install takes about 40 s on a first run).
$(BIN)/.installed: pyproject.toml
	@echo "make setup: creating the virtual environment $(VENV) (python3 -m venv)"
	@python3 -m venv $(VENV)
	@echo "make setup: upgrading pip in $(VENV)"
	@$(BIN)/pip install -q --upgrade pip
	@echo "make setup: installing mailnode (editable) and its dependencies with the dev extra: $$(python3 -c \
	  'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
	  print(", ".join(sorted(d.split(">")[0].split("=")[0].split("[")[0].split("<")[0].strip() \
	  for d in p["dependencies"] + p["optional-dependencies"]["dev"])))')"
	@$(BIN)/pip install -q -e '.[dev]'
	@echo "make setup: done; $(VENV) is ready"
	@touch $@

setup: $(BIN)/.installed

run: setup
	@$(BIN)/mailnode quickstart --data-dir $(DATA_DIR)
	$(BIN)/mailnode serve --data-dir $(DATA_DIR)

test: setup
	bash scripts/test

typecheck: setup
	$(BIN)/mypy
