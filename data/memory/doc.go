// Package memory is an in-memory [data.Store] for tests and development.
// Every call runs under one mutex, so each call is one transaction; records
// go in and come out through [data.Normalize] (deep copies, times in UTC),
// so that they read back as from a persistent backend. Nothing survives
// [Store.Close]. Package memory knows nothing beyond package data.
package memory
