// Package loadgen is the load generator behind oauthd-bench
// (cmd/oauthd-bench; the product binary links none of it): it drives a
// token endpoint (refresh-token chains, authorization_code exchanges), an
// in-process check (access-token verification against the raw signature
// check) or HTTP proxies (the gateway against bare reverse proxies) for a
// duration, and reports what it measured: rates, latency percentiles from
// a log-linear [Histogram], errors by status, refresh chains alive.
//
// Refresh chains to an http:// endpoint use a lean keep-alive HTTP/1.1
// client (lean.go), so that the generator, which shares the server's
// cores, takes little of them; https:// and the other drivers use
// net/http's client. It speaks only HTTP and calls only the functions it
// is given: it builds
// no server, seeds nothing and imports no oauthd package. What it drives
// (the in-process server, its seeded grants and codes, the proxies) is
// wired by cmd/oauthd-bench's own files, and only there. Its reports are
// plain structs whose JSON names are the contract of `oauthd-bench --json`
// (scripts/bench*.sh parse them); WriteText
// prints the human form. Every run stops by itself: at its duration, when
// ctx is done, or when its work runs out; requests in flight at the end
// are completed, never cancelled, so no rotated refresh token is lost. It
// drives loopback servers only ([CheckLoopback]).
package loadgen
