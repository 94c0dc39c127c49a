package issuer

// GCPercent is the garbage collector's target percentage the server runs
// with (cmd/oauthd sets it unless the operator set GOGC or GOMEMLIMIT). The
// server's live heap is small (a few MiB: keys, cached clients,
// connections), so at Go's default of 100 the heap goal stays near the
// 4 MiB minimum and a token grant's ~14 KiB of short-lived garbage (most
// of it ECDSA signing and the store's per-commit buffers) starts a
// collection every few hundred grants: ~55 collections/s under load. At
// 400 the heap may grow to five times the live heap (RSS was 39 MiB after
// a million grants, 26 MiB at 100) and the token endpoint needs ~25% less
// CPU per grant (docs/PERFORMANCE.md, "What made it faster").
const GCPercent = 400

// MemoryBase is the heap the server needs besides its password checks:
// the base of its soft memory limit (oauthd/data/password.MemoryLimit
// adds the checks' share). The token endpoint's heap at [GCPercent] stays
// far below it, so the limit never binds the hot path; it only makes the
// collector keep up with the password checks' garbage.
const MemoryBase = 64 << 20
