# Two commands on a fresh machine:
#   make run    generate the demo corpus and run the whole pipeline locally
#   make test   lint, check the import layers, run the whole test suite (CI)
# Both create .venv with Python 3.10 and install the lock first.
#   make unit   the fast inner loop: lint, layers and the tests not marked slow

SHELL := /bin/bash
# Explicit rules only: make's built-in ones would be searched for each of the
# sources `run` depends on, ~0.03 s of CPU of every command.
MAKEFLAGS += --no-builtin-rules
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-lock
DEMO := demo
PYTEST_ARGS ?=

# python3.10 on PATH (a pyenv shim counts only if it runs), else pyenv's copy.
# Looked up only when .venv is created (`=`, not `:=`): a pyenv shim takes
# ~0.4 s to answer, on every make command otherwise.
PYTHON310 = $(shell \
  if python3.10 -c 'import sys' >/dev/null 2>&1; then command -v python3.10; \
  else ls -d $$HOME/.pyenv/versions/3.10.*/bin/python3.10 2>/dev/null | sort -V | tail -1; fi)

.PHONY: run test unit lint venv bench compile clean

$(PY):
	@if [ -z "$(PYTHON310)" ]; then \
	  echo "error: Python 3.10 not found: put python3.10 on PATH or install it with 'pyenv install 3.10' (TFX 1.15 needs Python < 3.11)" >&2; exit 2; fi
	$(PYTHON310) -m venv $(VENV)

# Bytecode is compiled at install time: with PYTHONDONTWRITEBYTECODE set (as
# on these machines) every process would otherwise recompile TensorFlow's
# sources, doubling each `import tensorflow`.
# The skip-gram CPU ops are compiled here, once per machine, rather than in
# the first trainer run; without a compiler this says why and the trainer
# takes TensorFlow's slower ops.
$(STAMP): requirements.txt | $(PY)
	$(PY) -m pip install --quiet 'uv==0.13.*'
	$(VENV)/bin/uv pip install --python $(PY) --quiet --compile-bytecode \
	  -r requirements.txt || $(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m tpu_embeddings.kernels.library 2>&1 >/dev/null | grep '^skip-gram' >&2 || true
	touch $(STAMP)

venv: $(STAMP)

# The project's own modules, compiled once per change: with
# PYTHONDONTWRITEBYTECODE set, each process would compile them again (~0.15 s
# of every run, and of each process an export starts).
PACKAGES := pipelines components tpu_embeddings
SOURCES := $(foreach p,$(PACKAGES),$(wildcard $(p)/*.py $(p)/*/*.py \
  $(p)/*/*/*.py $(p)/*/*/*/*.py))
COMPILED := build/.compiled-sources
$(COMPILED): $(SOURCES) | $(STAMP)
	@$(PY) -m compileall -q $(PACKAGES)
	@mkdir -p $(@D) && touch $@

# Huge pages for the run's table (tpu_embeddings/core/huge_pages.py), set here
# so that the CLI need not restart its interpreter to set them.
run: export GLIBC_TUNABLES ?= glibc.malloc.hugetlb=1
run: $(STAMP) $(COMPILED)
	@if [ ! -d $(DEMO)/data ]; then $(PY) -m pipelines demo-data --out $(DEMO)/data --spans 2; fi
	$(PY) -m pipelines run --data $(DEMO)/data --home $(DEMO)/home

# The code's style (ruff) and its layers (import-linter), as pyproject.toml
# configures them.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# Two workers, a test module each at a time: most tests wait on subprocesses
# and files as much as they compute. Modules go out in the order
# tests/conftest.py sorts them (long ones first), not by their test counts.
# Bytecode is written while the tests run (TESTS_ENV): with
# PYTHONDONTWRITEBYTECODE set, pytest would rewrite every test module's
# asserts on each run, and each of the ~130 Python processes the tests start
# would compile what it imports of the project, the tests' helpers and, in
# the newest TensorFlow's environment, TensorFlow.
TESTS_ENV := PYTHONDONTWRITEBYTECODE=
test: lint
	@$(TESTS_ENV) $(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests" >&2; fi; exit $$rc

unit: lint
	$(TESTS_ENV) $(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder -m "not slow" $(PYTEST_ARGS)

bench: $(STAMP)
	@for b in benchmarks/[a-z]*.py; do m=$$(basename $$b .py); echo "== $$m"; \
	  $(PY) -m benchmarks.$$m || exit 1; done

compile: $(STAMP)
	$(PY) -m pipelines compile --output kubeflow/pipeline.yaml --image $${IMAGE:-tpu-embeddings:latest} --pipeline-root $${PIPELINE_ROOT:-gs://YOUR_BUCKET/tfx}

clean:
	rm -rf $(DEMO)
