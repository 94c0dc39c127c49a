#!/usr/bin/env bash
# Side by side, on one throwaway PostgreSQL cluster with durable commits
# (fsync=on, synchronous_commit=on): oauthd refresh grants (oauthd bench on
# PostgreSQL: HTTP over loopback, client auth, rotation, ES256 access token)
# against pgbench running a one-row "UPDATE … WHERE id = $1 AND hash = $2"
# transaction, the durable-transaction ceiling of that database, at the same
# concurrency, alternating in the same minutes.
#
#   scripts/bench-postgres.sh [SECONDS_PER_RUN] [REPS]   (default 10 s, 2 reps)
#
# oauthd runs with its default pool (max(16, 4 x cores) connections, as serve
# does): with 64 workers on two cores a pool of 16 gave more grants/s and a
# lower p99 than 64 connections (fewer backends competing for the CPU).
#
# Needs the PostgreSQL server binaries (/usr/lib/postgresql/*/bin) and, as
# root, the postgres user. Everything listens on 127.0.0.1 only and stops by
# itself.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
reps=${2:-2}
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
dir=$(mktemp -d /tmp/oauthd-pgbench.XXXXXX)
as=()
if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; as=(runuser -u postgres --); fi
port=$(( 20000 + RANDOM % 20000 ))
"${as[@]}" "$pgbin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-instructions >/dev/null
"${as[@]}" "$pgbin/pg_ctl" start -D "$dir/data" -w -l "$dir/log" -o \
  "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=on -c synchronous_commit=on -c max_connections=300 -c shared_buffers=256MB" >/dev/null
trap '"${as[@]}" "$pgbin/pg_ctl" stop -D "$dir/data" -m fast >/dev/null 2>&1; rm -rf "$dir"' EXIT
url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
"$pgbin/psql" "$url" -qAt -c "SHOW fsync" -c "SHOW synchronous_commit" | tr '\n' ' '; echo "(fsync, synchronous_commit)"
"$pgbin/psql" "$url" -q -c "CREATE DATABASE oauthd" -c "CREATE TABLE pgb (id int PRIMARY KEY, hash bytea NOT NULL, n bigint NOT NULL DEFAULT 0)" \
  -c "INSERT INTO pgb (id, hash) SELECT i, sha256(i::text::bytea) FROM generate_series(1, 100000) i" -c "VACUUM ANALYZE pgb"
cat > "$dir/tx.sql" <<'SQL'
\set id random(1, 100000)
UPDATE pgb SET n = n + 1 WHERE id = :id AND hash = sha256(:id::text::bytea);
SQL
go build -o "$dir/oauthd" ./cmd/oauthd
db="postgres://postgres@127.0.0.1:$port/oauthd?sslmode=disable"
for c in 16 64; do
  for rep in $(seq "$reps"); do
    pg=$("$pgbin/pgbench" -n -M prepared -c "$c" -j 2 -T "$secs" -f "$dir/tx.sql" "$url" 2>/dev/null | awk '/^tps/ {print $3}')
    out=$("$dir/oauthd" --db "$db" bench -c "$c" -d "${secs}s" --json 2>/dev/null)
    read -r rps p99 errs alive < <(echo "$out" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["grants_per_s"], r["latency_ms"]["p99"], r["errors"], r["chains_alive"])')
    printf 'c=%-3s rep %s  pgbench %8.0f tx/s   oauthd %7.0f grants/s   ratio %.3f   p99 %6.1f ms   errors %s   chains alive %s/%s\n' \
      "$c" "$rep" "$pg" "$rps" "$(echo "$rps / $pg" | bc -l)" "$p99" "$errs" "$alive" "$c"
  done
done
