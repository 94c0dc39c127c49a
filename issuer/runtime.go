package issuer

// MemoryBase is the heap the server needs besides its password checks:
// the base of its soft memory limit (oauthd/data/password.MemoryLimit
// adds the checks' share). The token endpoint's heap stays far below it,
// so the limit never binds the hot path; it only makes the collector keep
// up with the password checks' garbage.
const MemoryBase = 64 << 20
