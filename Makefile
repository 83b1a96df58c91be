# Each target creates .venv when missing and installs what it needs: nothing by hand.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-engines lint typecheck pytest fuzz bench serve clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m svc_frames.demo

test: lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check svc_frames tests tests_engines benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy --strict svc_frames

pytest: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider

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
	rm -rf $(VENV) demo-output .pytest_cache .mypy_cache .ruff_cache
