#!/usr/bin/env bash
# scripts/tour.sh: the README's install line and five-minute tour, run as a
# new user runs them, on a fresh clone of the committed tree, each step
# checked by its output. CI runs it through cmd/oauthd's TestTour, which
# also checks that every command of the README's tour ("    $ …" lines) is
# run here word for word.
#
# The browser's part (log in, Allow, copy the code) is played by
# scripts/browse. The README's addresses (127.0.0.1:8080 for serve,
# 127.0.0.1:8081 for the gateway) are replaced by free ports, so that the
# tour can run beside other servers.
#
#   scripts/tour.sh            # clones the repository's HEAD into a temp dir
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/oauthd-tour.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "tour: FAIL: $*" >&2; exit 1; }
serve_addr=127.0.0.1:8080
gateway_addr=127.0.0.1:8081
# ports rewrites the README's addresses to the ones this run uses.
ports() { sed -e "s/127\.0\.0\.1:8080/$serve_addr/g" -e "s/127\.0\.0\.1:8081/$gateway_addr/g" <<<"$1"; }
# step CMD WANT: runs the README's command CMD and checks that its output
# (stdout and stderr) matches the extended regular expression WANT.
step() {
  local cmd out
  cmd=$(ports "$1")
  echo "tour: \$ $1" >&2
  out=$(eval "$cmd" 2>&1) || fail "$1 exited $?: $out"
  grep -Eq -- "$2" <<<"$out" || fail "$1: output does not match /$2/:
$out"
  printf '%s\n' "$out"
}
# step_in WANT: step with the command on stdin (a quoted heredoc keeps it
# word for word as the README has it).
step_in() { step "$(cat)" "$1"; }
# field NAME TEXT: the value of a "name: value" line or a JSON string field.
field() {
  sed -nE -e "s/^$1:[[:space:]]+([^[:space:]]+).*/\1/p" -e "s/.*\"$1\":[[:space:]]*\"([^\"]+)\".*/\1/p" <<<"$2" | head -1
}
# started LOG REGEX: waits (at most 60 s) for a line of LOG matching REGEX
# and prints its first group.
started() {
  for _ in $(seq 600); do
    if m=$(sed -nE "s#.*$2.*#\1#p" "$1" | head -1) && [ -n "$m" ]; then echo "$m"; return; fi
    sleep 0.1
  done
  fail "no line matching /$2/ in $1:
$(cat "$1")"
}

# --- Install: a fresh clone, then the README's install line -------------------
git clone -q --no-checkout "$repo" "$work/oauthd"
git -C "$work/oauthd" checkout -q "$(git -C "$repo" rev-parse HEAD)"
cd "$work/oauthd"
step 'go build -o oauthd ./cmd/oauthd' '^$'
[ -x ./oauthd ] || fail "go build made no ./oauthd"
step './oauthd --help' 'oauthd serve --demo'

# --- 1. The demo --------------------------------------------------------------
echo 'tour: $ ./oauthd serve --demo' >&2
OAUTHD_ADDR=127.0.0.1:0 ./oauthd serve --demo >demo.out 2>serve.log &
pids+=($!)
serve_addr=$(started serve.log 'oauthd listening on http://([0-9.:]+)')
demo=$(cat demo.out)
grep -q 'Demo user:      demo@example.com (username demo), password demo-password-123' <<<"$demo" || fail "demo banner: $demo"
grep -q 'exchange it within 1 minute' <<<"$demo" || fail "the demo banner does not say the code's lifetime: $demo"
auth_url=$(sed -n 's/^   \(http:.*\/auth\/oauth2\/authorize?.*\)$/\1/p' <<<"$demo")
[ -n "$auth_url" ] || fail "no authorization URL in the banner: $demo"
redirect=$(go run ./scripts/browse "$auth_url" demo@example.com demo-password-123)
CODE=$(sed -nE 's/.*[?&]code=([^&]+).*/\1/p' <<<"$redirect")
[ -n "$CODE" ] || fail "no code in the redirect $redirect"
# The banner's curl, with the code pasted in.
exchange=$(sed -n '/^   curl -s .*\/v2\/auth\/oauth2\/token/,/code=PASTE_CODE_HERE/p' <<<"$demo" | sed 's/PASTE_CODE_HERE/'"$CODE"'/')
out=$(eval "$exchange") || fail "the banner's curl failed: $out"
grep -q '"token_type":"bearer"' <<<"$out" && grep -q '"expires_in":1800' <<<"$out" || fail "the banner's exchange: $out"
ACCESS_TOKEN=$(field access_token "$out")
out=$(curl -s -H "Authorization: Bearer $ACCESS_TOKEN" "http://$serve_addr/v2/me")
grep -q '"email":"demo@example.com"' <<<"$out" || fail "/v2/me with the demo's token: $out"

# --- 2. A client of your own ------------------------------------------------------
step "printf '%s' 'a long password' | ./oauthd users add --email ann@example.com --username ann --name 'Ann Lee' --password-stdin" 'ann@example.com'
out=$(step "./oauthd clients create --owner ann@example.com --name 'My App' --redirect-uri http://127.0.0.1:9999/callback --scope PROFILE_READ,BOOKING_READ" 'status: +pending')
CLIENT_ID=$(field client_id "$out")
CLIENT_SECRET=$(field client_secret "$out")
[ -n "$CLIENT_ID" ] && [ -n "$CLIENT_SECRET" ] || fail "no client_id or client_secret in: $out"
step './oauthd clients approve "$CLIENT_ID"' 'approved'
redirect=$(go run ./scripts/browse "http://$serve_addr/auth/oauth2/authorize?response_type=code&client_id=$CLIENT_ID&redirect_uri=http://127.0.0.1:9999/callback&scope=PROFILE_READ+BOOKING_READ&state=tour" ann 'a long password')
CODE=$(sed -nE 's/.*[?&]code=([^&]+).*/\1/p' <<<"$redirect")
grep -q 'state=tour' <<<"$redirect" && [ -n "$CODE" ] || fail "no code in the redirect $redirect"
out=$(step 'curl -s -u "$CLIENT_ID:$CLIENT_SECRET" http://127.0.0.1:8080/v2/auth/oauth2/token -d grant_type=authorization_code -d code="$CODE" --data-urlencode redirect_uri=http://127.0.0.1:9999/callback' '"scope":"PROFILE_READ BOOKING_READ"')
ACCESS_TOKEN=$(field access_token "$out")
REFRESH_TOKEN=$(field refresh_token "$out")
step 'curl -s -H "Authorization: Bearer $ACCESS_TOKEN" http://127.0.0.1:8080/v2/me' '"email":"ann@example.com"'
out=$(step 'curl -s -u "$CLIENT_ID:$CLIENT_SECRET" http://127.0.0.1:8080/v2/auth/oauth2/token -d grant_type=refresh_token -d refresh_token="$REFRESH_TOKEN"' '"refresh_token":"oauthd_rt_')
ACCESS_TOKEN=$(field access_token "$out")
REFRESH_TOKEN=$(field refresh_token "$out")
step './oauthd clients show "$CLIENT_ID"' 'My App'
step './oauthd keys list' 'active'

# --- 3. The gateway -----------------------------------------------------------------
echo 'tour: $ ./oauthd gateway --listen 127.0.0.1:8081 --upstream http://127.0.0.1:8080 --issuer http://127.0.0.1:8080 --public-url http://127.0.0.1:8081' >&2
gateway_addr=127.0.0.1:0
eval "exec $(ports './oauthd gateway --listen 127.0.0.1:8081 --upstream http://127.0.0.1:8080 --issuer http://127.0.0.1:8080 --public-url http://127.0.0.1:8081')" 2>gateway.log &
pids+=($!)
gateway_addr=$(started gateway.log 'gateway listening.* addr=([0-9.:]+)')
step "curl -s -o /dev/null -w '%{http_code}\n' http://127.0.0.1:8081/v2/me" '^401$'
step 'curl -s -H "Authorization: Bearer $ACCESS_TOKEN" http://127.0.0.1:8081/v2/me' '"email":"ann@example.com"'
step 'curl -s -H "Authorization: Bearer $ACCESS_TOKEN" http://127.0.0.1:8081/v2/schedules' 'insufficient_scope.*SCHEDULE_READ|SCHEDULE_READ.*insufficient_scope'
step_in '^404$' <<'CMD'
curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $ACCESS_TOKEN" http://127.0.0.1:8081/v2/bookings
CMD
step 'curl -s -u "$CLIENT_ID:$CLIENT_SECRET" http://127.0.0.1:8080/v2/auth/oauth2/revoke -d token="$REFRESH_TOKEN"' '^$'
# The API behind the gateway (oauthd, which has no /v2/bookings) never
# sees the token again: the gateway refuses it by itself once its feed
# names the grant.
for i in $(seq 60); do
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ACCESS_TOKEN" "http://$gateway_addr/v2/bookings")
  [ "$code" = 401 ] && break
  [ "$code" = 404 ] || fail "the gateway answered $code for the revoked grant's token; want 404 (forwarded), then 401"
  sleep 0.1
done
[ "$code" = 401 ] || fail "the gateway still forwards the revoked grant's token after 6 s"
echo "tour: the gateway refused the revoked grant after $((i * 100)) ms" >&2

# --- Stop ---------------------------------------------------------------------------
for p in "${pids[@]}"; do kill -INT "$p"; done
for p in "${pids[@]}"; do wait "$p" || fail "a server exited $? on Ctrl-C"; done
pids=()
[ ! -e oauthd.db.sock ] || fail "serve left its admin socket behind"
echo "tour: every step of the README's tour worked" >&2
