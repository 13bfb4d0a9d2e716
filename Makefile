# Everything installs into .venv from uv.lock; uv itself is pinned and bootstrapped into .tools.
SHELL := /bin/bash
PYTHON ?= python3.11
UV_VERSION := 0.13.8
UV := .tools/bin/uv
VENV := .venv
PY := $(VENV)/bin/python
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(abspath $(VENV))

.PHONY: venv browser test test-fast lint format typecheck docs screenshots demo emulator \
	emulator-wheel bench reliability clean dist \
	constraints constraints-check stack stack-celery stack-down

$(UV):
	@$(PYTHON) -m venv .tools
	@.tools/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# Silent unless it fails: uv's list of installed packages goes to out/logs/uv-sync.log, which is
# printed only when the sync fails.
$(VENV)/.synced: $(UV) uv.lock pyproject.toml emulator/pyproject.toml
	@mkdir -p out/logs
	@$(UV) sync --frozen --python $(PYTHON) --extra s3 >out/logs/uv-sync.log 2>&1 \
		|| { cat out/logs/uv-sync.log; echo "uv sync failed (log: out/logs/uv-sync.log)"; exit 1; }
	@touch $@

venv: $(VENV)/.synced

## make browser: Debian's Chromium for the docs site's check and screenshots (apt-get, as root;
## nothing to do when it is installed).
browser: venv
	$(PY) -m devtools.browser install

## make test: lint, type check, the docs build, pip resolving with the constraints file, then the
## whole test suite (unit, integration, real Airflow runs, every example of the README and docs,
## every page of the built site in a headless browser).
test: venv browser
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(MAKE) --no-print-directory docs
	$(MAKE) --no-print-directory constraints-check
	$(VENV)/bin/pytest -n 2 --dist loadscope -q -ra --durations=15

## make test-fast: the suite without the slow real-Airflow and large-stream tests.
test-fast: venv
	$(VENV)/bin/pytest -n 2 --dist loadscope -q -m "not slow"

## make docs: the documentation site into $(DOCS_OUT)/html (any warning fails the build; figures are
## drawn from the code and the emulator into docs/_generated/, which git ignores). It writes no
## file git tracks (tests/docs/test_clean_tree.py checks), so neither does `make test`.
DOCS_OUT ?= out/docs
docs: venv
	rm -rf $(DOCS_OUT)
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html -d $(DOCS_OUT)/doctrees docs $(DOCS_OUT)/html

## make screenshots: the docs build, then the pages docs/development.md shows photographed anew
## into docs/_static/screenshots/ (tracked: commit them with a change that alters those pages).
screenshots: docs browser
	$(PY) -m devtools.docs_site screenshots $(DOCS_OUT)/html docs/_static/screenshots

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: venv
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

typecheck: venv
	$(VENV)/bin/mypy

## make demo: emulator + a real `airflow dags test` of the example pipeline, output under out/demo.
demo: venv
	@$(PY) -m devtools.demo

## make emulator: serve the emulator on 127.0.0.1:4005 until Ctrl-C.
emulator: venv
	$(PY) -m analytics_emulator --port 4005

## make emulator-wheel: the emulator's own wheel (analytics-emulator, with its pytest plugin) into
## out/dist, to install where the provider runs its DAG tests: `pip install out/dist/analytics_emulator-*.whl`.
emulator-wheel: $(UV)
	$(UV) build emulator --wheel --out-dir out/dist

## make dist: the release's artefacts into out/dist: the provider's wheel and sdist, and the
## emulator's wheel (its own distribution, for where DAG tests run; never needed on workers).
dist: $(UV)
	rm -rf out/dist
	$(UV) build --package airflow-provider-analytics --wheel --sdist --out-dir out/dist
	$(UV) build emulator --wheel --out-dir out/dist
	@ls -1 out/dist

## make bench: the benchmarks under benchmarks/ (prints figures; takes minutes).
bench: venv
	$(PY) benchmarks/cohort_export.py
	$(PY) benchmarks/stage_times.py
	$(PY) benchmarks/cohort_shards.py
	$(PY) benchmarks/cohort_shards_celery.py
	$(PY) benchmarks/flatten_reports.py
	$(PY) benchmarks/load_exports.py
	$(PY) benchmarks/small_calls.py
	$(PY) benchmarks/import_time.py
	$(PY) benchmarks/emulator_scale.py

## make reliability: fault matrix, bad input, fuzzing, secrets and load tests, then both load
## benchmarks at full size (the hook variant only reports); figures under out/reliability, then
## docs/reliability.md written from them (the only target that rewrites that page; `make test`
## runs tests/reliability without collecting figures and writes nothing).
reliability: venv
	rm -rf out/reliability
	RELIABILITY_RESULTS_DIR=out/reliability $(VENV)/bin/pytest -n 2 --dist loadscope -q tests/reliability
	$(PY) benchmarks/load_exports.py --json out/reliability/load_exports.json
	$(PY) benchmarks/load_exports.py --via hook --rss-target 0 --json out/reliability/load_exports_hook.json
	$(PY) benchmarks/small_calls.py --json out/reliability/small_calls.json
	$(PY) -m devtools.reliability_report out/reliability docs/reliability.md

## make constraints: regenerate constraints-3.11.txt from uv.lock (after `uv lock`).
constraints: venv
	$(PY) -m devtools.constraints

## make constraints-check: the file matches uv.lock, and pip resolves .[s3,iceberg,pandas,progress,openlineage]
## with it, every package it would install pinned (`pip install --dry-run --report` in a throwaway
## venv; needs the package index).
constraints-check: venv
	$(PY) -m devtools.constraints --check
	$(PY) -m devtools.constraints --dry-run

## make stack: PostgreSQL, the emulator, api-server (127.0.0.1:8080), scheduler, dag-processor and
## triggerer with the LocalExecutor, example DAGs unpaused, the pool analytics_platform (4 slots);
## state and output under out/stack/.
stack: venv
	$(PY) -m devtools.stack up --executor local

## make stack-celery: the same with the CeleryExecutor, Redis as broker and two Celery workers.
stack-celery: venv
	$(PY) -m devtools.stack up --executor celery

## make stack-down: stop every process either stack target started (by pid).
stack-down:
	$(PY) -m devtools.stack down

clean:
	rm -rf $(VENV) .tools out .pytest_cache .mypy_cache .ruff_cache
