# metalbench: the two commands a new user needs are `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup test demo lab clean extension test-browser bench-sim

# The wheel build hook (hatch-jupyter-builder) builds the JupyterLab extension with npm;
# an editable install does not need it: `make extension` builds and links it.
$(STAMP): export SKIP_JUPYTER_BUILDER = 1
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q -U pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)
	@$(MAKE) --no-print-directory extension || echo "warning: the JupyterLab extension did not build (needs Node >= 18 and npm); the Python package works without it"

test: $(STAMP)
	$(BIN)/python -m pytest -q --doctest-modules metalbench tests

demo: $(STAMP)
	$(BIN)/python -m metalbench.cli demo

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

clean:
	rm -rf $(VENV) reports

# The JupyterLab extension (extension/): Metal highlighting for %%metal cells and .metal
# files. Builds it with npm and links it into the venv's labextensions folder.
NPM ?= npm
LABEXT := $(VENV)/share/jupyter/labextensions/metalbench-lab

extension/node_modules/.package-lock.json: extension/package.json extension/package-lock.json
	cd extension && $(NPM) ci --no-audit --no-fund --loglevel=error

extension: $(STAMP) extension/node_modules/.package-lock.json
	cd extension && $(NPM) run build:prod
	rm -rf $(LABEXT) && mkdir -p $(dir $(LABEXT)) && ln -s $(abspath extension/labextension) $(LABEXT)
	$(BIN)/jupyter labextension list 2>&1 | grep "metalbench-lab"

# Browser tests: JupyterLab from the venv driven by playwright-core and Debian's chromium.
test-browser: extension
	PATH="$(abspath $(BIN)):$$PATH" $(NPM) --prefix extension run test:browser

# Simulator speed side by side with Numba's CUDA simulator (installs numba into
# benchmarks/.venv-numba on first use; numba is never a dependency of metalbench).
bench-sim: $(STAMP)
	$(BIN)/python benchmarks/sim_speed.py --compare-numba
