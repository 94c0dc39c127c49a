// Package memory is an in-memory [data.Store] for tests and development.
// Every call runs under one mutex, so each call is one transaction; records
// are deep-copied in and out, and times are stored in UTC. Nothing survives
// [Store.Close]. Package memory knows nothing beyond package data.
package memory
