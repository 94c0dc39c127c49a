#!/bin/sh
# The refreshes while `serve` sweeps (docs/PERFORMANCE.md "The expiry sweep
# on bbolt"): on a database seeded without a sweep,
#
#   oauthd-bench --db DB --emit-tokens TOKS --grants 64 --seed 1000000 --json >SEED.json
#
# every seeded code's tombstone expires a minute later, so serve's first
# sweep (60 s after it starts) removes all of them. This starts serve
# (--log-level info: the sweep's line, and every request's), prints its
# start-up time, then drives the 64 chains at c=16 in 26 windows of 5 s
# (the first sweep falls in window 12 or 13, the second, with nothing left
# to remove, about 60 s later) and prints each window's rate and latency.
#
#   OAUTHD=./oauthd OAUTHD_BENCH=./oauthd-bench scripts/experiments/sweep-under-load.sh DB TOKS SEED.json LABEL
set -eu
OAUTHD=${OAUTHD:-oauthd}                   # the product: go build ./cmd/oauthd
OAUTHD_BENCH=${OAUTHD_BENCH:-oauthd-bench} # the load generator: go build ./cmd/oauthd-bench
DB=$1 TOK=$2 SEED=$3 L=$4
PORT=${PORT:-18437}
cid=$(sed -n 's/.*"client_id": *"\([^"]*\)".*/\1/p' "$SEED")
sec=$(sed -n 's/.*"client_secret": *"\([^"]*\)".*/\1/p' "$SEED")
t0=$(date +%s.%N)
"$OAUTHD" --db "$DB" --log-level info serve --addr 127.0.0.1:$PORT >"/tmp/sweep-serve-$L.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
i=0
until curl -sf -o /dev/null http://127.0.0.1:$PORT/readyz; do
	i=$((i + 1)); [ $i -lt 60000 ] || { echo "serve did not start"; exit 1; }
	sleep 0.01
done
echo "$L startup_s=$(echo "$(date +%s.%N) - $t0" | bc)"
for w in $(seq 26); do
	s=$(date +%s.%N)
	r=$("$OAUTHD_BENCH" --target http://127.0.0.1:$PORT/v2/auth/oauth2/token --client-id "$cid" --client-secret "$sec" \
		--tokens "$TOK" -c 16 -d 5s --json 2>/dev/null | tr -d '\n ')
	echo "$L w=$w t=$(echo "$s - $t0" | bc) $(echo "$r" | grep -o '"grants_per_s":[0-9.]*') $(echo "$r" | grep -o '"latency_ms":{[^}]*}') $(echo "$r" | grep -o '"errors":[0-9]*')"
done
kill -TERM $pid; wait $pid || true
grep "garbage collection" "/tmp/sweep-serve-$L.log" || echo "$L: no sweep finished"
