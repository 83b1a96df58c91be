# Each target creates .venv when missing and installs what it needs: nothing by hand.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
COMMA := ,
# Python writes bytecode in every target even where PYTHONDONTWRITEBYTECODE is set (CI, this
# machine): without it every process (each test worker, each CLI run, notebook kernel,
# decoder helper the tests start) compiles svc_frames and site-packages again, and pytest
# rewrites the asserts of every test module in every worker
unexport PYTHONDONTWRITEBYTECODE
STAMP := $(VENV)/.installed

.PHONY: demo test test-browser test-engines test-postgres lint typecheck bytecode pytest pytest-compiled fuzz bench serve clean

# uv installs the same packages as pip (same pip freeze) in a tenth of the time (8 s instead
# of 75 s), pip among them for whoever uses .venv/bin/pip; the venv starts without pip
# (ensurepip alone takes 7 s) and gets uv from this machine's pip. Where uv cannot be had:
# ensurepip, then pip. No bytecode is compiled at install (all of site-packages: 30 s of
# CPU): `make test` writes the bytecode of what it imports.
INSTALL = if test -x $(BIN)/uv || $(PY) -m pip --python $(BIN)/python install --quiet uv; then \
	  $(BIN)/uv pip install --quiet --python $(BIN)/python -e '$(1)' pip; \
	else $(BIN)/python -m ensurepip --upgrade --default-pip >/dev/null \
	  && $(BIN)/python -m pip install --quiet -e '$(1)'; fi

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv --without-pip $(VENV)
	$(call INSTALL,.[dev])
	touch $(STAMP)

# the browser extra (JupyterLab, playwright) is kept out of the .[dev] install of make test
BROWSER_STAMP := $(VENV)/.installed-browser
$(BROWSER_STAMP): $(STAMP)
	$(call INSTALL,.[dev$(COMMA)browser])
	touch $(BROWSER_STAMP)

demo: $(STAMP)
	$(BIN)/python -m svc_frames.demo

# mypy keeps one core busy while the other writes the bytecode the test workers then read;
# the tests start as soon as it is written, beside mypy's last 20 s (after the bytecode, that
# core would otherwise wait for mypy alone)
test: $(STAMP)
	$(MAKE) --no-print-directory -j2 -O lint typecheck pytest-compiled

pytest-compiled: bytecode
	$(MAKE) --no-print-directory pytest

lint: $(STAMP)
	$(BIN)/ruff check svc_frames tests tests_browser tests_engines tests_postgres benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy --strict svc_frames

# Plugins are named, not found by entry point: an autoloaded plugin's whole distribution
# gets its asserts rewritten in every worker (schemathesis is used as a library,
# tests/test_server_fuzz.py)
PYTEST = PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 $(BIN)/python -m pytest -q \
	-p no:cacheprovider -p xdist.plugin -p pytest_timeout -p _hypothesis_pytestplugin

# the bytecode of svc_frames, of the test modules (asserts rewritten) and of what collecting
# them imports, written once before the workers start; and of the packages only the tests'
# children (notebook kernels, CLI runs) and the tests' own later imports load, which
# several workers otherwise compile at once at the start (a fresh clone's pytest took 50 s
# longer than the same clone's second run); beside mypy, which keeps the other core busy
WARM_PACKAGES := polars openpyxl graphql schemathesis debugpy matplotlib IPython hypothesis \
	PIL anyio nbformat nbclient ipywidgets werkzeug jupyter_client tornado ipykernel zmq \
	httpx jinja2 traitlets
export WARM_BYTECODE := import compileall, pathlib, sys, sysconfig; \
	sp = pathlib.Path(sysconfig.get_path("purelib")); \
	[compileall.compile_dir(str(sp / p), quiet=2, workers=0) for p in sys.argv[1:] if (sp / p).is_dir()]
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q svc_frames
	$(BIN)/python -c "$$WARM_BYTECODE" $(WARM_PACKAGES)
	$(PYTEST) --collect-only >$(VENV)/collected.txt || { cat $(VENV)/collected.txt; exit 1; }

# eight workers on two cores: most of a test's wall time is waiting (the write guard's
# check after its window, the hosted pace, subprocesses starting, notebook kernels), which
# the other workers fill (six left a quarter of the CPU idle: 307 s against 250 s with
# eight, measured in one sitting on a fresh clone); a worker that runs out of tests takes
# some of another's queue (worksteal), so none is left running alone at the end; every
# test starts its own local service or uses its worker's one
PYTEST_WORKERS ?= 8
pytest: $(STAMP)
	$(PYTEST) -n $(PYTEST_WORKERS) --dist worksteal

# JupyterLab and Notebook 7 on 127.0.0.1 with the project's kernel, driven by playwright in
# Debian's Chromium (installed with apt when missing; playwright downloads no browser):
# the review widget as a person uses it (JupyterLab light and dark, Notebook 7), and every
# notebook run in JupyterLab (tests_browser/)
test-browser: $(BROWSER_STAMP)
	test -x /usr/bin/chromium || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }
	$(BIN)/python -m pytest -q -p no:cacheprovider tests_browser

# Spark and Dask read saved frames and push their edits back (needs Java 17: `java -version`)
ENGINES_STAMP := $(VENV)/.installed-engines
$(ENGINES_STAMP): $(STAMP)
	$(call INSTALL,.[dev$(COMMA)engines])
	touch $(ENGINES_STAMP)

test-engines: $(ENGINES_STAMP)
	SPARK_LOCAL_IP=127.0.0.1 $(BIN)/python -m pytest -q -p no:cacheprovider tests_engines

# the mirror against a real PostgreSQL 15 (Debian's server, installed with apt when
# missing): tests_postgres/conftest.py starts a cluster of its own in a temporary directory
# (as the postgres user when run as root: the server refuses root; a Unix socket in that
# directory, no TCP port), runs the tests and stops it
PG_BIN ?= /usr/lib/postgresql/15/bin
test-postgres: $(STAMP)
	test -x $(PG_BIN)/initdb || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql; }
	PG_BIN=$(PG_BIN) $(BIN)/python -m pytest -q -p no:cacheprovider tests_postgres

# the OpenAPI fuzzing of the local service on a longer budget (make test runs a short one)
fuzz: $(STAMP)
	SVC_FUZZ_EXAMPLES=$${SVC_FUZZ_EXAMPLES:-250} $(PYTEST) tests/test_server_fuzz.py

# cold child processes are timed: all of site-packages compiled first, as pip's install did
bench: $(STAMP)
	$(BIN)/python -m compileall -q -j0 $$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))') >/dev/null
	$(BIN)/python -m benchmarks

serve: $(STAMP)
	$(BIN)/svc-frames serve --demo

clean:
	rm -rf $(VENV) demo-output build/browser .pytest_cache .mypy_cache .ruff_cache
