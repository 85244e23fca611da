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
cleanup=()
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
      rabbitmqctl -q add_vhost "$vhost" >/dev/null
      rabbitmqctl -q set_permissions -p "$vhost" "${user:-guest}" ".*" ".*" ".*" >/dev/null
      cleanup+=(rabbitmqctl -q delete_vhost "$vhost")
      export CELERY_BROKER_URL="${CELERY_BROKER_URL%%://*}://$authority/$vhost"
    fi
    ;;
esac
export MLRBENCH_DATA=${MLRBENCH_DATA:-$(cd .. && pwd)/shared/mlrbench}
export DEBUG=0 SECRET_KEY=${SECRET_KEY:-test-only-secret-key}
# The browser tests' live server serves static files by their plain names;
# tests/site/test_static_manifest.py checks the production (hashed) set-up.
export STATIC_MANIFEST=0
if [ ${#cleanup[@]} -eq 0 ]; then
  exec "$VENV/bin/python" -m pytest "$@"
fi
status=0
"$VENV/bin/python" -m pytest "$@" || status=$?
"${cleanup[@]}" >/dev/null || echo "could not remove the test vhost: ${cleanup[*]}" >&2
exit "$status"
