// Package backend is cmd's one backend boundary (docs/DESIGN.md "One
// backend boundary"): backend.go is the only file of cmd that imports a
// backend package or knows which one runs. Every command (oauthd's and
// oauthd-bench's) opens --db with Open and uses what the database offers
// (metrics, audit trail, shared throttle, change feed) without asking which
// backend it is. TestOneBackendBoundary keeps it so.
//
// To add a backend: give its package an Open, write its entry in
// backend.go (schemes, its opener) and run data/datatest's suite in its
// package.
package backend
