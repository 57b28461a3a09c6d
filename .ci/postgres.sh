#!/usr/bin/env bash
# Start (or reuse) a scratch PostgreSQL server for the tests and print one
# line for the caller to eval:
#
#   eval "$(bash .ci/postgres.sh)"   # sets JUKEBOX_PG_DSN
#
# Idempotent: installs PostgreSQL only if no server binaries exist, and
# reuses a scratch server it started earlier if that one still answers.
# The server refuses to run as root, so the cluster belongs to the
# `postgres` user. max_prepared_transactions is set for the booth's
# two-phase commit. Progress goes to stderr; stdout is only the export.
set -euo pipefail

state=${JUKEBOX_PG_STATE:-/tmp/jukebox-pg}
log() { echo "postgres.sh: $*" >&2; }

as_postgres() {
	if [ "$(id -u)" != 0 ]; then "$@"; return; fi
	if command -v runuser >/dev/null; then runuser -u postgres -- "$@"; else su -s /bin/sh postgres -c "$(printf '%q ' "$@")"; fi
}

find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

bin=$(find_bin)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
	log "installing postgresql"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update >&2
	apt-get install -y --no-install-recommends postgresql >&2
	bin=$(find_bin)
fi
id postgres >/dev/null 2>&1 || useradd --system --home-dir "$state" --shell /bin/sh postgres

if [ -f "$state/dsn" ] && [ -f "$state/port" ] && "$bin/pg_isready" -q -h 127.0.0.1 -p "$(cat "$state/port")"; then
	log "reusing the server on port $(cat "$state/port")"
	echo "export JUKEBOX_PG_DSN='$(cat "$state/dsn")'"
	exit 0
fi

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port=55432
while ! port_free "$port"; do port=$((port + 1)); done

if [ -d "$state/data" ]; then
	as_postgres "$bin/pg_ctl" -D "$state/data" -m immediate stop >/dev/null 2>&1 || true
fi
rm -rf "$state"
mkdir -p "$state"
chown postgres "$state" 2>/dev/null || true
log "initdb in $state/data"
as_postgres "$bin/initdb" -D "$state/data" -U postgres -A trust --no-sync >"$state/initdb.log" 2>&1 ||
	{ cat "$state/initdb.log" >&2; exit 1; }
opts="-c listen_addresses=127.0.0.1 -c port=$port -c max_prepared_transactions=20"
opts="$opts -c unix_socket_directories=$state -c fsync=off -c synchronous_commit=off"
log "starting on 127.0.0.1:$port"
as_postgres "$bin/pg_ctl" -D "$state/data" -l "$state/server.log" -o "$opts" -w -t 60 start >&2 ||
	{ cat "$state/server.log" >&2; exit 1; }
dsn="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
echo "$port" >"$state/port"
echo "$dsn" >"$state/dsn"
echo "export JUKEBOX_PG_DSN='$dsn'"
