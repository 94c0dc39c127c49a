package admin

import (
	"context"
	"errors"
	"strings"
	"testing"

	"oauthd/data"
	"oauthd/data/password"
)

// badIdentity is issue 31's table of what no new user may hold: the field
// it goes in and the words the refusal must say. The e2e suite sends the
// same kinds of value through the CLI and the handover.
var badIdentity = []struct {
	name, field, value, want string
}{
	{"username plus one", "username", "+1", "reads as a user ID"},
	{"username plus zeros", "username", "+0002", "reads as a user ID"},
	{"username minus zero", "username", "-0", "reads as a user ID"},
	{"username leading zeros", "username", "007", "names a user ID"},
	{"username beyond int64", "username", "-99999999999999999999", "reads as a user ID"},
	{"username fullwidth plus one", "username", "\uff0b\uff11", "not a valid username"},
	{"username like the help option", "username", "-h", "starts with -"},
	{"username with a fullwidth at", "username", "ann\uff20plat.test", "reads as an email address"},
	{"username combining grapheme joiner", "username", "s\u034fam", "U+034F"},
	{"username tag character", "username", "sam\U000e0041", "U+E0041"},
	{"email combining grapheme joiner", "email", "sa\u034fm@plat.test", "U+034F"},
	{"email variation selector", "email", "sam\ufe0f@plat.test", "U+FE0F"},
	{"email hangul filler", "email", "sam\u3164@plat.test", "U+3164"},
	{"email tag character", "email", "sam\U000e0041@plat.test", "U+E0041"},
	{"email soft hyphen in the domain", "email", "sam@pla\u00adt.test", "U+00AD"},
	{"email braille blank", "email", "sam\u2800@plat.test", "U+2800"},
	{"email no-break space", "email", "sam\u00a0@plat.test", "U+00A0"},
	{"name hangul fillers only", "name", "\u3164\u3164", "U+3164"},
	{"name braille blank only", "name", "\u2800", "no visible character"},
	{"name combining marks only", "name", "\u0301\u0301", "no visible character"},
	{"name tag characters", "name", "Pat\U000e0041\U000e0042", "U+E0041"},
	{"name variation selector", "name", "Pat \u2764\ufe0f", "U+FE0F"},
	{"name ZWJ between Latin letters", "name", "Pa\u200dt", "U+200D"},
	{"name emoji ZWJ sequence", "name", "\U0001f469\u200d\U0001f4bb", "U+200D"},
	{"time zone Local", "time_zone", "Local", "not an IANA time zone"},
	{"time zone localtime", "time_zone", "localtime", "not an IANA time zone"},
	{"time zone posixrules", "time_zone", "posixrules", "not an IANA time zone"},
	{"time zone path", "time_zone", "../../../etc/localtime", "not an IANA time zone"},
	{"time zone absolute path", "time_zone", "/etc/localtime", "not an IANA time zone"},
	{"time zone trailing space", "time_zone", "Europe/Berlin ", "not an IANA time zone"},
	{"time zone lower case", "time_zone", "europe/berlin", "not an IANA time zone"},
}

// withField is a valid new user with field set to value.
func withField(field, value string) (email, username, name, tz string) {
	email, username, name, tz = "new@plat.test", "newbie", "New Person", "Europe/Berlin"
	switch field {
	case "email":
		email = value
	case "username":
		username = value
	case "name":
		name = value
	case "time_zone":
		tz = value
	}
	return
}

// TestNewUserIdentifierRules: every row of badIdentity is refused by
// users add and by users import (which names the line), and nothing is
// stored; the good neighbours of each rule pass.
func TestNewUserIdentifierRules(t *testing.T) {
	hash, err := password.Hash("a long password")
	if err != nil {
		t.Fatal(err)
	}
	both(t, func(t *testing.T, e env) {
		ctx := context.Background()
		for _, tc := range badIdentity {
			t.Run(tc.name, func(t *testing.T) {
				email, username, name, tz := withField(tc.field, tc.value)
				_, err := e.svc.AddUser(ctx, NewUser{Email: email, Username: username, Name: name, TimeZone: tz, Password: "a long password"})
				if !errors.Is(err, data.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("users add with %s %q: %v; want ErrInvalid saying %q", tc.field, tc.value, err, tc.want)
				}
				_, err = e.svc.ImportUsers(ctx, []ImportUser{
					{Line: 3, Email: email, Username: username, Name: name, TimeZone: tz, PasswordHash: hash},
				})
				if !errors.Is(err, data.ErrInvalid) || !strings.Contains(err.Error(), "line 3: ") || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("users import with %s %q: %v; want line 3 named, saying %q", tc.field, tc.value, err, tc.want)
				}
			})
		}
		if us, err := e.store.ListUsers(ctx); err != nil || len(us) != 0 {
			t.Fatalf("after the refusals the store holds %d users (%v); want none", len(us), err)
		}
		for i, ok := range []struct{ field, value string }{
			{"username", "+"}, {"username", "a1"}, {"username", "0x1"}, {"username", "1_000"},
			{"name", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"}, {"name", "\u0915\u094d\u200d\u0937"},
			{"name", "Pat\u2800Doe"}, {"name", "..."}, {"time_zone", "UTC"}, {"time_zone", "Etc/GMT+5"}, {"time_zone", "America/Argentina/Buenos_Aires"},
		} {
			email, username, name, tz := withField(ok.field, ok.value)
			email = strings.Replace(email, "new@", "new"+string(rune('a'+i))+"@", 1)
			if ok.field != "username" {
				username += string(rune('a' + i))
			}
			if _, err := e.svc.AddUser(ctx, NewUser{Email: email, Username: username, Name: name, TimeZone: tz, Password: "a long password"}); err != nil {
				t.Errorf("users add with %s %q: %v; want it accepted", ok.field, ok.value, err)
			}
		}
	})
}

// TestUserArgumentReadsIDs: a USER argument with a sign or leading zeros
// is an ID, never a username; a number beyond any ID names no user.
func TestUserArgumentReadsIDs(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		ctx := context.Background()
		one := addDev(t, e.svc)
		for _, ref := range []string{"1", "+1", "001", "+0001", " 1 "} {
			v, err := e.svc.DisableUser(ctx, ref)
			if err != nil || v.ID != one.ID {
				t.Errorf("users disable %q = %+v, %v; want user %d", ref, v, err, one.ID)
			}
		}
		for _, ref := range []string{"-0", "-1", "+2", "99999999999999999999"} {
			if _, err := e.svc.EnableUser(ctx, ref); !errors.Is(err, data.ErrNotFound) {
				t.Errorf("users enable %q: %v; want not found", ref, err)
			}
		}
	})
}

// TestListUsersReportsRefusedIdentifiers: identifiers stored before the
// rules of issue 31 (written to the store directly, as an earlier release
// did) are named by users list with the reason, and changed in nothing:
// the user "+1" is still found by its email, and "+1" still names user 1.
func TestListUsersReportsRefusedIdentifiers(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		ctx := context.Background()
		first := addDev(t, e.svc)
		old := []data.User{
			{Email: "plus@plat.test", Username: "+1", Name: "Plus", TimeZone: "UTC"},
			{Email: "sa\u034fm@plat.test", Username: "sam", Name: "\u3164\u3164", TimeZone: "Local"},
			{Email: "tag@plat.test", Name: "Tag\U000e0041", TimeZone: "Europe/Berlin"},
		}
		stored := make([]data.User, len(old))
		for i, u := range old {
			u.CreatedAt = t0
			var err error
			if stored[i], err = e.store.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		us, err := e.svc.ListUsers(ctx)
		if err != nil || len(us) != 4 {
			t.Fatalf("ListUsers = %d users, %v; want 4", len(us), err)
		}
		want := map[int64][]string{
			first.ID:     nil,
			stored[0].ID: {"username: \"+1\" reads as a user ID"},
			stored[1].ID: {"email: ", "U+034F", "name: ", "U+3164", "time zone: \"Local\" is not an IANA time zone"},
			stored[2].ID: {"name: ", "U+E0041"},
		}
		for _, v := range us {
			if want[v.ID] == nil {
				if v.Invalid != "" {
					t.Errorf("user %d: invalid %q; want none", v.ID, v.Invalid)
				}
				continue
			}
			for _, w := range want[v.ID] {
				if !strings.Contains(v.Invalid, w) {
					t.Errorf("user %d (%q): invalid %q; want it to say %q", v.ID, v.Username, v.Invalid, w)
				}
			}
		}
		// Nothing changed: the records are as written, each is found as before.
		for _, u := range stored {
			got, err := e.store.GetUser(ctx, u.ID)
			if err != nil || got.Email != u.Email || got.Username != u.Username || got.Name != u.Name || got.TimeZone != u.TimeZone {
				t.Errorf("user %d after users list = %+v, %v; want it unchanged", u.ID, got, err)
			}
		}
		if v, err := e.svc.DisableUser(ctx, "plus@plat.test"); err != nil || v.ID != stored[0].ID {
			t.Errorf("users disable plus@plat.test = %+v, %v; want user %d", v, err, stored[0].ID)
		}
		if v, err := e.svc.DisableUser(ctx, "+1"); err != nil || v.ID != first.ID {
			t.Errorf("users disable +1 = %+v, %v; want user %d (an ID, whatever a username says)", v, err, first.ID)
		}
	})
}
