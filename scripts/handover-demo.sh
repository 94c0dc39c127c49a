#!/usr/bin/env bash
# scripts/handover-demo.sh: docs/LOGIN-HANDOVER.md's "try it on one machine".
# The login handover with the platform example (docs/examples/platform) and
# `oauthd serve` on one machine, the pages on another host name than the API
# (http://localhost:8080 and http://127.0.0.1:8080), as in production.
#
# It builds both programs first (with `go run`, the platform would still be
# compiling when serve starts, and serve, which fetches the platform's keys
# at start, would exit), starts the platform and waits until it publishes
# its keys, starts serve and waits until it is ready (/readyz), makes an
# approved client and prints its authorization URL and the command that
# exchanges the code. Everything lives in a temporary directory, removed
# when the script ends (Ctrl-C, or either server exiting). cmd/oauthd/e2e's
# TestHandoverDemoScript runs it and signs in through it.
#
#   scripts/handover-demo.sh
#   SERVE_PORT=8080 PLATFORM_PORT=9090 scripts/handover-demo.sh   (the defaults)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
oauthd_port=${SERVE_PORT:-8080}
platform_port=${PLATFORM_PORT:-9090}
work=$(mktemp -d "${TMPDIR:-/tmp}/oauthd-handover.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
say() { echo "handover-demo: $*" >&2; }
fail() { say "FAIL: $*"; exit 1; }
command -v curl >/dev/null || fail "curl is needed (apt-get install curl)"

say "building oauthd and the platform example in $work"
(cd "$repo" && go build -o "$work/oauthd" ./cmd/oauthd && go build -o "$work/platform" ./docs/examples/platform)
cd "$work"

base=http://127.0.0.1:$oauthd_port      # oauthd's --base-url: the API, the issuer
app=http://localhost:$oauthd_port       # oauthd's --app-url: the pages
platform=http://127.0.0.1:$platform_port

# ready URL PID LOG: waits (at most 60 s) until URL answers 200; fails,
# showing LOG, when the process PID has exited or the time is up.
ready() {
  for _ in $(seq 600); do
    curl -sf -o /dev/null "$1" && return
    kill -0 "$2" 2>/dev/null || fail "it exited before $1 answered:
$(cat "$3")"
    sleep 0.1
  done
  fail "$1 did not answer within 60 s:
$(cat "$3")"
}

./platform -addr "127.0.0.1:$platform_port" -issuer "$platform" \
  -oauthd-base-url "$base" -oauthd-app-url "$app" 2>platform.log &
pids+=($!)
ready "$platform/.well-known/jwks.json" "$!" platform.log
say "the platform is up at $platform"

./oauthd serve --db oauthd.db --addr "127.0.0.1:$oauthd_port" --base-url "$base" --app-url "$app" \
  --login-url "$platform/login" --login-issuer "$platform" \
  --login-jwks "$platform/.well-known/jwks.json" 2>serve.log &
pids+=($!)
ready "$base/readyz" "$!" serve.log
say "oauthd is up at $base (pages at $app)"

# A client to sign in to, owned by a user of oauthd's own.
printf '%s' 'a long password' | ./oauthd --db oauthd.db users add --email dev@example.com --username dev \
  --name 'Dev Eloper' --password-stdin >/dev/null
out=$(./oauthd --db oauthd.db clients create --owner dev@example.com --name 'Handover Demo' \
  --redirect-uri http://127.0.0.1:9999/callback --scope PROFILE_READ --json)
client_id=$(sed -nE 's/.*"client_id": *"([^"]+)".*/\1/p' <<<"$out" | head -1)
client_secret=$(sed -nE 's/.*"client_secret": *"([^"]+)".*/\1/p' <<<"$out" | head -1)
[ -n "$client_id" ] && [ -n "$client_secret" ] || fail "no client_id or client_secret in: $out"
./oauthd --db oauthd.db clients approve "$client_id" >/dev/null

cat <<EOF
Open in a browser (on localhost: the pages' host, where the sign-in starts and ends):

  $app/auth/oauth2/authorize?response_type=code&client_id=$client_id&redirect_uri=http://127.0.0.1:9999/callback&scope=PROFILE_READ&state=demo

oauthd sends you to the platform: sign in as pat@platform.example, password "platform password",
then Allow. The browser ends on http://127.0.0.1:9999/callback?code=… (nothing listens there);
exchange the code within a minute:

  curl -s -u '$client_id:$client_secret' $base/v2/auth/oauth2/token -d grant_type=authorization_code -d code=PASTE_CODE_HERE --data-urlencode redirect_uri=http://127.0.0.1:9999/callback

Ctrl-C stops both servers.
EOF

set +e
wait -n "${pids[@]}"
fail "a server exited ($?):
$(tail -5 platform.log serve.log)"
