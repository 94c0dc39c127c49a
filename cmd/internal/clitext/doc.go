// Package clitext is how cmd's commands (oauthd, oauthd-bench) print text:
// every value escaped (Escape), so that what the operator reads is what
// the record is.
package clitext
