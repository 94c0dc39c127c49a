// Package netsafe is the one outbound HTTP fetch of oauthd for addresses a
// client or user names (a client's jwks_uri, a client metadata
// document): https only, to public addresses only (checked on the address
// actually connected, after DNS, so a name that resolves to a private
// address, or re-resolves to one, is refused), no redirect followed, the
// body bounded in size and the whole fetch in time. The operator may
// allow private addresses (a test, or an internal deployment).
package netsafe
