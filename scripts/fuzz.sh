#!/usr/bin/env bash
# fuzz.sh runs every Go fuzz target of the module, one after the other, each
# for a bounded number of executions, and stops at the first failure.
#
#   scripts/fuzz.sh                 # every target, about 20s each on 2 cores
#   FUZZTIME=5s scripts/fuzz.sh     # a wall-clock budget instead (see below)
#   scripts/fuzz.sh FuzzMatch ...   # only the named targets
#
# The default budget is a count of executions per target (-fuzztime Nx),
# sized from the rate each target reaches on a 2-core machine so that each
# runs for about 20 s. A count, not a duration: with a duration, Go 1.26's
# fuzz coordinator can end a clean run with a bare "context deadline
# exceeded" failure and no failing input, when the deadline falls while a
# worker is busy (https://go.dev/issue/75804, fixed in Go 1.27); a count has
# no deadline to race. Minimizing a newly interesting input is capped at
# FUZZ_MINIMIZE so that it cannot eat the run.
#
# Environment:
#   FUZZTIME          budget for every target, passed to -fuzztime (Nx or a
#                     duration). Default: the per-target count below.
#   FUZZ_MINIMIZE     -fuzzminimizetime (a count or a duration). Default 30000x.
#   FUZZ_TIMEOUT      hard limit per target, build included, passed to
#                     go test -timeout. Default 5m.
#   FUZZ_PARALLEL     fuzzing workers per target (go test -parallel). Default:
#                     go's default (GOMAXPROCS).
#
# Targets are discovered from the source: every `func FuzzXxx(f *testing.F)`
# in a *_test.go file of a package of this module (directories that go
# ignores, such as testdata, vendor, _x and .x, are skipped). The total time
# is bounded by (number of targets) x FUZZ_TIMEOUT.
#
# On a failure the script prints the target, the package and the file go
# wrote the failing input to (pkg/testdata/fuzz/FuzzXxx/<hash>); commit that
# file with the fix, it becomes a regression case run by `go test`.
set -euo pipefail

cd "$(dirname "$0")/.."

FUZZTIME="${FUZZTIME:-}"
FUZZ_MINIMIZE="${FUZZ_MINIMIZE:-30000x}"

# budget prints the default -fuzztime of a target: about 20 s of its rate as
# measured on a 2-core machine with scripts/fuzz.sh (rates in execs/s).
budget() {
	case "$1" in
	FuzzSafeReturnTo) echo 80000x ;;         # ~4k/s
	FuzzDecodeFamily) echo 800000x ;;        # ~45k/s
	FuzzValidateRedirectURI) echo 200000x ;; # ~11k/s
	FuzzParseAuthorize) echo 250000x ;;      # ~15k/s
	FuzzParseTokenRequest) echo 180000x ;;   # ~9k/s
	FuzzMatch) echo 250000x ;;               # ~15k/s
	FuzzVerify) echo 180000x ;;              # ~9.5k/s
	*) echo 150000x ;;
	esac
}
FUZZ_TIMEOUT="${FUZZ_TIMEOUT:-5m}"
FUZZ_PARALLEL="${FUZZ_PARALLEL:-}"

# discover prints "pkgdir Name" for every fuzz target, sorted.
discover() {
	find . \( -type d \( -name testdata -o -name vendor -o -name '_*' -o -name '.?*' \) -prune \) \
		-o -type f -name '*_test.go' -print |
		while IFS= read -r file; do
			sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(\([a-zA-Z_][a-zA-Z0-9_]*\) \*testing\.F).*/\1/p' "$file" |
				while IFS= read -r name; do
					printf '%s %s\n' "$(dirname "$file")" "$name"
				done
		done | sort -u
}

mapfile -t targets < <(discover)
if [ "$#" -gt 0 ]; then
	wanted=" $* "
	selected=()
	for t in "${targets[@]}"; do
		case "$wanted" in *" ${t#* } "*) selected+=("$t") ;; esac
	done
	targets=("${selected[@]}")
fi
if [ "${#targets[@]}" -eq 0 ]; then
	echo "fuzz.sh: no fuzz targets found" >&2
	exit 1
fi

echo "fuzz.sh: ${#targets[@]} targets, FUZZTIME=${FUZZTIME:-per-target count} each"
parallel=()
if [ -n "$FUZZ_PARALLEL" ]; then
	parallel=(-parallel "$FUZZ_PARALLEL")
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
start=$SECONDS
for t in "${targets[@]}"; do
	pkg="${t% *}"
	name="${t#* }"
	fuzztime="${FUZZTIME:-$(budget "$name")}"
	echo "=== $name ($pkg) -fuzztime $fuzztime"
	t0=$SECONDS
	if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$FUZZ_MINIMIZE" \
		-timeout "$FUZZ_TIMEOUT" \
		"${parallel[@]}" "$pkg" >"$log" 2>&1; then
		# The last progress line has the total executions and the fuzzing
		# time; print those and the average rate.
		grep -E '^fuzz: elapsed' "$log" | tail -n 1 | awk -v name="$name" -v wall=$((SECONDS - t0)) '{
			el = $3; sub(/,$/, "", el); ex = $5; sub(/,$/, "", ex)
			secs = 0; t = el
			if (match(t, /[0-9]+h/)) { secs += 3600 * substr(t, RSTART, RLENGTH - 1) }
			if (match(t, /[0-9]+m/)) { secs += 60 * substr(t, RSTART, RLENGTH - 1) }
			if (match(t, /[0-9.]+s/)) { secs += substr(t, RSTART, RLENGTH - 1) }
			rate = secs > 0 ? int(ex / secs) : 0
			printf "--- ok %s (%ds with build): %s execs in %s, %d/sec\n", name, wall, ex, el, rate
		}' || echo "--- ok $name"
		continue
	fi
	cat "$log"
	echo "--- FAIL $name ($pkg)" >&2
	input="$(sed -n 's/.*Failing input written to \(testdata\/fuzz\/[^ ]*\).*/\1/p' "$log" | tail -n 1)"
	if [ -n "$input" ]; then
		echo "fuzz.sh: failing input written to ${pkg#./}/$input" >&2
		echo "fuzz.sh: reproduce with: go test -run '^${name}/$(basename "$input")\$' $pkg" >&2
	fi
	exit 1
done
echo "fuzz.sh: all ${#targets[@]} targets passed in $((SECONDS - start))s"
