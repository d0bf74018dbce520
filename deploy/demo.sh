#!/usr/bin/env bash
# `make demo`: the daemon on the simulated Eurora cluster, API and metrics on 127.0.0.1:8080.
# The Makefile has already created .venv and installed the project (target `venv`).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
if [ ! -x "$VENV/bin/wattsched" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q -e '.[dev]'
fi
mkdir -p var/demo
# A fresh random token for the mutating calls (PUT /config/..., POST /cycle).
if [ ! -s var/demo/token ]; then
  (umask 077; "$VENV/bin/python" -c 'import secrets; print(secrets.token_urlsafe(32))' > var/demo/token)
fi
CONFIG=deploy/demo.toml
SHARED=../shared/data/eurora
if [ -d "$SHARED/system_configs" ] && [ -f "$SHARED/historical_traces/200/hist_200_20140331_112449.log_crypt" ]; then
  export WATTSCHED_CONNECTOR__NODES_FILE="$SHARED/system_configs/nodes_#32"
  export WATTSCHED_CONNECTOR__QUEUES_FILE="$SHARED/system_configs/system_queues"
  export WATTSCHED_CONNECTOR__TRACE_FILE="$SHARED/historical_traces/200/hist_200_20140331_112449.log_crypt"
fi
# A new demo each time: the simulated cluster starts from the beginning of its trace.
rm -f var/demo/wattsched.db var/demo/wattsched.db-wal var/demo/wattsched.db-shm
"$VENV/bin/wattsched" migrate -c "$CONFIG"
cat <<MSG

wattsched demo on http://127.0.0.1:8080 (Ctrl-C stops it). Try:
  curl -s http://127.0.0.1:8080/status | python3 -m json.tool
  curl -s 'http://127.0.0.1:8080/jobs?state=running&limit=5' | python3 -m json.tool
  curl -s http://127.0.0.1:8080/metrics | grep ^wattsched_
  $VENV/bin/wattsched status -c $CONFIG            # or: plan, cap set 2600, mode advise
Status page: http://127.0.0.1:8080/ui    OpenAPI: http://127.0.0.1:8080/docs

MSG
exec "$VENV/bin/wattsched" serve -c "$CONFIG"
