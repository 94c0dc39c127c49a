#!/bin/sh
# The growth table of docs/PERFORMANCE.md "Growth with the number of
# families": per backend and N, seed N families (oauthd bench --emit-tokens
# --seed N --expire-share 0.1: the sweep is timed there), then time `serve`
# start-up on the seeded database, read its RSS, and drive refresh chains
# (c=16 and c=64, durable) through `bench --target`; after each N above
# 10,000 the 10,000 database is driven again (same-minutes reference).
#
#   OAUTHD=/path/to/oauthd PGURL=postgres://postgres@127.0.0.1:55432 \
#     NS="10000 100000 1000000" scripts/experiments/scale-growth.sh OUTDIR
#
# PGURL is a superuser URL of a running, durable (fsync=on,
# synchronous_commit=on) cluster on loopback; one database per N is created.
# Without PGURL only bbolt runs. SKIP_SEED=1 drives the databases an
# earlier run seeded in OUTDIR again (more reps). Output: OUTDIR/*.txt, one line per run on
# stdout.
set -eu
out=${1:?usage: scale-growth.sh OUTDIR}
mkdir -p "$out"
OAUTHD=${OAUTHD:-oauthd}
NS=${NS:-"10000 100000"}
DUR=${DUR:-10s}
PORT=${PORT:-18431}

db_of() { # backend N
	if [ "$1" = bolt ]; then echo "$out/bolt-$2.db"; else echo "$PGURL/scale_$2"; fi
}

seed() { # backend N
	[ -z "${SKIP_SEED:-}" ] || return 0
	db=$(db_of "$1" "$2")
	[ "$1" = pg ] && psql "$PGURL/postgres" -qc "DROP DATABASE IF EXISTS scale_$2" -c "CREATE DATABASE scale_$2" >/dev/null
	"$OAUTHD" --db "$db" bench --emit-tokens "$out/$1-$2.tok" --grants 64 --seed "$2" --expire-share 0.1 --json \
		>"$out/$1-$2.seed.json" 2>/dev/null
	echo "seed $1 N=$2 $(cat "$out/$1-$2.seed.json" | tr -d '\n ')"
	if [ "$1" = bolt ]; then
		echo "size $1 N=$2 file=$(stat -c %s "$db") wal=$(stat -c %s "$db-wal" 2>/dev/null || echo 0)"
	else
		echo "size $1 N=$2 $(psql "$db" -Atc "SELECT 'families=' || pg_total_relation_size('families') || ' families_heap=' || pg_relation_size('families') || ' families_idx=' || pg_indexes_size('families') || ' auth_codes=' || pg_total_relation_size('auth_codes') || ' db=' || pg_database_size(current_database()) || ' rows=' || (SELECT count(*) FROM families)")"
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
		i=$((i + 1)); [ $i -lt 3000 ] || { kill $pid; echo "serve did not start"; return 1; }
		sleep 0.01
	done
	t1=$(date +%s.%N)
	rss0=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
	cid=$(sed -n 's/.*"client_id": *"\([^"]*\)".*/\1/p' "$out/$1-$2.seed.json")
	sec=$(sed -n 's/.*"client_secret": *"\([^"]*\)".*/\1/p' "$out/$1-$2.seed.json")
	for c in 16 64; do
		r=$("$OAUTHD" bench --target http://127.0.0.1:$PORT/v2/auth/oauth2/token --client-id "$cid" --client-secret "$sec" \
			--tokens "$out/$1-$2.tok" -c $c -d "$DUR" --json 2>/dev/null | tr -d '\n ')
		echo "run $1 N=$2 $3 c=$c load=$(cut -d' ' -f1 /proc/loadavg) $r"
	done
	rss1=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
	anon1=$(awk '/RssAnon/ {print $2}' /proc/$pid/status)
	file1=$(awk '/RssFile/ {print $2}' /proc/$pid/status)
	kill -TERM $pid; wait $pid || true
	echo "serve $1 N=$2 $3 startup_s=$(echo "$t1 - $t0" | bc) rss_start_kib=$rss0 rss_after_kib=$rss1 rss_anon_after_kib=$anon1 rss_file_after_kib=$file1"
}

backends=bolt
[ -n "${PGURL:-}" ] && backends="bolt pg"
for n in $NS; do
	for b in $backends; do
		seed $b $n
		drive $b $n measured
		[ "$n" = 10000 ] || drive $b 10000 reference
	done
done
