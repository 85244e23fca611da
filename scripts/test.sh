#!/usr/bin/env bash
# The whole test suite, against real PostgreSQL and Redis (defaults: the
# local servers on their standard ports). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/venv.sh
. scripts/venv.sh
export DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/mlrbench}
export REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/15}
export CELERY_BROKER_URL=$REDIS_URL
export MLRBENCH_DATA=${MLRBENCH_DATA:-$(cd .. && pwd)/shared/mlrbench}
export DEBUG=0 SECRET_KEY=${SECRET_KEY:-test-only-secret-key}
# The browser tests' live server serves static files by their plain names;
# tests/site/test_static_manifest.py checks the production (hashed) set-up.
export STATIC_MANIFEST=0
exec "$VENV/bin/python" -m pytest "$@"
