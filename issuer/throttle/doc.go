// Package throttle is the one failure limiter of oauthd: the token
// endpoint's client authentication and the login page both count failed
// attempts with it.
//
// Before an expensive check (a password), an attempt is counted when the
// check starts ([Limiter.Reserve]) against every key it falls under, and
// given back when it succeeds ([Reservation.Refund]): a flood of
// concurrent guesses cannot run more checks than the limit allows, and
// correct credentials never keep anyone's budget. Before a cheap check (a
// client secret's hash), [Limiter.Check] refuses a limited key and
// [Limiter.Fail] counts a failure, so that a client's own concurrent
// requests never hold each other's budget.
//
// The keys pair what was attacked with the source address: (client ID,
// address), (user ID, address), (unknown login name, address), and the
// address alone as a ceiling. Identifiers are public, so no key is an
// identifier alone: a flood from one address can never stop the holder of
// valid credentials at another.
//
// The counting lives behind [Counter]; [Memory] keeps it in a bounded map
// of this process. With [Shared], several replicas count the failures in
// one [Store] (PostgreSQL) and each mirrors the keys with failures, so a
// budget holds across replicas while the success path stays in memory; an
// expensive attempt under a key with failures (or beside another attempt
// of the key in this process) is held in the Store before it runs
// ([Hold]), so that the replicas together run no more of them than the
// budget has room for, plus one each.
// The package knows nothing of HTTP, OAuth or users.
package throttle
