// Package throttle is the one failure limiter of oauthd: the token
// endpoint's client authentication and the login page both count failed
// attempts with it.
//
// An attempt is counted when it starts ([Limiter.Reserve], before the
// secret or password is checked) against every key it falls under, and
// given back when it succeeds ([Reservation.Refund]): a flood of
// concurrent guesses cannot run more checks than the limit allows, and
// correct credentials never spend anyone's budget.
//
// The keys pair what was attacked with the source address: (client ID,
// address), (user ID, address), (unknown login name, address), and the
// address alone as a ceiling. Identifiers are public, so no key is an
// identifier alone: a flood from one address can never stop the holder of
// valid credentials at another.
//
// The counting lives behind [Counter]; [Memory] keeps it in a bounded map
// of this process. The package knows nothing of HTTP, OAuth or users.
package throttle
