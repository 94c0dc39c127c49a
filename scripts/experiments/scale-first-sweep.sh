#!/bin/sh
# The bbolt rows at 10 M of docs/PERFORMANCE.md "Ten million families".
#
#   OAUTHD=./oauthd OAUTHD_BENCH=./oauthd-bench scripts/experiments/scale-first-sweep.sh DB TOKPREFIX SEED.json LABEL WINDOWS
#
# DB seeded by `oauthd-bench --db DB --emit-tokens TOKPREFIX.tok --grants 4096 --seed N --json >SEED.json`
# (no --expire-share: no sweep). Starts serve on a database seeded without a sweep
# (its code tombstones expire a minute after the seed), time start-up, drive the 64 hot chains and
# the others at c=16 and c=64 for 10 s each (before the first sweep, 60 s after start), read RSS,
# then 5 s windows at c=16 over the many chains while the first sweep runs; print the sweep's line.
set -eu
OAUTHD=${OAUTHD:-oauthd}                   # the product: go build ./cmd/oauthd
OAUTHD_BENCH=${OAUTHD_BENCH:-oauthd-bench} # the load generator: go build ./cmd/oauthd-bench
DB=$1 T=$2 SEED=$3 L=$4 W=$5
PORT=${PORT:-18441}
cid=$(sed -n 's/.*"client_id": *"\([^"]*\)".*/\1/p' "$SEED")
sec=$(sed -n 's/.*"client_secret": *"\([^"]*\)".*/\1/p' "$SEED")
[ -f "$T.hot.tok" ] || { head -n 64 "$T.tok" >"$T.hot.tok"; tail -n +65 "$T.tok" >"$T.many.tok"; }
t0=$(date +%s.%N)
"$OAUTHD" --db "$DB" --log-level info serve --addr 127.0.0.1:$PORT >"${TMPDIR:-/tmp}/serve-$L.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
until curl -sf -o /dev/null http://127.0.0.1:$PORT/readyz; do sleep 0.01; done
echo "$L startup_s=$(echo "$(date +%s.%N) - $t0" | bc) rss_anon_start_kib=$(awk '/RssAnon/ {print $2}' /proc/$pid/status)"
for c in 16 64; do for set in hot many; do
	r=$("$OAUTHD_BENCH" --target http://127.0.0.1:$PORT/v2/auth/oauth2/token --client-id "$cid" --client-secret "$sec" \
		--tokens "$T.$set.tok" -c $c -d 10s --json 2>/dev/null | tr -d '\n ')
	echo "$L c=$c set=$set t=$(echo "$(date +%s.%N) - $t0" | bc) load=$(cut -d' ' -f1 /proc/loadavg) $(echo "$r" | grep -o '"grants_per_s":[0-9.]*') $(echo "$r" | grep -o '"latency_ms":{[^}]*}') $(echo "$r" | grep -o '"errors":[0-9]*') $(echo "$r" | grep -o '"chains_alive":[0-9]*')"
done; done
echo "$L rss_kib=$(awk '/VmRSS/ {print $2}' /proc/$pid/status) rss_anon_kib=$(awk '/RssAnon/ {print $2}' /proc/$pid/status) rss_file_kib=$(awk '/RssFile/ {print $2}' /proc/$pid/status)"
for w in $(seq "$W"); do
	s=$(date +%s.%N)
	r=$("$OAUTHD_BENCH" --target http://127.0.0.1:$PORT/v2/auth/oauth2/token --client-id "$cid" --client-secret "$sec" \
		--tokens "$T.many.tok" -c 16 -d 5s --json 2>/dev/null | tr -d '\n ')
	echo "$L w=$w t=$(echo "$s - $t0" | bc) $(echo "$r" | grep -o '"grants_per_s":[0-9.]*') $(echo "$r" | grep -o '"latency_ms":{[^}]*}') $(echo "$r" | grep -o '"errors":[0-9]*')"
	if grep -q '"garbage collection"\|msg="garbage collection"' "${TMPDIR:-/tmp}/serve-$L.log" && [ "$w" -gt 2 ]; then break; fi
done
echo "$L rss_after_sweep_anon_kib=$(awk '/RssAnon/ {print $2}' /proc/$pid/status)"
kill -TERM $pid; wait $pid || true
grep "garbage collection" "${TMPDIR:-/tmp}/serve-$L.log" | grep -v "path=" | head -3 || echo "$L: no sweep finished"
