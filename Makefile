# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: setup demo test lint bench clean browser

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[notebooks,test]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(VENV)/bin/lcm-lab demo

# Headless Chromium for the report browser test (Debian package; Playwright never downloads one).
browser:
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)

test: setup browser
	LITELLM_LOCAL_MODEL_COST_MAP=True $(PY) -m pytest -q -n 2 --dist loadfile

lint: setup
	$(VENV)/bin/ruff check lcm_lab tests benchmarks

bench: setup
	LITELLM_LOCAL_MODEL_COST_MAP=True $(PY) -m benchmarks.run_all

clean:
	rm -rf $(VENV) .lcm_lab .pytest_cache
