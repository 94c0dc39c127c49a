// Package e2e holds oauthd's end-to-end suites: tests that build the real
// binary once (TestMain, serve_test.go), start it (`oauthd serve`,
// `oauthd gateway`, several replicas on one PostgreSQL database) and drive
// it only from outside: its command line, HTTP, a headless browser
// (chromedp) and the npm OAuth/OpenID clients. They never call package
// main: the unit tests of the commands stay beside them in cmd/oauthd.
//
// `go test -short` skips the whole package in one line (they build and
// start the binary). docs/DESIGN.md "Where a test goes" says which tests
// belong here; the shared helpers keep the names they had in package main
// (startServe, startE2E, mustOauthd, oneJSON, …), so a test file moves
// here with `git mv` and its package line, nothing else.
//
// The package has no non-test code; this file is its documentation.
package e2e
