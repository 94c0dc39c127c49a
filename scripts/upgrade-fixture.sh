#!/usr/bin/env bash
# Regenerates the upgrade fixture of cmd/oauthd's TestUpgradeFromRelease
# (cmd/oauthd/testdata/upgrade/) with a release of oauthd:
#
#   scripts/upgrade-fixture.sh COMMIT            # builds oauthd at COMMIT (git archive) and uses it
#   OAUTHD=path/to/oauthd scripts/upgrade-fixture.sh COMMIT   # uses that binary, built from COMMIT
#
# The fixture is the database file and its write-ahead log (gzipped) as the
# release left them after a SIGKILL, and fixture.json with the credentials
# they hold. Make it with the release that is about to be replaced, commit
# it, and keep the test passing from then on: that is the upgrade promise.
set -euo pipefail
cd "$(dirname "$0")/.."

commit=${1:?usage: scripts/upgrade-fixture.sh COMMIT}
commit=$(git rev-parse --short "$commit")
out=cmd/oauthd/testdata/upgrade

bin=${OAUTHD:-}
if [ -z "$bin" ]; then
  src=$(mktemp -d)
  trap 'rm -rf "$src"' EXIT
  git archive "$commit" | tar -x -C "$src"
  (cd "$src" && go build -o "$src/oauthd" ./cmd/oauthd)
  bin=$src/oauthd
fi

rm -f "$out"/oauthd.db.gz "$out"/oauthd.db-wal.gz "$out"/fixture.json
go run ./scripts/upgradefixture -oauthd "$bin" -release "$commit" -out "$out"
ls -l "$out"
