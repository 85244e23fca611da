#!/usr/bin/env bash
# The project's virtualenv ($VENV, default .venv): exactly the set uv.lock
# records, the dev extra included, with the site installed editable. Made, or
# brought up to date when pyproject.toml or uv.lock changed; a second run with
# both unchanged does nothing (the stamp holds their checksum). Sourced by
# quickstart.sh, test.sh and .ci/run (docs/build.md).
#
# Needs only python3 (3.11+, or $PYTHON): uv is $UV, the lock's own copy in
# $VENV, or uv on PATH; failing those, pip installs the version uv.lock records
# into $VENV first. An out-of-date lock (pyproject.toml changed, `uv lock` not
# run) fails here with uv's message.
VENV=${VENV:-.venv}
# Python writes each module's bytecode the first time a process imports it
# (into $VENV and the checkout's __pycache__, both ignored by git), whatever
# PYTHONDONTWRITEBYTECODE said in the calling shell: on a machine that sets it,
# every process the suite starts (workers, manage.py, the perf scripts)
# compiled Django, Celery and litellm from source again, seconds of CPU each.
# Compiling every package at install instead (uv's --compile-bytecode) costs
# more than what the first commands import (perf/README.md, the quick start).
unset PYTHONDONTWRITEBYTECODE

_mlrbench_venv() {
  local python=${PYTHON:-python3} stamp="$VENV/.mlrbench-installed" wanted uv version
  wanted=$(cat pyproject.toml uv.lock | sha256sum)
  wanted=${wanted%% *}
  if [ -x "$VENV/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
    return 0
  fi
  uv=${UV:-}
  if [ -z "$uv" ] && [ -x "$VENV/bin/uv" ]; then
    uv=$VENV/bin/uv
  fi
  if [ -z "$uv" ]; then
    uv=$(command -v uv || true)
  fi
  if [ -z "$uv" ]; then
    version=$(sed -n '/^name = "uv"$/{n;s/^version = "\(.*\)"$/\1/p;}' uv.lock)
    echo "==> installing uv $version (uv.lock's version) into $VENV with pip"
    [ -x "$VENV/bin/python" ] || "$python" -m venv "$VENV" || return 1
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$version" \
      || return 1
    uv=$VENV/bin/uv
  elif [ ! -x "$VENV/bin/python" ]; then
    "$python" -m venv --without-pip "$VENV" || return 1  # pip comes from the lock
  fi
  echo "==> installing the locked packages (uv.lock) into $VENV"
  UV_PROJECT_ENVIRONMENT=$VENV UV_PYTHON_DOWNLOADS=never \
    "$uv" sync --locked --extra dev --quiet || return 1
  echo "$wanted" >"$stamp"
}
_mlrbench_venv
_mlrbench_venv_status=$?
unset -f _mlrbench_venv
# shellcheck disable=SC2317  # sourced: `return` ends the sourcing, `exit` a plain run
return "$_mlrbench_venv_status" 2>/dev/null || exit "$_mlrbench_venv_status"
