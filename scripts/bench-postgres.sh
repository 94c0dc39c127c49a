#!/usr/bin/env bash
# Side by side, on one throwaway PostgreSQL cluster with durable commits
# (fsync=on, synchronous_commit=on): oauthd refresh grants (HTTP over
# loopback, client authentication, rotation, ES256 access token) against
# pgbench running a one-row "UPDATE … WHERE id = $1 AND hash = $2"
# transaction, the durable-transaction ceiling of that database, and against
# the echo-bare HTTP ceiling of the benchmark kit (a bare Echo handler driven
# by the kit's load generator: the anchor the kit's peer figures, Ory Hydra's
# among them, are ratios to). At each concurrency, alternating in the same
# minutes:
#
#   pgbench                the one-row durable UPDATE
#   oauthd in-process      oauthd-bench --db postgres://… (server and load generator in one process)
#   oauthd serve+loadgen   oauthd serve on the same database, driven by the kit's loadgen (separate processes)
#   echo-bare              the kit's ceiling, driven by the kit's loadgen
#
#   scripts/bench-postgres.sh [SECONDS_PER_RUN] [REPS]   (default 10 s, 2 reps)
#
# Each line gives the run's UTC time and 1-minute load average, and the CPU
# each side used per operation (utime+stime of the client and server
# processes, and of every PostgreSQL process of the cluster), which the
# machine's other tenants disturb less than the rate. The summary gives
# the medians of the ratios taken pair by pair.
#
# Environment:
#   BENCH          the shared benchmark kit (loadgen/ and ceiling/); default ../shared/bench.
#                  Without it the echo-bare and serve+loadgen rows are skipped.
#   CONCURRENCY    default "16 64".
#   POOL           oauthd's pool size (pool_max_conns); "c" means one connection
#                  per worker, as pgbench has. Default: serve's default pool.
#   PGSETTINGS     extra server settings for the cluster, e.g.
#                  "-c commit_delay=100": they are the server's, so pgbench
#                  runs under them too (docs/PERFORMANCE.md: commit_delay did
#                  not pay here).
#
# oauthd runs with its default pool (max(16, 4 x cores) connections, as serve
# does) unless POOL says otherwise. Needs the PostgreSQL server binaries (/usr/lib/postgresql/*/bin)
# and, as root, the postgres user. Everything listens on 127.0.0.1 only and
# stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
reps=${2:-2}
BENCH="${BENCH:-../shared/bench}"
CONCURRENCY="${CONCURRENCY:-16 64}"
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
dir=$(mktemp -d /tmp/oauthd-pgbench.XXXXXX)
as=()
if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; as=(runuser -u postgres --); fi
port=$(( 20000 + RANDOM % 20000 ))
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  "${as[@]}" "$pgbin/pg_ctl" stop -D "$dir/data" -m fast >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
"${as[@]}" "$pgbin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-instructions >/dev/null
# shellcheck disable=SC2086
"${as[@]}" "$pgbin/pg_ctl" start -D "$dir/data" -w -l "$dir/log" -o \
  "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=on -c synchronous_commit=on -c max_connections=300 -c shared_buffers=256MB ${PGSETTINGS:-}" >/dev/null
url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
db="postgres://postgres@127.0.0.1:$port/oauthd?sslmode=disable"
"$pgbin/psql" "$url" -qAt -c "SHOW fsync" -c "SHOW synchronous_commit" -c "SHOW commit_delay" | tr '\n' ' '
echo "(fsync, synchronous_commit, commit_delay)"
"$pgbin/psql" "$url" -q -c "CREATE DATABASE oauthd" -c "CREATE TABLE pgb (id int PRIMARY KEY, hash bytea NOT NULL, n bigint NOT NULL DEFAULT 0)" \
  -c "INSERT INTO pgb (id, hash) SELECT i, sha256(i::text::bytea) FROM generate_series(1, 100000) i" -c "VACUUM ANALYZE pgb"
cat > "$dir/tx.sql" <<'SQL'
\set id random(1, 100000)
UPDATE pgb SET n = n + 1 WHERE id = :id AND hash = sha256(:id::text::bytea);
SQL
go build -o "$dir/oauthd" ./cmd/oauthd
go build -o "$dir/oauthd-bench" ./cmd/oauthd-bench # the load generator, a command of its own
kit=0
if [ -d "$BENCH/loadgen" ] && [ -d "$BENCH/ceiling" ]; then
  (cd "$BENCH/loadgen" && go build -o "$dir/loadgen" .)
  (cd "$BENCH/ceiling" && go build -o "$dir/ceiling" .)
  kit=1
else
  echo "bench-postgres.sh: no kit at $BENCH (set BENCH): echo-bare and serve+loadgen skipped" >&2
fi

hz=$(getconf CLK_TCK)
pm=$(head -1 "$dir/data/postmaster.pid")
# pgcpu prints the CPU ticks every process of the cluster has used (ended
# backends are in the postmaster's children's times).
pgcpu() {
  local f g s p
  read -ra f < "/proc/$pm/stat"
  s=$(( f[13] + f[14] + f[15] + f[16] ))
  for p in $(pgrep -P "$pm"); do
    read -ra g < "/proc/$p/stat" 2>/dev/null || continue
    s=$(( s + g[13] + g[14] ))
  done
  echo "$s"
}
# ticks PID prints the CPU ticks process PID has used.
ticks() { local f; read -ra f < "/proc/$1/stat"; echo $(( f[13] + f[14] )); }
# timed FILE CMD… runs CMD with its stdout in FILE and prints its CPU seconds.
timed() {
  local out=$1; shift
  /usr/bin/time -f "%U %S" -o "$dir/time" "$@" >"$out" 2>/dev/null
  awk '{print $1 + $2}' "$dir/time"
}
wait_port() {
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "bench-postgres.sh: nothing listens on port $1" >&2
  return 1
}
json() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(*[eval(e, {}, {"r": r}) for e in sys.argv[2:]])' "$@"; }
hport=$(( port + 1 ))

# pgsince T0 prints the PostgreSQL CPU seconds since pgcpu printed T0,
# after the backends of ended connections have been reaped.
pgsince() { sleep 0.2; echo "($(pgcpu) - $1) / $hz" | bc -l; }

# Each run_* prints: ops/s p99_ms errors chains_alive client_cpu_s
# server_cpu_s postgres_cpu_s ops (an in-process run's client CPU is the
# whole process's, its server CPU 0; it includes the start: migrations
# check, key load, seeding the chains, about 0.2 s of CPU).
run_pgbench() {
  local cpu p0
  p0=$(pgcpu)
  cpu=$(timed "$dir/out" "$pgbin/pgbench" -n -M prepared -c "$1" -j 2 -T "$secs" -f "$dir/tx.sql" "$url")
  awk -v cpu="$cpu" -v pg="$(pgsince "$p0")" '/^tps/ {tps = $3} /transactions actually processed/ {split($NF, a, "/"); n = a[1]}
    END {printf "%.1f - 0 - %s 0 %s %d\n", tps, cpu, pg, n}' "$dir/out"
}
# dbfor C prints oauthd's database URL at concurrency C (POOL).
dbfor() {
  case "${POOL:-}" in
  "") echo "$db" ;;
  c) echo "$db&pool_max_conns=$1" ;;
  *) echo "$db&pool_max_conns=$POOL" ;;
  esac
}
run_inproc() {
  local cpu p0
  p0=$(pgcpu)
  cpu=$(timed "$dir/out" "$dir/oauthd-bench" --db "$(dbfor "$1")" -c "$1" -d "${secs}s" --json)
  echo "$(json "$dir/out" 'r["grants_per_s"]' 'r["latency_ms"]["p99"]' 'r["errors"]' 'r["chains_alive"]') $cpu 0 $(pgsince "$p0") $(json "$dir/out" 'r["requests"]')"
}
run_serve() {
  local c=$1 id secret pid t0 t1 p0 p1 cpu
  hport=$(( hport + 1 ))
  "$dir/oauthd-bench" --db "$db" --log-level warn --emit-tokens "$dir/tokens.txt" --grants "$c" --json >"$dir/creds" 2>/dev/null
  id=$(json "$dir/creds" 'r["client_id"]')
  secret=$(json "$dir/creds" 'r["client_secret"]')
  "$dir/oauthd" --db "$(dbfor "$c")" --log-level warn serve --addr "127.0.0.1:$hport" >"$dir/serve.log" 2>&1 &
  pid=$!; pids+=("$pid")
  wait_port "$hport"
  t0=$(ticks "$pid"); p0=$(pgcpu)
  cpu=$(timed "$dir/out" "$dir/loadgen" -json -d "${secs}s" -warmup 0s -url "http://127.0.0.1:$hport/v2/auth/oauth2/token" \
    -client-id "$id" -client-secret "$secret" -auth post -tokens "$dir/tokens.txt" -c "$c")
  t1=$(ticks "$pid"); p1=$(pgcpu)
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  echo "$(json "$dir/out" 'r["ok_per_s"]' 'r["p99_ms"]' 'r["requests"]-r["ok"]' 'r["live_chains"]') $cpu $(echo "($t1 - $t0) / $hz" | bc -l) $(echo "($p1 - $p0) / $hz" | bc -l) $(json "$dir/out" 'r["requests"]')"
}
run_ceiling() {
  local c=$1 pid t0 t1 cpu
  hport=$(( hport + 1 ))
  "$dir/ceiling" -kind echo -addr "127.0.0.1:$hport" -lifetime 5m >/dev/null 2>&1 &
  pid=$!; pids+=("$pid")
  wait_port "$hport"
  seq "$c" | sed 's/^/ceiling-token-/' >"$dir/ceiling-tokens.txt"
  t0=$(ticks "$pid")
  cpu=$(timed "$dir/out" "$dir/loadgen" -json -d "${secs}s" -warmup 0s -url "http://127.0.0.1:$hport/token" \
    -client-id c -client-secret s -tokens "$dir/ceiling-tokens.txt" -c "$c")
  t1=$(ticks "$pid")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "$(json "$dir/out" 'r["ok_per_s"]' 'r["p99_ms"]' 'r["requests"]-r["ok"]' 'r["live_chains"]') $cpu $(echo "($t1 - $t0) / $hz" | bc -l) 0 $(json "$dir/out" 'r["requests"]')"
}

results="$dir/results"
: >"$results"
printf '%-8s %-3s %-3s %-20s %9s %8s %6s %6s %12s %12s %6s\n' time c rep run ops/s p99_ms errors alive "client_µs/op" "server_µs/op" "pg_µs/op"
for c in $CONCURRENCY; do
  for rep in $(seq "$reps"); do
    runs=(pgbench inproc)
    [ "$kit" = 1 ] && runs+=(serve ceiling)
    for run in "${runs[@]}"; do
      read -r rate p99 errs alive ccpu scpu pcpu n < <("run_$run" "$c")
      load=$(cut -d' ' -f1 /proc/loadavg)
      now=$(date -u +%H:%M:%S)
      python3 - "$now" "$c" "$rep" "$run" "$rate" "$p99" "$errs" "$alive" "$ccpu" "$scpu" "$n" "$pcpu" "$load" >>"$results" <<'PY'
import sys
now, c, rep, run, rate, p99, errs, alive, ccpu, scpu, n, pg, load = sys.argv[1:]
n = max(int(n), 1)
print(now, c, rep, run, rate, p99, errs, alive, float(ccpu) / n * 1e6, float(scpu) / n * 1e6, float(pg) / n * 1e6, load)
PY
      tail -1 "$results" | awk '{names["pgbench"]="pgbench"; names["inproc"]="oauthd in-process"; names["serve"]="oauthd serve+loadgen"; names["ceiling"]="echo-bare";
        printf "%-8s %-3s %-3s %-20s %9.0f %8s %6s %6s %12.0f %12.0f %6.0f   load %s\n", $1, $2, $3, names[$4], $5, $6, $7, $8, $9, $10, $11, $12}'
    done
  done
done

python3 - "$results" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault((r[1], r[2]), {})[r[3]] = r
for c in sorted({r[1] for r in rows}, key=int):
    reps = [v for (cc, _), v in by.items() if cc == c]
    def ratio(a, b):
        return [float(v[a][4]) / float(v[b][4]) for v in reps if a in v and b in v and float(v[b][4]) > 0]
    def med(xs): return st.median(xs) if xs else float("nan")
    line = f"c={c}: median of {len(reps)} rounds:"
    line += f" in-process/pgbench {med(ratio('inproc', 'pgbench')):.3f}"
    if any('serve' in v for v in reps):
        line += f", serve+loadgen/pgbench {med(ratio('serve', 'pgbench')):.3f}"
        line += f"; in-process/echo-bare {med(ratio('inproc', 'ceiling')):.4f}, serve+loadgen/echo-bare {med(ratio('serve', 'ceiling')):.4f}"
    p99 = [float(v['inproc'][5]) for v in reps if 'inproc' in v]
    line += f"; in-process p99 median {med(p99):.1f} ms"
    sp99 = [float(v['serve'][5]) for v in reps if 'serve' in v]
    if sp99:
        line += f", serve+loadgen p99 median {med(sp99):.1f} ms"
    errs = sum(int(float(v[k][6])) for v in reps for k in ('inproc', 'serve') if k in v)
    dead = sum(int(c) - int(v[k][7]) for v in reps for k in ('inproc', 'serve') if k in v)
    line += f"; oauthd errors {errs}, dead chains {dead}"
    print(line)
    def cpu(k):
        xs = [v[k] for v in reps if k in v]
        return med([float(x[8]) + float(x[9]) + float(x[10]) for x in xs]) if xs else float("nan")
    line = f"    CPU-bound ratio (pgbench's CPU per transaction / oauthd's per grant, load generators included):"
    line += f" in-process {cpu('pgbench') / cpu('inproc'):.3f}"
    if any('serve' in v for v in reps):
        line += f", serve+loadgen {cpu('pgbench') / cpu('serve'):.3f}"
    print(line)
    for k, name in (("pgbench", "pgbench"), ("inproc", "oauthd in-process"), ("serve", "oauthd serve+loadgen"), ("ceiling", "echo-bare")):
        xs = [v[k] for v in reps if k in v]
        if not xs:
            continue
        cl, sv, pg = (med([float(x[i]) for x in xs]) for i in (8, 9, 10))
        print(f"    CPU per op, median: {name:21s} client {cl:5.0f} µs + server {sv:5.0f} µs + PostgreSQL {pg:5.0f} µs = {cl + sv + pg:5.0f} µs")
PY
