package data

import (
	"cmp"
	"slices"
	"strings"

	"oauthd/data/ident"
)

// Identity rules every backend applies the same way (docs/IDENTITY.md):
// the keys of the unique user indexes, the clashes an upgrade finds among
// users stored under an earlier, weaker comparison, and the owner of a
// client stored as an email by an earlier release.

// UserKeys are the keys of u's unique indexes: [ident.Key] of the email
// and of the username ("" for none).
func UserKeys(u User) (email, username string) {
	return ident.Key(u.Email), ident.Key(u.Username)
}

// Clash is a user whose email or username has the same canonical form as
// an earlier user's (lower ID), found when a store upgrades its indexes to
// [ident.Key]. The earlier user keeps the identifier; UserID keeps its
// record, its ID and everything that belongs to it (clients, grants,
// sessions: all by ID), but is not found by that identifier. Nothing is
// merged. The operator sees it in the upgrade's log and in `users list`,
// and resolves it (gives the user another email, or disables one).
type Clash struct {
	UserID int64  // the later user, left out of the index
	HeldBy int64  // the earlier user, who keeps the identifier
	Field  string // "email" or "username"
	Value  string // UserID's identifier, as stored
}

// IndexUsers returns the unique indexes of us (key → user ID) and the
// clashes: users are taken in ID order and the first one with a key keeps
// it.
func IndexUsers(us []User) (email, username map[string]int64, clashes []Clash) {
	us = slices.Clone(us)
	slices.SortFunc(us, func(a, b User) int { return cmp.Compare(a.ID, b.ID) })
	email, username = map[string]int64{}, map[string]int64{}
	for _, u := range us {
		ek, nk := UserKeys(u)
		for _, ix := range []struct {
			m     map[string]int64
			k     string
			field string
			value string
		}{{email, ek, "email", u.Email}, {username, nk, "username", u.Username}} {
			if ix.k == "" {
				continue
			}
			if held, ok := ix.m[ix.k]; ok {
				clashes = append(clashes, Clash{UserID: u.ID, HeldBy: held, Field: ix.field, Value: ix.value})
				continue
			}
			ix.m[ix.k] = u.ID
		}
	}
	return email, username, clashes
}

// LegacyOwner is the field of a client record written before clients
// belonged to user IDs: the owner's email.
type LegacyOwner struct {
	Owner string `json:"owner"`
}

// ResolveLegacyOwner returns the user an earlier release's owner email
// names, among us: the user whose email is exactly owner (that release
// stored the user's email as it was spelled); else the one user whose
// email has owner's canonical form ([ident.Key]). When none or more than
// one does, it returns 0: the client is unclaimed ([Client.UnclaimedOwner])
// and no user, now or later, gets it by email.
func ResolveLegacyOwner(us []User, owner string) int64 {
	owner = strings.TrimSpace(owner)
	if owner == "" {
		return 0
	}
	for _, u := range us {
		if u.Email == owner {
			return u.ID
		}
	}
	var found int64
	k := ident.Key(owner)
	for _, u := range us {
		if ident.Key(u.Email) == k {
			if found != 0 {
				return 0 // two users: never guess
			}
			found = u.ID
		}
	}
	return found
}

// UpgradeClientOwner returns c with its owner resolved from the legacy
// owner email (see [ResolveLegacyOwner]); c is returned unchanged when it
// already has an owner ID or an unclaimed owner.
func UpgradeClientOwner(c Client, legacy string, us []User) Client {
	if c.OwnerID != 0 || c.UnclaimedOwner != "" {
		return c
	}
	if id := ResolveLegacyOwner(us, legacy); id != 0 {
		c.OwnerID = id
	} else {
		c.UnclaimedOwner = cmp.Or(strings.TrimSpace(legacy), "(none)")
	}
	return c
}
