.PHONY: run test lint perf

# Run the site at http://127.0.0.1:8000 on SQLite with the MLR-Bench data loaded.
run:
	./scripts/quickstart.sh

# Run the whole test suite against PostgreSQL and Redis.
test:
	./scripts/test.sh

# What CI checks before the tests: lint, format and types (any finding fails).
lint:
	.venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy .
