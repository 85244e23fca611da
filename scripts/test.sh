#!/usr/bin/env bash
# The whole test suite, against real PostgreSQL and Redis (defaults: the
# local servers on their standard ports). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/venv.sh
. scripts/venv.sh
export DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/mlrbench}
export REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/15}
# The broker: Redis (the default) or RabbitMQ, e.g.
# TEST_CELERY_BROKER_URL=amqp://guest:guest@127.0.0.1:5672// (or CELERY_BROKER_URL).
export CELERY_BROKER_URL=${TEST_CELERY_BROKER_URL:-${CELERY_BROKER_URL:-$REDIS_URL}}
# Parallel (pytest-xdist): TEST_WORKERS worker processes (`auto`: one per core;
# 0: serially, in this process). Each worker has a test database, a Redis
# database (REDIS_URL's number minus its own) and a RabbitMQ virtual host of
# its own (mlrbench_site/settings/test.py).
workers=${TEST_WORKERS:-auto}
if [ "$workers" = auto ]; then
  workers=$(nproc)
fi
case $workers in
  '' | *[!0-9]*)
    echo "TEST_WORKERS=$workers: a count of workers, auto, or 0 for a serial run" >&2
    exit 2
    ;;
esac
xdist=()
if [ "$workers" -gt 0 ]; then
  # loadgroup: the tests of an `xdist_group` go to one worker (a session fixture
  # that builds something, such as a task environment, is built once).
  xdist=(-n "$workers" --dist loadgroup)
fi
cleanup=()
on_exit() {
  local command
  for command in "${cleanup[@]}"; do
    eval "$command" || echo "could not clean up: $command" >&2
  done
}
trap on_exit EXIT
# Test databases are copies of a migrated template (CREATE DATABASE ... TEMPLATE),
# not migrated once per worker: CI makes one (TEST_DATABASE_TEMPLATE); without
# it a parallel run makes its own and drops it at the end.
if [ "$workers" -gt 0 ] && [ -z "${TEST_DATABASE_TEMPLATE:-}" ]; then
  export TEST_DATABASE_TEMPLATE="mlrbench_test_template_$$"
  cleanup+=("\"\$VENV/bin/python\" scripts/database_template.py drop $TEST_DATABASE_TEMPLATE")
  "$VENV/bin/python" scripts/database_template.py create "$TEST_DATABASE_TEMPLATE"
fi
case $CELERY_BROKER_URL in
  amqp://* | amqps://* | pyamqp://*)
    # A RabbitMQ virtual host of this run's own (where rabbitmqctl reaches the
    # broker), removed at the end: parallel runs never share a queue.
    if command -v rabbitmqctl >/dev/null && rabbitmqctl -q status >/dev/null 2>&1; then
      vhost="mlrbench-test-$(hostname -s)-$$"
      authority=${CELERY_BROKER_URL#*://}
      authority=${authority%%/*}  # user:password@host:port, without the vhost
      user=${authority%%@*}
      user=${user%%:*}
      # One more per xdist worker: <vhost>-gw0, <vhost>-gw1, ...
      for name in "$vhost" $(for ((i = 0; i < workers; i++)); do echo "$vhost-gw$i"; done); do
        rabbitmqctl -q add_vhost "$name" >/dev/null
        cleanup+=("rabbitmqctl -q delete_vhost $name >/dev/null")
        rabbitmqctl -q set_permissions -p "$name" "${user:-guest}" ".*" ".*" ".*" >/dev/null
      done
      export CELERY_BROKER_URL="${CELERY_BROKER_URL%%://*}://$authority/$vhost"
    elif [ "$workers" -gt 0 ]; then
      echo "RabbitMQ: parallel workers need a virtual host each, made with rabbitmqctl," \
        "which does not reach the broker here; run with TEST_WORKERS=0" >&2
      exit 2
    fi
    ;;
esac
# axe-core for the browser walk's accessibility check, pinned in
# tests/e2e/axe/package-lock.json: installed on the first run, as the virtualenv is.
if [ ! -f tests/e2e/axe/node_modules/axe-core/axe.min.js ]; then
  if command -v npm >/dev/null; then
    echo "==> installing axe-core (tests/e2e/axe) with npm ci"
    npm ci --prefix tests/e2e/axe --no-audit --no-fund --silent
  else
    echo "npm is not installed: the browser walk needs axe-core (npm ci --prefix tests/e2e/axe)" >&2
  fi
fi
export MLRBENCH_DATA=${MLRBENCH_DATA:-$(cd .. && pwd)/shared/mlrbench}
export DEBUG=0 SECRET_KEY=${SECRET_KEY:-test-only-secret-key}
# The browser tests' live server serves static files by their plain names;
# tests/site/test_static_manifest.py checks the production (hashed) set-up.
export STATIC_MANIFEST=0
"$VENV/bin/python" -m pytest "${xdist[@]}" "$@"
