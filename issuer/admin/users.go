package admin

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"

	"oauthd/data"
	"oauthd/data/ident"
	"oauthd/data/password"
)

// ImportUser is one row of `oauthd users import`: a user coming over from
// another system with the password hash it has there (see
// [password.Check] for the formats). Line is the row's line in the file,
// for the report.
type ImportUser struct {
	Line         int    `json:"line"`
	Email        string `json:"email"`
	Username     string `json:"username,omitempty"` // optional: then the user logs in with the email
	Name         string `json:"name"`
	TimeZone     string `json:"time_zone,omitempty"` // default UTC
	PasswordHash string `json:"password_hash"`
}

// MaxEmailLen bounds an email: RFC 5321's longest address, and the
// longest login the login form takes.
const MaxEmailLen = 254

// MaxImportUsers bounds one import (the admin request carries them all).
const MaxImportUsers = 10000

// checkProfile validates the fields a user record needs; username may be
// "" when optional; tz "" is UTC.
func checkProfile(email, username, name, tz string, usernameOptional bool) (string, error) {
	if err := CheckEmail(email); err != nil {
		return "", err
	}
	if username != "" || !usernameOptional {
		if username == "" || strings.ContainsAny(username, " \t\n@") || len(username) > 100 {
			return "", errors.New("the username must be 1 to 100 characters without spaces or @")
		}
		if _, err := ident.Username(username); err != nil {
			return "", errors.New(strings.TrimPrefix(err.Error(), ident.ErrInvalid.Error()+": "))
		}
	}
	if name == "" || len(name) > data.MaxNameLen {
		return "", fmt.Errorf("the name must be 1 to %d bytes", data.MaxNameLen)
	}
	if err := ident.Name(name); err != nil {
		return "", errors.New("the name " + strings.TrimPrefix(err.Error(), ident.ErrInvalid.Error()+": "))
	}
	if tz == "" {
		tz = "UTC"
	}
	if err := CheckTimeZone(tz); err != nil {
		return "", err
	}
	return tz, nil
}

// CheckTimeZone is the check of a user's time zone at every entry (users
// add, users import, the login handover): an IANA time zone name that
// this system's time zone database knows ("Europe/Berlin", "UTC",
// "Etc/GMT+5"), never a name Go or the system gives its own zone
// ("Local", "localtime", which is the server's zone and not the user's),
// nor a file of the database that is not a zone ("posixrules", the
// "posix/" and "right/" copies). A name's components are ASCII letters,
// digits, '.', '_', '-' and '+' (the tz database's rule, with the legacy
// names' digits and signs), each starting with a letter.
func CheckTimeZone(tz string) error {
	bad := fmt.Errorf("%q is not an IANA time zone name (like Europe/Berlin or UTC)", tz)
	switch {
	case tz == "", tz == "Local", tz == "localtime", tz == "posixrules",
		strings.HasPrefix(tz, "posix/"), strings.HasPrefix(tz, "right/"), len(tz) > 64:
		return bad
	}
	for part := range strings.SplitSeq(tz, "/") {
		if part == "" || !('A' <= part[0] && part[0] <= 'Z' || 'a' <= part[0] && part[0] <= 'z') {
			return bad
		}
		for _, c := range []byte(part) {
			if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("._-+", c) >= 0) {
				return bad
			}
		}
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return bad
	}
	return nil
}

// CheckEmail is the check of a new user's email at every entry (users add,
// users import, the login handover, the demo): an address (net/mail), in
// its plain form, that has a canonical form ([ident.Email]: no control or
// bidi character, a valid domain). The error says what is wrong.
func CheckEmail(email string) error {
	// The login form takes no more (RFC 5321 §4.5.3.1.3): a longer email
	// could never be typed there.
	if len(email) > MaxEmailLen {
		return fmt.Errorf("the email is %d bytes; an email address has at most %d", len(email), MaxEmailLen)
	}
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email {
		return fmt.Errorf("%q is not an email address", email)
	}
	if _, err := ident.Email(email); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), ident.ErrInvalid.Error()+": "))
	}
	return nil
}

// ImportUsers implements [Service.ImportUsers]: every row is checked
// first (its fields, its hash's format and cost, its email and username
// against the other rows and the stored users); any bad row refuses the
// whole import with every bad row named by line. Then all rows are
// created in one transaction ([data.Store.CreateUsers]): nothing
// half-imported is ever left behind, not even by a crash.
func (l *Local) ImportUsers(ctx context.Context, rows []ImportUser) ([]UserView, error) {
	if len(rows) == 0 {
		return nil, newError(data.ErrInvalid, "the file holds no users")
	}
	if len(rows) > MaxImportUsers {
		return nil, newError(data.ErrInvalid, fmt.Sprintf("%d users in one import; split the file into parts of at most %d", len(rows), MaxImportUsers))
	}
	var bad []string
	badRows := map[int]bool{} // a row may have several problems: count it once
	seen := map[string]int{}
	now := l.now().UTC()
	us := make([]data.User, 0, len(rows))
	for i, r := range rows {
		line := r.Line
		if line == 0 {
			line = i + 1
		}
		fail := func(msg string) {
			bad = append(bad, fmt.Sprintf("line %d: %s", line, msg))
			badRows[i] = true
		}
		r.Email, r.Username, r.Name = strings.TrimSpace(r.Email), strings.TrimSpace(r.Username), strings.TrimSpace(r.Name)
		tz, err := checkProfile(r.Email, r.Username, r.Name, r.TimeZone, true)
		if err != nil {
			fail(err.Error())
			continue
		}
		if err := l.hashes.Check(r.PasswordHash); err != nil {
			fail("password_hash: " + strings.TrimPrefix(err.Error(), password.ErrMalformed.Error()+": "))
			continue
		}
		for _, login := range []string{r.Email, r.Username} {
			if login == "" {
				continue
			}
			k := ident.Key(login)
			if first, dup := seen[k]; dup {
				fail(fmt.Sprintf("%s is also on line %d (the same identifier, however spelled)", login, first))
				continue
			}
			seen[k] = line
			switch _, err := l.store.GetUserByLogin(ctx, login); {
			case err == nil:
				fail(fmt.Sprintf("a user with the login %s already exists (the same identifier, however spelled)", login))
			case !errors.Is(err, data.ErrNotFound):
				return nil, fmt.Errorf("import users: %w", err)
			}
		}
		us = append(us, data.User{Email: r.Email, Username: r.Username, Name: r.Name, TimeZone: tz,
			PasswordHash: r.PasswordHash, CreatedAt: now})
	}
	if len(bad) > 0 {
		return nil, newError(data.ErrInvalid, fmt.Sprintf("%d of %d rows are bad; nothing was imported. Fix them and import the file again:\n%s",
			len(badRows), len(rows), strings.Join(bad, "\n")))
	}
	created, err := l.store.CreateUsers(ctx, us)
	if errors.Is(err, data.ErrExists) {
		return nil, newError(data.ErrExists, fmt.Sprintf("a user was added while importing (%v); nothing was imported; import the file again", err))
	}
	if err != nil {
		return nil, fmt.Errorf("import users: %w", err)
	}
	out := make([]UserView, len(created))
	for i, u := range created {
		out[i] = userView(u)
	}
	l.audit(ctx, "users_imported", "count", len(created))
	return out, nil
}

// ResolveUser finds the user an operator names by ref: a user ID
// (digits), else an email or a username, looked up under their canonical
// form (one lookup; the store's unique indexes make the answer unique).
// It is the one way the admin operations turn a USER argument into a user
// (`clients create --owner`, `users disable`, `users apps`): resolve once,
// then keep the ID. An unknown ref gives an *Error wrapping
// [data.ErrNotFound] that says how to list the users.
func (l *Local) ResolveUser(ctx context.Context, ref string) (data.User, error) {
	ref = strings.TrimSpace(ref)
	var (
		u   data.User
		err error
	)
	if ident.ReadsAsID(ref) {
		// An ID, never a username (ident.Username refuses every username
		// that reads so). A number too large for an ID names no user.
		id, perr := strconv.ParseInt(ref, 10, 64)
		if perr != nil {
			return data.User{}, newError(data.ErrNotFound, fmt.Sprintf("no user %q; `oauthd users list` shows the users", ref))
		}
		u, err = l.store.GetUser(ctx, id)
	} else {
		u, err = l.store.GetUserByLogin(ctx, ref)
	}
	if errors.Is(err, data.ErrNotFound) {
		return data.User{}, newError(data.ErrNotFound, fmt.Sprintf("no user %q; `oauthd users list` shows the users", ref))
	}
	if err != nil {
		return data.User{}, fmt.Errorf("find user %q: %w", ref, err)
	}
	return u, nil
}

// DisableUser implements [Service.DisableUser]: the store revokes every
// session, code, refresh-token family and consent grant of the user in
// the same transaction; access tokens stop working at /v2/me and
// introspection at once (their family is gone).
func (l *Local) DisableUser(ctx context.Context, ref string) (UserView, error) {
	u, err := l.ResolveUser(ctx, ref)
	if err != nil {
		return UserView{}, err
	}
	now := l.now().UTC()
	u, err = l.store.UpdateUser(ctx, u.ID, func(u data.User) (data.User, error) {
		if !u.Disabled {
			u.Disabled, u.DisabledAt = true, now
		}
		return u, nil
	})
	if err != nil {
		return UserView{}, fmt.Errorf("disable user: %w", err)
	}
	l.audit(ctx, "user_disabled", "user_id", u.ID)
	return userView(u), nil
}

// EnableUser implements [Service.EnableUser]: the user may log in again;
// what was revoked stays revoked.
func (l *Local) EnableUser(ctx context.Context, ref string) (UserView, error) {
	u, err := l.ResolveUser(ctx, ref)
	if err != nil {
		return UserView{}, err
	}
	u, err = l.store.UpdateUser(ctx, u.ID, func(u data.User) (data.User, error) {
		u.Disabled, u.DisabledAt = false, time.Time{}
		return u, nil
	})
	if err != nil {
		return UserView{}, fmt.Errorf("enable user: %w", err)
	}
	l.audit(ctx, "user_enabled", "user_id", u.ID)
	return userView(u), nil
}

// AddUser implements [Service.AddUser].
func (l *Local) AddUser(ctx context.Context, in NewUser) (UserView, error) {
	in.Email = strings.TrimSpace(in.Email)
	in.Username = strings.TrimSpace(in.Username)
	in.Name = strings.TrimSpace(in.Name)
	tz, err := checkProfile(in.Email, in.Username, in.Name, in.TimeZone, false)
	if err != nil {
		return UserView{}, newError(data.ErrInvalid, err.Error()+"; pass --email, --username, --name and --time-zone")
	}
	in.TimeZone = tz
	if len(in.Password) < MinPasswordLen {
		return UserView{}, newError(data.ErrInvalid, fmt.Sprintf("the password must be at least %d characters", MinPasswordLen))
	}
	hash, err := password.Hash(in.Password)
	if err != nil {
		return UserView{}, newError(data.ErrInvalid, fmt.Sprintf("the password cannot be used: %v", err))
	}
	u, err := l.store.CreateUser(ctx, data.User{
		Email: in.Email, Username: in.Username, Name: in.Name, TimeZone: in.TimeZone,
		PasswordHash: hash, CreatedAt: l.now().UTC(),
	})
	if errors.Is(err, data.ErrExists) {
		return UserView{}, newError(data.ErrExists, fmt.Sprintf("a user with email %s or username %s already exists; choose another", in.Email, in.Username))
	}
	if err != nil {
		return UserView{}, fmt.Errorf("add user: %w", err)
	}
	l.audit(ctx, "user_added", "user_id", u.ID)
	return userView(u), nil
}

// ListUsers implements [Service.ListUsers].
func (l *Local) ListUsers(ctx context.Context) ([]UserView, error) {
	us, err := l.store.ListUsers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	out := make([]UserView, 0, len(us))
	_, _, clashes := data.IndexUsers(us)
	for _, u := range us {
		v := userView(u)
		var notes []string
		for _, c := range clashes {
			if c.UserID == u.ID {
				notes = append(notes, fmt.Sprintf("%s is also user %d's, who keeps it: this user is not found by it", c.Field, c.HeldBy))
			}
		}
		v.Clash = strings.Join(notes, "; ")
		v.Invalid = strings.Join(refusedFields(u), "; ")
		out = append(out, v)
	}
	return out, nil
}

// refusedFields says which of u's stored fields the rules of a new user
// refuse today (an identifier stored by an earlier release, before a rule
// existed: a username that reads as an ID, an invisible character, the
// time zone "Local"), and why. Nothing is changed: the operator decides.
func refusedFields(u data.User) []string {
	var out []string
	why := func(err error) string { return strings.TrimPrefix(err.Error(), ident.ErrInvalid.Error()+": ") }
	if err := CheckEmail(u.Email); err != nil {
		out = append(out, "email: "+why(err))
	}
	if u.Username != "" {
		if _, err := ident.Username(u.Username); err != nil {
			out = append(out, "username: "+why(err))
		}
	}
	if err := ident.Name(u.Name); err != nil {
		out = append(out, "name: "+why(err))
	}
	if u.TimeZone != "" {
		if err := CheckTimeZone(u.TimeZone); err != nil {
			out = append(out, "time zone: "+why(err))
		}
	}
	return out
}

func userView(u data.User) UserView {
	v := UserView{ID: u.ID, Email: u.Email, Username: u.Username, Name: u.Name, TimeZone: u.TimeZone,
		ExternalID: u.ExternalID, State: "active"}
	if u.Disabled {
		v.State = "disabled"
		at := u.DisabledAt
		v.DisabledAt = &at
	}
	return v
}
