#!/usr/bin/env bash
# bench.sh measures oauthd's refresh grant side by side with the bare Echo
# ceiling from ../shared/bench, interleaved, and prints each run and the
# median ratio. It is the command behind docs/PERFORMANCE.md's figures.
#
#   scripts/bench.sh                       # c=16 and c=64, 3 reps of 20 s
#   REPS=5 D=10s CS="16" scripts/bench.sh
#   BASELINE=/tmp/oauthd-old scripts/bench.sh   # also an older build, same runs
#   PEER=1 scripts/bench.sh                # also node's oidc-provider (npm ci first)
#
# Environment:
#   CS        concurrencies (space-separated). Default "16 64".
#   D         measured duration per run. Default 20s (plus WARMUP 2s).
#   REPS      interleaved repetitions. Default 3.
#   DBDIR     where the databases go (it must be a real disk for the
#             durability cost to count; tmpfs makes fsync free). Default: a
#             temporary directory under /var/tmp.
#   BENCH     the shared bench folder. Default ../shared/bench.
#   BASELINE  an older oauthd binary to run in the same rounds, for a
#             before/after ratio.
#   SERVE_ARGS extra arguments for `oauthd serve`.
#   PEER      1: also run the peer in $BENCH/peers/oidc-provider (copied to
#             the work folder and installed with npm ci; needs node and npm),
#             each run on a fresh peer process with fresh tokens.
#
# Each round, for each concurrency: the ceiling, then oauthd (then the
# baseline), each server alone on the machine while it is measured. Every
# oauthd run is on its own database seeded with `oauthd-bench --emit-tokens`
# and driven by the shared loadgen (client_secret_post, each worker on its own
# refresh-token chain). Zero errors and every chain alive are checked.
set -euo pipefail

cd "$(dirname "$0")/.."
CS="${CS:-16 64}"
D="${D:-20s}"
WARMUP="${WARMUP:-2s}"
REPS="${REPS:-3}"
BENCH="${BENCH:-../shared/bench}"
BASELINE="${BASELINE:-}"
SERVE_ARGS="${SERVE_ARGS:-}"
PEER="${PEER:-}"

if [ ! -d "$BENCH/loadgen" ] || [ ! -d "$BENCH/ceiling" ]; then
	echo "bench.sh: $BENCH/loadgen and $BENCH/ceiling are needed (set BENCH)" >&2
	exit 1
fi
work="$(mktemp -d "${DBDIR:-/var/tmp}/oauthd-bench.XXXXXX")"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

echo "bench.sh: building oauthd, oauthd-bench, loadgen and ceiling into $work" >&2
go build -o "$work/oauthd" ./cmd/oauthd
# The seeding (--emit-tokens) is the load generator's: its own build.
go build -o "$work/oauthd-bench" ./cmd/oauthd-bench
(cd "$BENCH/loadgen" && go build -o "$work/loadgen" .)
(cd "$BENCH/ceiling" && go build -o "$work/ceiling" .)
if [ -n "$PEER" ]; then
	echo "bench.sh: installing oidc-provider into $work/oidcp" >&2
	cp -r "$BENCH/peers/oidc-provider" "$work/oidcp"
	(cd "$work/oidcp" && npm ci --silent --no-audit --no-fund >/dev/null)
fi

port=18080
# wait_port waits until something listens on 127.0.0.1:$1.
wait_port() {
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	echo "bench.sh: nothing listens on port $1" >&2
	return 1
}

# loadgen_json runs the load generator and prints its JSON report.
loadgen_json() {
	"$work/loadgen" -json -d "$D" -warmup "$WARMUP" "$@"
}

# field extracts a numeric field from a flat JSON object on stdin.
field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

# run_ceiling C prints "ok/s p99".
run_ceiling() {
	local c=$1
	port=$((port + 1))
	"$work/ceiling" -kind echo -addr "127.0.0.1:$port" -lifetime 5m >/dev/null 2>&1 &
	local pid=$!
	pids+=("$pid")
	wait_port "$port"
	seq "$c" | sed 's/^/ceiling-token-/' >"$work/ceiling-tokens.txt"
	local out
	out="$(loadgen_json -url "http://127.0.0.1:$port/token" -client-id c -client-secret s \
		-tokens "$work/ceiling-tokens.txt" -c "$c")"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	echo "$(field ok_per_s <<<"$out") $(field p99_ms <<<"$out") 0 $c"
}

# run_oauthd BIN C prints "ok/s p99 errors chains_alive".
run_oauthd() {
	local bin=$1 c=$2
	port=$((port + 1))
	local db="$work/run-$port.db"
	local creds
	creds="$("$work/oauthd-bench" --db "$db" --log-level warn --emit-tokens "$work/tokens-$port.txt" \
		--grants "$c" --json 2>/dev/null)"
	local id secret
	id="$(field client_id <<<"$creds")"
	secret="$(field client_secret <<<"$creds")"
	# shellcheck disable=SC2086
	"$bin" --db "$db" --log-level warn serve --addr "127.0.0.1:$port" $SERVE_ARGS \
		>"$work/serve-$port.log" 2>&1 &
	local pid=$!
	pids+=("$pid")
	wait_port "$port"
	local out
	out="$(loadgen_json -url "http://127.0.0.1:$port/v2/auth/oauth2/token" -client-id "$id" \
		-client-secret "$secret" -auth post -tokens "$work/tokens-$port.txt" -c "$c")"
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null || true
	local errors
	errors="$(python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["requests"]-r["ok"])' <<<"$out")"
	echo "$(field ok_per_s <<<"$out") $(field p99_ms <<<"$out") $errors $(field live_chains <<<"$out")"
	rm -f "$db"
}

# run_peer C prints "ok/s p99 errors chains_alive" for oidc-provider.
run_peer() {
	local c=$1
	port=$((port + 1))
	(cd "$work/oidcp" && PORT=$port LIFETIME_S=600 exec node server.js >"$work/peer-$port.log" 2>&1) &
	local pid=$!
	pids+=("$pid")
	wait_port "$port"
	(cd "$work/oidcp" && ISSUER="http://127.0.0.1:$port" node get_tokens.mjs "$c") >"$work/peer-tokens-$port.txt"
	local out
	out="$(loadgen_json -url "http://127.0.0.1:$port/token" -client-id bench-client \
		-client-secret bench-secret-0123456789abcdef0123456789abcdef -auth post \
		-tokens "$work/peer-tokens-$port.txt" -c "$c")"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	local errors
	errors="$(python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["requests"]-r["ok"])' <<<"$out")"
	echo "$(field ok_per_s <<<"$out") $(field p99_ms <<<"$out") $errors $(field live_chains <<<"$out")"
}

results="$work/results.txt"
: >"$results"
for rep in $(seq "$REPS"); do
	for c in $CS; do
		read -r cr cp99 _ _ < <(run_ceiling "$c")
		read -r or op99 oerr oalive < <(run_oauthd "$work/oauthd" "$c")
		line="rep=$rep c=$c ceiling=$cr (p99 ${cp99}ms) oauthd=$or (p99 ${op99}ms, errors $oerr, chains $oalive/$c)"
		ratio="$(python3 -c "print(f'{$or/$cr:.3f}')")"
		line="$line ratio=$ratio"
		bratio=""
		if [ -n "$BASELINE" ]; then
			read -r br bp99 berr balive < <(run_oauthd "$BASELINE" "$c")
			bratio="$(python3 -c "print(f'{$br/$cr:.3f}')")"
			line="$line baseline=$br (p99 ${bp99}ms, errors $berr, chains $balive/$c) baseline_ratio=$bratio"
		fi
		pratio=""
		if [ -n "$PEER" ]; then
			read -r pr pp99 perr palive < <(run_peer "$c")
			pratio="$(python3 -c "print(f'{$pr/$cr:.3f}')")"
			line="$line oidc-provider=$pr (p99 ${pp99}ms, errors $perr, chains $palive/$c) peer_ratio=$pratio"
		fi
		echo "$line"
		echo "$c $cr $or $ratio $op99 $oerr $oalive ${bratio:-nan} ${pratio:-nan}" >>"$results"
	done
done

python3 - "$results" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for c in sorted({r[0] for r in rows}, key=int):
    rs = [r for r in rows if r[0] == c]
    med = lambda i: statistics.median(float(r[i]) for r in rs)
    line = (f"c={c}: median of {len(rs)}: ceiling {med(1):,.0f}/s, oauthd {med(2):,.0f}/s, "
            f"ratio {med(3):.3f} (runs {', '.join(r[3] for r in rs)}), oauthd p99 {med(4):.1f} ms, "
            f"errors {sum(int(r[5]) for r in rs)}, chains alive min {min(int(r[6]) for r in rs)}/{c}")
    if rs[0][7] != "nan":
        line += f", baseline ratio {med(7):.3f}"
    if rs[0][8] != "nan":
        line += f", oidc-provider ratio {med(8):.3f} (oauthd/oidc-provider {med(2)/statistics.median(float(r[1])*float(r[8]) for r in rs):.2f}x)"
    print(line)
EOF
