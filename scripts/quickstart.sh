#!/usr/bin/env bash
# One command from a fresh clone to a running site on the embedded defaults:
# SQLite, no broker (Celery runs tasks in-process), real MLR-Bench data.
# Safe to run again: it reuses the virtual environment and the database, and
# the import changes nothing the second time.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
export VENV=${VENV:-.venv}
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
export DEBUG=${DEBUG:-1}
export MLRBENCH_DATA=${MLRBENCH_DATA:-$(cd .. && pwd)/shared/mlrbench}

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "Python 3.11 or newer is needed (set PYTHON=...)." >&2; exit 1; }

# The locked packages (uv.lock) in $VENV: made on the first run, nothing to do
# on the next ones (scripts/venv.sh; it needs only $PYTHON, and brings uv).
# shellcheck source=scripts/venv.sh
. scripts/venv.sh

# The settings this run uses, written once for every later command in a new
# shell (mlrbench_site/settings/base.py reads the file; the environment wins over it).
# The quick start's own file: `.env` is a deployment's (docker-compose's env_file).
ENV_FILE=${MLRBENCH_ENV_FILE:-.env.local}
if [ -z "${MLRBENCH_ENV_FILE:-}" ] && [ ! -f "$ENV_FILE" ] && [ -f .env ] \
  && head -n 1 .env | grep -q '^# Written by scripts/quickstart.sh'; then
  # An earlier quick start wrote its settings to .env: they move to their own file.
  echo "==> moving the quick start's settings from .env to $ENV_FILE (.env is docker compose's)"
  mv .env "$ENV_FILE"
fi
if [ ! -f "$ENV_FILE" ]; then
  echo "==> writing the local settings to $ENV_FILE (development only; see .env.example for production)"
  secret=$("$VENV/bin/python" -c 'import secrets; print(secrets.token_urlsafe(50))')
  umask 077
  cat >"$ENV_FILE" <<ENV
# Written by scripts/quickstart.sh: the local development settings it ran with,
# read by every manage.py command (mlrbench_site/settings/). Not for production:
# see .env.example. Ignored by git; delete it to have the quick start write it again.
DEBUG=$DEBUG
SECRET_KEY=$secret
DATABASE_URL=${DATABASE_URL:-sqlite:///$PWD/db.sqlite3}
MEDIA_ROOT=${MEDIA_ROOT:-$PWD/media}
MLRBENCH_DATA=$MLRBENCH_DATA
ENV
  umask 022
else
  echo "==> using the settings in $ENV_FILE (variables set in this shell win)"
fi

echo "==> migrating the database"
"$VENV/bin/python" manage.py migrate --noinput -v 0
# migrate ran the system checks; the commands after it skip them (a second each).

if [ -d "$MLRBENCH_DATA" ]; then
  echo "==> importing MLR-Bench data from $MLRBENCH_DATA"
  "$VENV/bin/python" manage.py import_mlrbench --skip-checks "$MLRBENCH_DATA"
else
  echo "!! MLRBENCH_DATA=$MLRBENCH_DATA is not a folder: the site starts without tasks." >&2
  echo "!! Clone https://github.com/chchenhui/mlrbench and set MLRBENCH_DATA to it." >&2
fi

echo "==> installing the site's own objective task and running its example methods"
"$VENV/bin/python" manage.py objective_task --skip-checks install --examples \
  || echo "!! the example objective task could not be installed; the site starts without it." >&2

# The imported judges are inactive: say so last, where it is read, with the fix.
"$VENV/bin/python" manage.py shell -v 0 -c '
from judging.selectors import JUDGE_ADD_HOSTED, JUDGE_ADD_LOCAL, active_judge_count
n = active_judge_count()
if n:
    print(f"==> {n} active judge(s): new uploads are judged")
else:
    print("!! No judge is active: new uploads will not be judged. Add one, for a hosted model:")
    import os
    where = os.environ["VENV"].rstrip("/") + "/bin/"
    print("     " + where + JUDGE_ADD_HOSTED)
    print("   or a local OpenAI-compatible server (Ollama, vLLM; docs/judging.md: Judging with a local model):")
    print("     " + where + JUDGE_ADD_LOCAL)
    print("   then: " + where + "python manage.py judge --pending")
' || true

echo "==> serving on http://$HOST:$PORT/ (Ctrl-C stops; set HOST and PORT to change)"
exec "$VENV/bin/python" manage.py runserver --noreload --skip-checks "$HOST:$PORT"
