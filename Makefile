# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
MIN_VENV := .venv-min
PYTEST := LITELLM_LOCAL_MODEL_COST_MAP=True $(PY) -m pytest -q -n 2 --dist loadfile
# An editable install type checkers follow: a plain path entry (.pth) to the checkout, not an
# import hook, so mypy and pyright outside the repo see lcm_lab's types (tests/test_install.py).
EDITABLE := --config-settings editable_mode=compat

.PHONY: setup demo test test-min lint typecheck bench clean browser notebook-filter

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[notebooks,test]' $(EDITABLE)
	touch $(STAMP)

setup: $(STAMP) notebook-filter

# Strip notebook outputs on commit (JupyterLab autosaves outputs into the tracked notebooks):
# configure the nbstripout filter that .gitattributes names. Only in a plain git checkout: without
# git, outside a checkout, or in a linked worktree (whose config is shared with other worktrees)
# it says so and does nothing.
notebook-filter: $(STAMP)
	@if ! command -v git >/dev/null 2>&1 || ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		echo "not a git checkout: nbstripout filter not configured"; \
	elif [ "$$(git rev-parse --git-dir)" != "$$(git rev-parse --git-common-dir)" ]; then \
		echo "linked git worktree: configure nbstripout in the main checkout (.venv/bin/nbstripout --install)"; \
	else $(VENV)/bin/nbstripout --install && echo "nbstripout git filter configured (see .gitattributes)"; fi

demo: setup
	$(VENV)/bin/lcm-lab demo

# Headless Chromium for the report browser test (Debian package; Playwright never downloads one).
# Installed only where that is possible without asking: as root on a Debian-like Linux. Elsewhere
# the browser test is skipped and says how to enable it.
browser:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif [ "$$(uname -s)" = Linux ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update && apt-get install -y chromium; \
	else echo "chromium not found: the browser test will be skipped (install chromium, e.g. sudo apt-get install chromium, to run it)"; fi

test: setup browser
	$(PYTEST)

# The lowest supported versions of the core stack (constraints-min.txt), in their own venv:
# the suite without notebooks and the browser (those need the notebook extra, not the core).
test-min:
	test -x $(MIN_VENV)/bin/python || $(PYTHON) -m venv $(MIN_VENV)
	$(MIN_VENV)/bin/python -m pip install -q --upgrade pip
	$(MIN_VENV)/bin/python -m pip install -q -e '.[test]' $(EDITABLE) -c constraints-min.txt
	LITELLM_LOCAL_MODEL_COST_MAP=True $(MIN_VENV)/bin/python -m pytest -q -n 2 --dist loadfile \
		-m "not browser" --ignore=tests/test_notebooks.py --ignore=tests/test_types.py -p no:cacheprovider

lint: setup
	$(VENV)/bin/ruff check lcm_lab tests benchmarks

typecheck: setup
	$(VENV)/bin/mypy

bench: setup
	LITELLM_LOCAL_MODEL_COST_MAP=True $(PY) -m benchmarks.run_all

clean:
	rm -rf $(VENV) $(MIN_VENV) .lcm_lab .pytest_cache .mypy_cache
