# Two commands on a fresh machine:
#   make run    generate the demo corpus and run the whole pipeline locally
#   make test   lint, check the import layers, run the whole test suite (CI)
# Both create .venv with Python 3.10 and install the lock first.
#   make unit   the fast inner loop: lint, layers and the tests not marked slow

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-lock
DEMO := demo
PYTEST_ARGS ?=

# python3.10 on PATH (a pyenv shim counts only if it runs), else pyenv's copy.
PYTHON310 := $(shell \
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

run: $(STAMP)
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
test: lint
	@$(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests" >&2; fi; exit $$rc

unit: lint
	$(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder -m "not slow" $(PYTEST_ARGS)

bench: $(STAMP)
	@for b in benchmarks/[a-z]*.py; do m=$$(basename $$b .py); echo "== $$m"; \
	  $(PY) -m benchmarks.$$m || exit 1; done

compile: $(STAMP)
	$(PY) -m pipelines compile --output kubeflow/pipeline.yaml --image $${IMAGE:-tpu-embeddings:latest} --pipeline-root $${PIPELINE_ROOT:-gs://YOUR_BUCKET/tfx}

clean:
	rm -rf $(DEMO)
