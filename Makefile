# metalbench: the two commands a new user needs are `make demo` and `make test`.
PY ?= python3
# Extras for the editable install: MLX's CPU build (Linux; nothing extra on macOS) and the
# dev tools. On an NVIDIA machine: make setup EXTRAS=cuda,dev (one MLX build at a time).
EXTRAS ?= cpu,dev
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup test demo lab clean extension extension-if-node test-browser bench-sim wheel-test ci-macos-sim lint-workflows

# The wheel build hook (hatch-jupyter-builder) builds the JupyterLab extension with npm;
# an editable install does not need it: `make extension` builds and links it.
# pip runs without -q: the first install takes a minute or two and shows what it does.
$(STAMP): export SKIP_JUPYTER_BUILDER = 1
$(STAMP): pyproject.toml
	@echo "==> creating $(VENV) (Python venv) and upgrading pip"
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -U pip
	@echo "==> installing metalbench and its dev tools into $(VENV): pip install -e \".[$(EXTRAS)]\" (1-2 min the first time)"
	$(BIN)/python -m pip install --disable-pip-version-check -e ".[$(EXTRAS)]"
	touch $(STAMP)
	@echo "==> $(VENV) is ready"

setup: $(STAMP) extension-if-node

test: $(STAMP)
	$(BIN)/python -m pytest -q --doctest-modules metalbench tests

# demo and lab also build the JupyterLab extension (%%metal highlighting), once; without
# Node they warn and go on (the Python package and the panel work without it).
demo: $(STAMP) extension-if-node
	$(BIN)/python -m metalbench.cli demo

lab: $(STAMP) extension-if-node
	$(BIN)/jupyter lab notebooks/

clean:
	rm -rf $(VENV) reports extension/lib extension/labextension extension/tsconfig.tsbuildinfo

# The JupyterLab extension (extension/): Metal highlighting for %%metal cells and .metal
# files. Built with npm (only when its sources changed) and linked into the venv.
NPM ?= npm
LABEXT := $(VENV)/share/jupyter/labextensions/metalbench-lab
EXT_BUILT := extension/labextension/static/style.js
EXT_SRC := $(wildcard extension/src/*.ts extension/style/*) extension/package.json extension/tsconfig.json \
	extension/install.json extension/scripts/build-labextension.mjs

extension/node_modules/.package-lock.json: extension/package.json extension/package-lock.json
	@echo "==> installing the JupyterLab extension's npm packages (npm ci, about a minute the first time)"
	cd extension && $(NPM) ci --no-audit --no-fund --loglevel=error

$(EXT_BUILT): extension/node_modules/.package-lock.json $(EXT_SRC)
	@echo "==> building the JupyterLab extension (npm run build:prod)"
	cd extension && $(NPM) run build:prod

extension: $(STAMP) $(EXT_BUILT)
	rm -rf $(LABEXT) && mkdir -p $(dir $(LABEXT)) && ln -s $(abspath extension/labextension) $(LABEXT)
	$(BIN)/jupyter labextension list 2>&1 | grep "metalbench-lab"

extension-if-node: $(STAMP)
	@if command -v $(NPM) >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory extension || echo "warning: the JupyterLab extension did not build; %%metal cells work, without Metal highlighting"; \
	else \
	  echo "note: no npm (Node >= 18): skipping the JupyterLab extension; %%metal cells work, without Metal highlighting"; \
	fi

# Browser tests: JupyterLab from the venv driven by playwright-core and Debian's chromium.
test-browser: extension
	PATH="$(abspath $(BIN)):$$PATH" $(NPM) --prefix extension run test:browser

# Release check: sdist and wheel from a clean clone of HEAD, the wheel installed into a
# fresh venv, `metalbench demo` run outside the repository (.ci/wheel-test; a few minutes).
wheel-test: $(STAMP)
	PY=$(PY) BUILD_PY=$(abspath $(BIN)/python) bash .ci/wheel-test

# Simulator speed side by side with Numba's CUDA simulator (installs numba into
# benchmarks/.venv-numba on first use; numba is never a dependency of metalbench).
bench-sim: $(STAMP)
	$(BIN)/python benchmarks/sim_speed.py --compare-numba

# .github/workflows/macos.yml (Apple silicon, Metal): lint it (zizmor, a dev dependency),
# and run every command of it here with BACKEND=sim (its test suites in full)
lint-workflows: $(STAMP)
	$(BIN)/zizmor --offline .github/workflows/

ci-macos-sim: $(STAMP) lint-workflows
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python tests/test_benchmark_scripts.py
