#!/bin/sh
# docs/PERFORMANCE.md "Growth with the number of families", Memory: serve's
# RSS on a seeded bbolt file at start and after one c=64 run, and the same
# on a copy compacted by `oauthd store compact` (no free pages).
#
#   OAUTHD=/path/to/oauthd OAUTHD_BENCH=/path/to/oauthd-bench N=1000000 scripts/experiments/rss-free-pages.sh OUTDIR
set -eu
out=${1:?usage: rss-free-pages.sh OUTDIR}
mkdir -p "$out"
OAUTHD=${OAUTHD:-oauthd}                   # the product: go build ./cmd/oauthd
OAUTHD_BENCH=${OAUTHD_BENCH:-oauthd-bench} # the load generator: go build ./cmd/oauthd-bench
N=${N:-10000}
PORT=${PORT:-18531}
DPORT=${DPORT:-16531}
db=$out/bolt-$N.db
[ -f "$db" ] || "$OAUTHD_BENCH" --db "$db" --emit-tokens "$out/$N.tok" --grants 64 --seed "$N" --expire-share 0.1 --json >"$out/$N.seed.json" 2>/dev/null
cp "$db" "$out/compact-$N.db"
cp "$db-wal" "$out/compact-$N.db-wal" 2>/dev/null || true
echo "compact N=$N $("$OAUTHD" --db "$out/compact-$N.db" store compact --json | tr -d '\n ')"
cid=$(sed -n 's/.*"client_id": *"\([^"]*\)".*/\1/p' "$out/$N.seed.json")
sec=$(sed -n 's/.*"client_secret": *"\([^"]*\)".*/\1/p' "$out/$N.seed.json")
for f in "$db" "$out/compact-$N.db"; do
	"$OAUTHD" --db "$f" --log-level warn serve --addr 127.0.0.1:$PORT --debug-addr 127.0.0.1:$DPORT >"$out/serve.log" 2>&1 &
	pid=$!
	i=0
	until curl -sf -o /dev/null http://127.0.0.1:$PORT/readyz; do
		i=$((i + 1)); [ $i -lt 3000 ] || { kill $pid; echo "serve did not start"; exit 1; }
		sleep 0.01
	done
	s0=$(grep -E 'RssAnon|RssFile' /proc/$pid/status | tr -s ' \t\n' ' ')
	"$OAUTHD_BENCH" --target http://127.0.0.1:$PORT/v2/auth/oauth2/token --client-id "$cid" --client-secret "$sec" \
		--tokens "$out/$N.tok" -c 64 -d 10s --json >/dev/null 2>&1
	s1=$(grep -E 'RssAnon|RssFile' /proc/$pid/status | tr -s ' \t\n' ' ')
	curl -s -o "$out/$(basename "$f").heap.pb.gz" http://127.0.0.1:$DPORT/debug/pprof/heap
	kill -TERM $pid; wait $pid || true
	echo "rss $(basename "$f") start: $s0 after c=64 10s: $s1"
done
rm -f "$out/compact-$N.db" "$out/compact-$N.db-wal"
