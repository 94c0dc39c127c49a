#!/bin/sh
# The growth table of docs/PERFORMANCE.md "Growth with the number of
# families": per backend and N, seed N families (oauthd-bench --emit-tokens
# --seed N --expire-share 0.1: on PostgreSQL with COPY through the store's
# benchmark-only SeedFamilies, on bbolt one exchange each; the sweep is
# timed there), then time `serve` start-up on the seeded database, read its
# RSS, and drive refresh chains (c=16 and c=64, durable) through
# `bench --target`, whose workers rotate over all GRANTS chains; after each
# N above 10,000 the 10,000 database is driven again (same-minutes
# reference).
#
#   OAUTHD=/path/to/oauthd OAUTHD_BENCH=/path/to/oauthd-bench PGURL=postgres://postgres@127.0.0.1:55432 \
#     NS="10000 1000000 10000000" GRANTS=10064 HOT=64 scripts/experiments/scale-growth.sh OUTDIR
#
# PGURL is a superuser URL of a running, durable (fsync=on,
# synchronous_commit=on) cluster on loopback; one database per N is created.
# Without PGURL only bbolt runs; BACKENDS="pg" (or "bolt") runs one.
# GRANTS (default 64) is how many real grants (one refresh chain each) are
# made through HTTP among the seeded families: 64 is the hot-chains
# workload, 10,000 or more the many-distinct-families one (cache misses).
# HOT=64 (with GRANTS above it) drives, for each c, the first 64 chains and
# then the other GRANTS − 64 (the same database, the same minutes): hot
# against many distinct families; the token files are split once (a chain
# is never in both, which would revoke it as a replay).
# DUR (10s) is each run's duration; a run lasts longer if the workers need
# longer to send every chain once. SKIP_SEED=1 drives the databases an
# earlier run seeded in OUTDIR again (more reps); KEEP=0 deletes each N's
# database once driven (not the 10,000 reference). Output: OUTDIR/*, one
# line per record on stdout:
#   seed  …  the seed report (families_per_s, gc_seconds: the sweep, …)
#   size  …  bytes on disk and per family after the sweep (bbolt: file and
#            WAL ÷ (N + GRANTS); PostgreSQL: pg_total_relation_size of
#            families and of families + auth_codes, and the database's
#            size, each ÷ the families' rows)
#   run   …  bench --target's report (grants_per_s, latency_ms p50/p99, chains)
#   serve …  start-up seconds (to /readyz), VmRSS and RssAnon (KiB) at start
#            and after the runs
set -eu
out=${1:?usage: scale-growth.sh OUTDIR}
mkdir -p "$out"
OAUTHD=${OAUTHD:-oauthd}                   # the product: go build ./cmd/oauthd
OAUTHD_BENCH=${OAUTHD_BENCH:-oauthd-bench} # the load generator: go build ./cmd/oauthd-bench
NS=${NS:-"10000 100000"}
DUR=${DUR:-10s}
PORT=${PORT:-18431}
GRANTS=${GRANTS:-64}

db_of() { # backend N
	if [ "$1" = bolt ]; then echo "$out/bolt-$2.db"; else echo "$PGURL/scale_$2"; fi
}

seed() { # backend N
	[ -z "${SKIP_SEED:-}" ] || return 0
	db=$(db_of "$1" "$2")
	[ "$1" = pg ] && psql "$PGURL/postgres" -qc "DROP DATABASE IF EXISTS scale_$2" -c "CREATE DATABASE scale_$2" >/dev/null
	[ "$1" = bolt ] && rm -f "$db" "$db-wal"
	rm -f "$out/$1-$2.hot.tok" "$out/$1-$2.many.tok"
	"$OAUTHD_BENCH" --db "$db" --emit-tokens "$out/$1-$2.tok" --grants "$GRANTS" --seed "$2" --expire-share 0.1 --json \
		>"$out/$1-$2.seed.json" 2>"$out/$1-$2.seed.err" || { echo "seed $1 N=$2 failed: $(tail -1 "$out/$1-$2.seed.err")"; return 1; }
	echo "seed $1 N=$2 grants=$GRANTS $(tr -d '\n ' <"$out/$1-$2.seed.json")"
	if [ "$1" = bolt ]; then
		f=$(stat -c %s "$db"); w=$(stat -c %s "$db-wal" 2>/dev/null || echo 0)
		echo "size $1 N=$2 file=$f wal=$w bytes_per_family=$(( (f + w) / ($2 + GRANTS) ))"
	else
		echo "size $1 N=$2 $(psql "$db" -Atc "SELECT 'families=' || pg_total_relation_size('families') || ' families_heap=' || pg_relation_size('families') || ' families_idx=' || pg_indexes_size('families') || ' auth_codes=' || pg_total_relation_size('auth_codes') || ' db=' || pg_database_size(current_database()) || ' rows=' || n || ' families_bytes_per_family=' || pg_total_relation_size('families') / n || ' bytes_per_family=' || (pg_total_relation_size('families') + pg_total_relation_size('auth_codes')) / n || ' db_bytes_per_family=' || pg_database_size(current_database()) / n FROM (SELECT count(*) AS n FROM families) c")"
	fi
}

drive() { # backend N label
	db=$(db_of "$1" "$2")
	t0=$(date +%s.%N)
	"$OAUTHD" --db "$db" --log-level warn serve --addr 127.0.0.1:$PORT >"$out/serve.log" 2>&1 &
	pid=$!
	trap 'kill $pid 2>/dev/null' EXIT
	i=0
	until curl -sf -o /dev/null http://127.0.0.1:$PORT/readyz; do
		i=$((i + 1)); [ $i -lt 12000 ] || { kill $pid; echo "serve did not start in 120 s"; return 1; }
		sleep 0.01
	done
	t1=$(date +%s.%N)
	rss0=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
	anon0=$(awk '/RssAnon/ {print $2}' /proc/$pid/status)
	cid=$(sed -n 's/.*"client_id": *"\([^"]*\)".*/\1/p' "$out/$1-$2.seed.json")
	sec=$(sed -n 's/.*"client_secret": *"\([^"]*\)".*/\1/p' "$out/$1-$2.seed.json")
	sets=all
	if [ -n "${HOT:-}" ]; then # split once: the first HOT chains, and the others
		[ -f "$out/$1-$2.hot.tok" ] || { head -n "$HOT" "$out/$1-$2.tok" >"$out/$1-$2.hot.tok"; tail -n +$((HOT + 1)) "$out/$1-$2.tok" >"$out/$1-$2.many.tok"; }
		sets="hot many"
	fi
	for c in 16 64; do
		for set in $sets; do
			f="$out/$1-$2.tok"; [ "$set" = all ] || f="$out/$1-$2.$set.tok"
			r=$("$OAUTHD_BENCH" --target http://127.0.0.1:$PORT/v2/auth/oauth2/token --client-id "$cid" --client-secret "$sec" \
				--tokens "$f" -c $c -d "$DUR" --json 2>/dev/null | tr -d '\n ')
			echo "run $1 N=$2 $3 c=$c chains=$set($(wc -l <"$f")) load=$(cut -d' ' -f1 /proc/loadavg) $r"
		done
	done
	rss1=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
	anon1=$(awk '/RssAnon/ {print $2}' /proc/$pid/status)
	file1=$(awk '/RssFile/ {print $2}' /proc/$pid/status)
	kill -TERM $pid; wait $pid || true
	echo "serve $1 N=$2 $3 startup_s=$(echo "$t1 - $t0" | bc) rss_start_kib=$rss0 rss_anon_start_kib=$anon0 rss_after_kib=$rss1 rss_anon_after_kib=$anon1 rss_file_after_kib=$file1"
}

drop() { # backend N: delete the database of N
	if [ "$1" = bolt ]; then rm -f "$out/bolt-$2.db" "$out/bolt-$2.db-wal"
	else psql "$PGURL/postgres" -qc "DROP DATABASE IF EXISTS scale_$2" >/dev/null; fi
}

backends=bolt
[ -n "${PGURL:-}" ] && backends="bolt pg"
backends=${BACKENDS:-$backends}
for n in $NS; do
	for b in $backends; do
		seed $b $n
		drive $b $n measured
		[ "$n" = 10000 ] || drive $b 10000 reference
		[ "${KEEP:-1}" = 1 ] || [ "$n" = 10000 ] || drop $b $n
	done
done
