# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: setup demo test lint bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[notebooks,test]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(VENV)/bin/lcm-lab demo

test: setup
	LITELLM_LOCAL_MODEL_COST_MAP=True $(PY) -m pytest -q -n 2 --dist loadfile

lint: setup
	$(VENV)/bin/ruff check lcm_lab tests benchmarks

bench: setup
	LITELLM_LOCAL_MODEL_COST_MAP=True $(PY) -m benchmarks.run_all

clean:
	rm -rf $(VENV) .lcm_lab .pytest_cache
