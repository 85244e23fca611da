#!/usr/bin/env bash
# The project's virtualenv ($VENV, default .venv) with the dev extras, made or
# brought up to date when pyproject.toml changed. Sourced by test.sh and .ci/run.
VENV=${VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
stamp="$VENV/.mlrbench-installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet -e ".[dev]"
  touch "$stamp"
fi
