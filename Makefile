# The two commands from the README: `make demo` and `make test`. Both install what is missing.
SHELL := /bin/bash
PY := .venv/bin/python
export PYTHONUNBUFFERED := 1

.PHONY: install demo demo-users demo-soak test soak lint bench loadtest lighthouse screenshots clean

install:
	bash scripts/bootstrap.sh

demo: install
	$(PY) -m scripts.demo

# New passwords for the demo users of a running (or past) `make demo`, and where its console is.
demo-users: install
	DJANGO_SETTINGS_MODULE=config.settings.dev OPSDASH_VAR_DIR=$${DEMO_VAR_DIR:-$(CURDIR)/var/demo} \
	  $(PY) manage.py demo_users --demo

# The demo's workload headless for DURATION (e.g. 30m, 2m): fails on any alert that no
# scheduled demo incident explains; the report (var/soak/report.txt) lists every alert and
# its cause (scripts/demo_soak.py). Not part of `make test`.
DURATION ?= 30m
demo-soak: install
	$(PY) -m scripts.demo_soak --duration $(DURATION)

# TEST_WORKERS pytest-xdist workers (TEST_WORKERS=0: one process), dealt whole modules, the
# Spark ones first (tests/conftest.py). (--dist loadgroup: its xdist_group marks have no
# effect with pytest 9.2, whose items no longer carry the nodeid xdist 3.8 rewrites.)
TEST_WORKERS ?= 2
test: install
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# The nothing-is-lost model checker (tests/faults/test_nothing_lost_model.py) at length:
# MODEL_HISTORIES random histories of at most MODEL_STEPS steps (make test runs 200).
soak: install
	MODEL_HISTORIES=$${MODEL_HISTORIES:-10000} MODEL_STEPS=$${MODEL_STEPS:-50} \
	  $(PY) -m pytest tests/faults/test_nothing_lost_model.py -q $(PYTEST_ARGS)

lint: install
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy
	PYTHONPATH=. .venv/bin/lint-imports

bench: install
	$(PY) -m bench $(if $(ONLY),--only $(ONLY),) $(BENCH_ARGS)

# 50 users against gunicorn with production settings (wrk from Debian's package)
loadtest: install
	@command -v wrk >/dev/null || apt-get install -y -q wrk
	$(PY) -m bench.loadtest $(LOADTEST_ARGS)

# Lighthouse scores of the main pages under production settings (a measurement, not a test).
lighthouse: install
	bash scripts/lighthouse.sh

# The README's screenshots (docs/img), taken by the browser suite (tests/browser/test_screenshots.py)
# from demo-like data; optipng (Debian's package, optional) shrinks them losslessly.
SCREENSHOTS := overview topic messages dead-letters timeline retention leases topic-phone
screenshots: install
	SCREENSHOTS_DIR=$(CURDIR)/docs/img $(PY) -m pytest tests/browser/test_screenshots.py -q -p no:xdist $(PYTEST_ARGS)
	@if command -v optipng >/dev/null; then optipng -quiet -o2 -strip all $(SCREENSHOTS:%=docs/img/%.png); \
	  else echo "screenshots: optipng is not installed, the PNGs stay as Chromium wrote them"; fi

clean:
	rm -rf var .pytest_cache .mypy_cache .ruff_cache
