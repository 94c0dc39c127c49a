// Package wiring is what the two commands, oauthd (cmd/oauthd) and the
// load generator oauthd-bench (cmd/oauthd-bench), both run: serve's
// settings and their checks (ServeOptions), the server wired as `oauthd
// serve` wires it (Wire, docs/DESIGN.md "serve wiring"), the gateway wired
// as `oauthd gateway` wires it (GatewayConfig.Build), tracing, and the
// readers of the global settings (the logger, the master key, the
// environment). Wiring only: the rules live in the packages it wires.
package wiring
