# The two commands from the README: `make demo` and `make test`. Both install what is missing.
SHELL := /bin/bash
PY := .venv/bin/python
export PYTHONUNBUFFERED := 1

.PHONY: install demo test lint bench clean

install:
	bash scripts/bootstrap.sh

demo: install
	$(PY) -m scripts.demo

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

lint: install
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy
	PYTHONPATH=. .venv/bin/lint-imports

bench: install
	$(PY) -m bench $(if $(ONLY),--only $(ONLY),) $(BENCH_ARGS)

clean:
	rm -rf var .pytest_cache .mypy_cache .ruff_cache
