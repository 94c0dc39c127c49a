#!/usr/bin/env bash
# Starts or stops a PgBouncer in transaction pooling mode in front of a
# PostgreSQL server listening on a Unix socket, for the tests (CI runs the
# PostgreSQL tests a second time through it, see .ci/run) and for trying
# oauthd behind PgBouncer (docs/POSTGRESQL.md "Behind PgBouncer").
#
#   scripts/pgbouncer.sh start DIR PGSOCKETDIR [PGUSER]   prints the URL to pass as --db
#   scripts/pgbouncer.sh stop DIR
#
# DIR holds its configuration, log, pid file and Unix socket (port 6432);
# it must be writable by the user PgBouncer runs as (as root: the postgres
# user, since PgBouncer refuses root). No TCP port is opened. Every
# database of the server is reachable (the fallback database "*"); clients
# are trusted (auth_type=trust), so keep DIR private. PGBOUNCER_POOL_SIZE
# sets default_pool_size (20 unless set; scripts/experiments/pg-replicas.py
# varies it).
set -euo pipefail

cmd=${1:?usage: $0 start DIR PGSOCKETDIR [PGUSER] | stop DIR}
dir=${2:?DIR}

as_user() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
start)
  pgsock=${3:?PGSOCKETDIR}
  pguser=${4:-postgres}
  bin=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
  [ -x "$bin" ] || { echo "pgbouncer is not installed (apt-get install pgbouncer)" >&2; exit 1; }
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
  printf '"%s" ""\n' "$pguser" > "$dir/users.txt"
  # pool_mode=transaction: a server connection belongs to a client for one
  # transaction only; what needs a session (oauthd's LISTEN) goes straight
  # to the server (--db-session-url). server_login_retry=1: after a failed
  # connection to the server, retry in 1 s, not PgBouncer's default 15 s
  # (docs/POSTGRESQL.md "PgBouncer settings").
  cat > "$dir/pgbouncer.ini" <<EOF
[databases]
* = host=$pgsock user=$pguser

[pgbouncer]
listen_addr =
listen_port = 6432
unix_socket_dir = $dir
auth_type = trust
auth_file = $dir/users.txt
admin_users = $pguser
pool_mode = transaction
max_client_conn = 4000
default_pool_size = ${PGBOUNCER_POOL_SIZE:-20}
ignore_startup_parameters = extra_float_digits
server_login_retry = 1
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"/*
  as_user "$bin" -d -q "$dir/pgbouncer.ini"
  for _ in $(seq 50); do [ -S "$dir/.s.PGSQL.6432" ] && break; sleep 0.1; done
  [ -S "$dir/.s.PGSQL.6432" ] || { echo "pgbouncer did not start:" >&2; cat "$dir/pgbouncer.log" >&2; exit 1; }
  # default_query_exec_mode=exec: PgBouncer before 1.21 (Debian 12 ships
  # 1.18) does not keep a prepared statement past the transaction.
  echo "postgres://$pguser@/postgres?host=$dir&port=6432&default_query_exec_mode=exec"
  ;;
stop)
  if [ -f "$dir/pgbouncer.pid" ]; then
    pid=$(cat "$dir/pgbouncer.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  ;;
*)
  echo "usage: $0 start DIR PGSOCKETDIR [PGUSER] | stop DIR" >&2; exit 2
  ;;
esac
