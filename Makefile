# Each target creates .venv when missing and installs what it needs: nothing by hand.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-browser test-engines lint typecheck pytest fuzz bench serve clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# the browser extra (JupyterLab, playwright) is kept out of the .[dev] install of make test
BROWSER_STAMP := $(VENV)/.installed-browser
$(BROWSER_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,browser]'
	touch $(BROWSER_STAMP)

demo: $(STAMP)
	$(BIN)/python -m svc_frames.demo

test: lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check svc_frames tests tests_browser tests_engines benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy --strict svc_frames

# four workers on two cores: a third of a test's time is spent waiting (the write guard's
# check after its window, the hosted pace, subprocesses starting), which the other workers
# fill; a worker that runs out of tests takes some of another's queue (worksteal), so none
# is left running alone at the end; every test starts its own local service or uses its
# worker's one
PYTEST_WORKERS ?= 4
pytest: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist worksteal

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
	$(BIN)/python -m pip install --quiet -e '.[dev,engines]'
	touch $(ENGINES_STAMP)

test-engines: $(ENGINES_STAMP)
	SPARK_LOCAL_IP=127.0.0.1 $(BIN)/python -m pytest -q -p no:cacheprovider tests_engines

# the OpenAPI fuzzing of the local service on a longer budget (make test runs a short one)
fuzz: $(STAMP)
	SVC_FUZZ_EXAMPLES=$${SVC_FUZZ_EXAMPLES:-250} $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_server_fuzz.py

bench: $(STAMP)
	$(BIN)/python -m benchmarks

serve: $(STAMP)
	$(BIN)/svc-frames serve --demo

clean:
	rm -rf $(VENV) demo-output build/browser .pytest_cache .mypy_cache .ruff_cache
