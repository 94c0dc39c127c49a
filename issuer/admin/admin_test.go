package admin

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/data/memory"
	"oauthd/keys"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeKeys is a KeyManager that records calls.
type fakeKeys struct {
	infos   []keys.Info
	rotated []string
	revoked []string
}

func (f *fakeKeys) List(context.Context) ([]keys.Info, error) { return f.infos, nil }
func (f *fakeKeys) Rotate(_ context.Context, alg string) (keys.RotateResult, error) {
	if alg == "HS256" {
		return keys.RotateResult{}, keys.ErrUnsupportedAlg
	}
	f.rotated = append(f.rotated, alg)
	return keys.RotateResult{}, nil
}
func (f *fakeKeys) Revoke(_ context.Context, kid string) error {
	if !slices.ContainsFunc(f.infos, func(i keys.Info) bool { return i.KID == kid }) {
		return keys.ErrUnknownKey
	}
	f.revoked = append(f.revoked, kid)
	return nil
}

type env struct {
	svc   Service
	store *memory.Store
	keys  *fakeKeys
}

// both runs fn against a Local and against a Client talking to a Handler
// over a real Unix socket, so that every assertion holds either way.
func both(t *testing.T, fn func(t *testing.T, e env)) {
	t.Run("local", func(t *testing.T) {
		store := memory.New()
		t.Cleanup(func() { store.Close() })
		fk := &fakeKeys{infos: []keys.Info{{KID: "k1", Alg: "ES256", State: data.KeyActive, CreatedAt: t0}}}
		fn(t, env{NewLocal(store, fk, slog.New(slog.DiscardHandler), func() time.Time { return t0 }), store, fk})
	})
	t.Run("socket", func(t *testing.T) {
		store := memory.New()
		t.Cleanup(func() { store.Close() })
		fk := &fakeKeys{infos: []keys.Info{{KID: "k1", Alg: "ES256", State: data.KeyActive, CreatedAt: t0}}}
		local := NewLocal(store, fk, slog.New(slog.DiscardHandler), func() time.Time { return t0 })
		c := serveSocket(t, Handler(local))
		fn(t, env{c, store, fk})
	})
}

func serveSocket(t *testing.T, h http.Handler) *SocketClient {
	t.Helper()
	dir, err := os.MkdirTemp("", "admin") // short: socket paths are limited to ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "a.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ConnContext: ConnContext}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func addDev(t *testing.T, svc Service) UserView {
	t.Helper()
	u, err := svc.AddUser(t.Context(), NewUser{Email: "dev@example.com", Username: "dev", Name: "Dev", Password: "correct horse"})
	if err != nil {
		t.Fatalf("AddUser: %v", err)
	}
	return u
}

func newClient(t *testing.T, svc Service, public bool) CreatedClient {
	t.Helper()
	c, err := svc.CreateClient(t.Context(), NewClient{
		Owner: "dev@example.com", Name: "App", RedirectURIs: []string{"https://app.example/cb"},
		Scopes: []string{"PROFILE_READ, BOOKING_READ"}, Public: public,
	})
	if err != nil {
		t.Fatalf("CreateClient: %v", err)
	}
	return c
}

func TestUsers(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		u := addDev(t, e.svc)
		if u.ID != 1 || u.Email != "dev@example.com" || u.Username != "dev" || u.TimeZone != "UTC" {
			t.Errorf("AddUser = %+v", u)
		}
		stored, err := e.store.GetUser(t.Context(), u.ID)
		if err != nil || !strings.HasPrefix(stored.PasswordHash, "$argon2id$") {
			t.Errorf("stored password hash = %q, %v; want an argon2id PHC string", stored.PasswordHash, err)
		}
		tests := []struct {
			name string
			in   NewUser
			want error
		}{
			{"duplicate email", NewUser{Email: "DEV@example.com", Username: "other", Name: "X", Password: "12345678"}, data.ErrExists},
			{"duplicate username", NewUser{Email: "o@example.com", Username: "DEV", Name: "X", Password: "12345678"}, data.ErrExists},
			{"bad email", NewUser{Email: "nope", Username: "u2", Name: "X", Password: "12345678"}, data.ErrInvalid},
			{"short password", NewUser{Email: "a@example.com", Username: "u3", Name: "X", Password: "1234567"}, data.ErrInvalid},
			{"bad time zone", NewUser{Email: "b@example.com", Username: "u4", Name: "X", Password: "12345678", TimeZone: "Mars/Base"}, data.ErrInvalid},
			{"no name", NewUser{Email: "c@example.com", Username: "u5", Password: "12345678"}, data.ErrInvalid},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				if _, err := e.svc.AddUser(t.Context(), tc.in); !errors.Is(err, tc.want) {
					t.Errorf("AddUser(%+v) = %v; want %v", tc.in, err, tc.want)
				}
			})
		}
		us, err := e.svc.ListUsers(t.Context())
		if err != nil || len(us) != 1 {
			t.Errorf("ListUsers = %v, %v; want the one user", us, err)
		}
	})
}

func TestCreateClient(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		addDev(t, e.svc)
		c := newClient(t, e.svc, false)
		if c.Status != "pending" || c.ClientType != "confidential" || !strings.HasPrefix(c.ClientSecret, data.PrefixClientSecret) ||
			!strings.HasPrefix(c.SecretID, "cs_") || !slices.Equal(c.Scopes, []string{"PROFILE_READ", "BOOKING_READ"}) {
			t.Errorf("CreateClient = %+v", c)
		}
		stored, err := e.store.GetClient(t.Context(), c.ClientID)
		if err != nil || len(stored.Secrets) != 1 || !data.Equal(stored.Secrets[0].Hash, data.Hash(c.ClientSecret)) {
			t.Fatalf("stored client = %+v, %v; want the secret's hash", stored, err)
		}
		pub := newClient(t, e.svc, true)
		b, _ := json.Marshal(pub)
		if strings.Contains(string(b), "client_secret") || strings.Contains(string(b), "secret_id") {
			t.Errorf("public client JSON = %s; want no client_secret/secret_id keys", b)
		}

		tests := []struct {
			name string
			in   NewClient
			want error
			msg  string
		}{
			{"unknown owner", NewClient{Owner: "ghost@example.com", Name: "A", RedirectURIs: []string{"https://a.example/cb"}, Scopes: []string{"PROFILE_READ"}},
				data.ErrNotFound, `no user "ghost@example.com" (--owner takes a user's ID, email or username); add one with ` + "`oauthd users add`"},
			{"unknown username", NewClient{Owner: "nobody", Name: "A", RedirectURIs: []string{"https://a.example/cb"}, Scopes: []string{"PROFILE_READ"}},
				data.ErrNotFound, `no user "nobody"`},
			{"unknown ID", NewClient{Owner: "99", Name: "A", RedirectURIs: []string{"https://a.example/cb"}, Scopes: []string{"PROFILE_READ"}},
				data.ErrNotFound, `no user "99"`},
			{"no scope", NewClient{Owner: "dev@example.com", Name: "A", RedirectURIs: []string{"https://a.example/cb"}},
				data.ErrInvalid, "at least one scope"},
			{"unknown scope", NewClient{Owner: "dev@example.com", Name: "A", RedirectURIs: []string{"https://a.example/cb"}, Scopes: []string{"PROFILE_READ FOO_READ"}},
				data.ErrInvalid, "unknown scope FOO_READ"},
			{"http redirect", NewClient{Owner: "dev@example.com", Name: "A", RedirectURIs: []string{"http://a.example/cb"}, Scopes: []string{"PROFILE_READ"}},
				data.ErrInvalid, "use https"},
			{"11 redirects", NewClient{Owner: "dev@example.com", Name: "A", RedirectURIs: elevenURIs(), Scopes: []string{"PROFILE_READ"}},
				data.ErrInvalid, "at most 10"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.svc.CreateClient(t.Context(), tc.in)
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("CreateClient = %v; want %v containing %q", err, tc.want, tc.msg)
				}
			})
		}
	})
}

// TestCreateClientOwner: --owner takes an ID, an email (any spelling of
// it) or a username, resolved once to the user's ID; clients show and
// list print the owner's current email, and after the user's email
// changes the client is still theirs (by ID).
func TestCreateClientOwner(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		dev := addDev(t, e.svc)
		for _, ref := range []string{"1", "dev@example.com", "DEV@Example.COM", "dev", " dev "} {
			c, err := e.svc.CreateClient(t.Context(), NewClient{Owner: ref, Name: "A", RedirectURIs: []string{"https://a.example/cb"}, Scopes: []string{"PROFILE_READ"}})
			if err != nil {
				t.Fatalf("CreateClient(--owner %q) = %v", ref, err)
			}
			stored, _ := e.store.GetClient(t.Context(), c.ClientID)
			if stored.OwnerID != dev.ID || stored.UnclaimedOwner != "" {
				t.Errorf("--owner %q: stored owner %d %q; want user %d", ref, stored.OwnerID, stored.UnclaimedOwner, dev.ID)
			}
		}
		if _, err := e.store.UpdateUser(t.Context(), dev.ID, func(u data.User) (data.User, error) { u.Email = "dev.new@example.com"; return u, nil }); err != nil {
			t.Fatal(err)
		}
		cs, err := e.svc.ListClients(t.Context(), "")
		if err != nil || len(cs) != 5 {
			t.Fatalf("ListClients = %d clients, %v", len(cs), err)
		}
		for _, c := range cs {
			if c.OwnerID != dev.ID || c.Owner != "dev.new@example.com" {
				t.Errorf("ListClients: %s owner %d %q; want %d dev.new@example.com (the current email)", c.ClientID, c.OwnerID, c.Owner, dev.ID)
			}
			if v, err := e.svc.ShowClient(t.Context(), c.ClientID); err != nil || v.Owner != "dev.new@example.com" || v.OwnerID != dev.ID {
				t.Errorf("ShowClient(%s) owner = %d %q, %v", c.ClientID, v.OwnerID, v.Owner, err)
			}
		}
		// Someone who now takes the old email owns nothing.
		other, err := e.svc.AddUser(t.Context(), NewUser{Email: "dev@example.com", Username: "other", Name: "Other", Password: "correct horse"})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if v, _ := e.svc.ShowClient(t.Context(), c.ClientID); v.OwnerID == other.ID {
				t.Errorf("%s went to the new holder of the old email", c.ClientID)
			}
		}
	})
}

func elevenURIs() []string {
	var out []string
	for i := range 11 {
		out = append(out, "https://a.example/cb"+string(rune('a'+i)))
	}
	return out
}

func TestReview(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		addDev(t, e.svc)
		c := newClient(t, e.svc, false)
		if _, err := e.svc.RejectClient(t.Context(), c.ClientID, " "); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("RejectClient without reason = %v; want ErrInvalid", err)
		}
		v, err := e.svc.RejectClient(t.Context(), c.ClientID, "spam")
		if err != nil || v.Status != "rejected" || v.RejectReason != "spam" {
			t.Errorf("RejectClient = %+v, %v", v, err)
		}
		v, err = e.svc.ApproveClient(t.Context(), c.ClientID)
		if err != nil || v.Status != "approved" || v.RejectReason != "" {
			t.Errorf("ApproveClient = %+v, %v", v, err)
		}
		if _, err := e.svc.ApproveClient(t.Context(), "nope"); !errors.Is(err, data.ErrNotFound) || !strings.Contains(err.Error(), "oauthd clients list") {
			t.Errorf("ApproveClient(unknown) = %v; want ErrNotFound saying what to do", err)
		}
		for _, status := range []string{"", "approved"} {
			cs, err := e.svc.ListClients(t.Context(), status)
			if err != nil || len(cs) != 1 {
				t.Errorf("ListClients(%q) = %d clients, %v; want 1", status, len(cs), err)
			}
		}
		if cs, _ := e.svc.ListClients(t.Context(), "pending"); len(cs) != 0 {
			t.Errorf("ListClients(pending) = %d clients; want 0", len(cs))
		}
		if _, err := e.svc.ListClients(t.Context(), "bogus"); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("ListClients(bogus) = %v; want ErrInvalid", err)
		}
	})
}

func TestSecrets(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		addDev(t, e.svc)
		c := newClient(t, e.svc, false)
		s2, err := e.svc.GenerateSecret(t.Context(), c.ClientID)
		if err != nil || !strings.HasPrefix(s2.ClientSecret, data.PrefixClientSecret) || s2.SecretID == c.SecretID {
			t.Fatalf("GenerateSecret = %+v, %v", s2, err)
		}
		_, err = e.svc.GenerateSecret(t.Context(), c.ClientID)
		if !errors.Is(err, data.ErrTooManySecrets) || !strings.Contains(err.Error(), "revoke one first") {
			t.Errorf("third GenerateSecret = %v; want ErrTooManySecrets saying what to do", err)
		}
		list, err := e.svc.ListSecrets(t.Context(), c.ClientID)
		if err != nil || len(list) != 2 || list[0].SecretID != c.SecretID || list[0].LastUsedAt != nil {
			t.Errorf("ListSecrets = %+v, %v", list, err)
		}
		b, _ := json.Marshal(list)
		if !strings.Contains(string(b), `"last_used_at":null`) || strings.Contains(string(b), "hash") {
			t.Errorf("secrets JSON = %s", b)
		}
		if err := e.svc.RevokeSecret(t.Context(), c.ClientID, "cs_nope"); !errors.Is(err, data.ErrNotFound) {
			t.Errorf("RevokeSecret(unknown) = %v; want ErrNotFound", err)
		}
		if err := e.svc.RevokeSecret(t.Context(), c.ClientID, c.SecretID); err != nil {
			t.Fatalf("RevokeSecret = %v", err)
		}
		err = e.svc.RevokeSecret(t.Context(), c.ClientID, s2.SecretID)
		if !errors.Is(err, data.ErrLastSecret) || !strings.Contains(err.Error(), "generate a new one first") {
			t.Errorf("RevokeSecret(last) = %v; want ErrLastSecret", err)
		}
		v, _ := e.svc.ShowClient(t.Context(), c.ClientID)
		if len(v.Secrets) != 1 || v.Secrets[0].SecretID != s2.SecretID {
			t.Errorf("secrets after revoke = %+v; want only %s", v.Secrets, s2.SecretID)
		}
		pub := newClient(t, e.svc, true)
		if _, err := e.svc.GenerateSecret(t.Context(), pub.ClientID); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("GenerateSecret(public) = %v; want ErrInvalid", err)
		}
	})
}

func TestImportAndMigration(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		good := []LegacyClient{
			{ClientID: "legacy-1", Name: "Old App", Owner: "old@example.com", RedirectURIs: []string{"https://old.example/cb"}, ClientSecret: "s3cret-legacy"},
			{ClientID: "legacy-2", Name: "Old SPA", Owner: "old@example.com", RedirectURIs: []string{"http://127.0.0.1/cb"}, ClientType: "public"},
		}
		bad := []struct {
			name string
			in   []LegacyClient
			want error
		}{
			{"missing secret", append(slices.Clone(good), LegacyClient{ClientID: "x", Name: "X", Owner: "o@x", RedirectURIs: []string{"https://x.example/cb"}}), data.ErrInvalid},
			{"duplicate in file", append(slices.Clone(good), good[0]), data.ErrExists},
			{"bad redirect", append(slices.Clone(good), LegacyClient{ClientID: "y", Name: "Y", Owner: "o@x", RedirectURIs: []string{"ftp://y"}, ClientSecret: "s"}), data.ErrInvalid},
			{"empty", nil, data.ErrInvalid},
		}
		for _, tc := range bad {
			t.Run(tc.name, func(t *testing.T) {
				if _, err := e.svc.ImportClients(t.Context(), tc.in); !errors.Is(err, tc.want) {
					t.Errorf("ImportClients = %v; want %v", err, tc.want)
				}
				if cs, _ := e.store.ListClients(t.Context(), ""); len(cs) != 0 {
					t.Errorf("a refused import stored %d clients; want none (all or nothing)", len(cs))
				}
			})
		}
		ids, err := e.svc.ImportClients(t.Context(), good)
		if err != nil || !slices.Equal(ids, []string{"legacy-1", "legacy-2"}) {
			t.Fatalf("ImportClients = %v, %v", ids, err)
		}
		if _, err := e.svc.ImportClients(t.Context(), good[:1]); !errors.Is(err, data.ErrExists) {
			t.Errorf("re-import = %v; want ErrExists", err)
		}
		stored, _ := e.store.GetClient(t.Context(), "legacy-1")
		if !stored.Legacy || stored.Status != data.StatusApproved || len(stored.Scopes) != 0 || !data.Equal(stored.Secrets[0].Hash, data.Hash("s3cret-legacy")) {
			t.Errorf("imported client = %+v", stored)
		}
		// Usage recorded by the issuer: inside and outside the 30-day window.
		_, err = e.store.UpdateClient(t.Context(), "legacy-1", func(c data.Client) (data.Client, error) {
			c.Usage = []data.UsageDay{{Day: "2025-12-01", WithoutScope: 50}, {Day: "2026-02-20", WithScope: 3, WithoutScope: 1}, {Day: "2026-03-01", WithScope: 4}}
			return c, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		v, err := e.svc.ShowClient(t.Context(), "legacy-1")
		if err != nil || !v.Legacy || v.AuthorizationRequests == nil || *v.AuthorizationRequests != (RequestCounts{WithScope: 7, WithoutScope: 1, Days: 30}) ||
			v.MigrationSafe == nil || *v.MigrationSafe {
			t.Errorf("ShowClient(legacy) = %+v, %v; want 7 with, 1 without, not safe", v, err)
		}
		// Not migration-safe: refused, saying why and how to go on; --force migrates.
		_, err = e.svc.SetScopes(t.Context(), "legacy-1", []string{"PROFILE_READ"})
		if !errors.Is(err, data.ErrConflict) || !strings.Contains(err.Error(), "1 of its authorization requests of the last 30 days came without a scope parameter") ||
			!strings.Contains(err.Error(), "migration_safe: true") || !strings.Contains(err.Error(), "--force") {
			t.Errorf("SetScopes (unsafe migration) = %v; want ErrConflict saying why and how", err)
		}
		if c, _ := e.store.GetClient(t.Context(), "legacy-1"); !c.Legacy {
			t.Fatal("a refused migration migrated the client")
		}
		v, err = e.svc.ForceScopes(t.Context(), "legacy-1", []string{"PROFILE_READ", "BOOKING_READ,SCHEDULE_READ"})
		if err != nil || v.Legacy || len(v.Scopes) != 3 || v.AuthorizationRequests != nil || v.MigrationSafe != nil {
			t.Errorf("ForceScopes (migration) = %+v, %v", v, err)
		}
		if _, err := e.svc.SetScopes(t.Context(), "legacy-1", []string{"NOPE"}); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("SetScopes(unknown) = %v; want ErrInvalid", err)
		}
		v, err = e.svc.SetRedirectURIs(t.Context(), "legacy-1", []string{"https://new.example/cb", "https://new.example/cb2"})
		if err != nil || len(v.RedirectURIs) != 2 {
			t.Errorf("SetRedirectURIs = %+v, %v", v, err)
		}
		if _, err := e.svc.SetRedirectURIs(t.Context(), "legacy-1", []string{"https://a.example/#x"}); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("SetRedirectURIs(fragment) = %v; want ErrInvalid", err)
		}
	})
}

func TestKeys(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		ks, err := e.svc.ListKeys(t.Context())
		if err != nil || len(ks) != 1 || ks[0].KID != "k1" {
			t.Errorf("ListKeys = %+v, %v", ks, err)
		}
		if _, err := e.svc.RotateKeys(t.Context(), "EdDSA"); err != nil || !slices.Equal(e.keys.rotated, []string{"EdDSA"}) {
			t.Errorf("RotateKeys = %v; rotated %v", err, e.keys.rotated)
		}
		if _, err := e.svc.RotateKeys(t.Context(), "HS256"); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("RotateKeys(HS256) = %v; want ErrInvalid", err)
		}
		if err := e.svc.RevokeKey(t.Context(), "k1"); err != nil || !slices.Equal(e.keys.revoked, []string{"k1"}) {
			t.Errorf("RevokeKey = %v; revoked %v", err, e.keys.revoked)
		}
		if err := e.svc.RevokeKey(t.Context(), "zz"); !errors.Is(err, data.ErrNotFound) {
			t.Errorf("RevokeKey(unknown) = %v; want ErrNotFound", err)
		}
	})
}

func TestHandlerRejectsGarbage(t *testing.T) {
	c := serveSocket(t, Handler(NewLocal(memory.New(), nil, nil, nil)))
	if err := c.call(t.Context(), "nope", request{}, nil); !errors.Is(err, data.ErrNotFound) {
		t.Errorf("unknown operation = %v; want ErrNotFound", err)
	}
	if _, err := c.ListKeys(t.Context()); !errors.Is(err, data.ErrInvalid) {
		t.Errorf("ListKeys without a key manager = %v; want ErrInvalid", err)
	}
	if _, err := Dial(filepath.Join(t.TempDir(), "none.sock")); err == nil {
		t.Error("Dial(no socket) succeeded")
	}
}

// TestRejectRevokesGrants: rejecting a client deletes its refresh-token
// families (its users' grants), and only its; approving it again does not
// bring them back.
func TestRejectRevokesGrants(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		ctx := t.Context()
		addDev(t, e.svc)
		c := newClient(t, e.svc, false)
		other := newClient(t, e.svc, false)
		for _, id := range []string{c.ClientID, other.ClientID} {
			if _, err := e.svc.ApproveClient(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		grant := func(fam, client string) {
			code := data.Hash("code-" + fam)
			if err := e.store.CreateAuthCode(ctx, data.AuthCode{Hash: code, ClientID: client, UserID: 1, ExpiresAt: t0.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := e.store.ExchangeAuthCode(ctx, code, func(data.AuthCode) (data.Family, error) {
				return data.Family{ID: fam, ClientID: client, UserID: 1, TokenHash: data.Hash(fam), ExpiresAt: t0.Add(time.Hour), AbsoluteExp: t0.Add(time.Hour)}, nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		grant("f1", c.ClientID)
		grant("f2", c.ClientID)
		grant("f3", other.ClientID)
		if _, err := e.svc.RejectClient(ctx, c.ClientID, "abuse"); err != nil {
			t.Fatal(err)
		}
		if fams, _ := e.store.ListFamilies(ctx, c.ClientID); len(fams) != 0 {
			t.Fatalf("families of the rejected client = %+v; want none", fams)
		}
		if fams, _ := e.store.ListFamilies(ctx, other.ClientID); len(fams) != 1 {
			t.Fatalf("families of another client = %+v; want its one", fams)
		}
		if _, err := e.svc.ApproveClient(ctx, c.ClientID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.GetFamily(ctx, "f1"); !errors.Is(err, data.ErrNotFound) {
			t.Fatalf("GetFamily(f1) after approving again: %v; want ErrNotFound", err)
		}
	})
}

// TestImportClientsOwners: a legacy client's owner is resolved once to a
// user ID (any spelling of the email); one that names no user leaves the
// client unclaimed, which no user gets by email later, until the operator
// gives it an owner (SetClientOptions Owner).
func TestImportClientsOwners(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		dev := addDev(t, e.svc)
		ids, err := e.svc.ImportClients(t.Context(), []LegacyClient{
			{ClientID: "mine", Name: "Mine", Owner: "DEV@Example.com", RedirectURIs: []string{"https://m.example/cb"}, ClientSecret: "s-mine"},
			{ClientID: "orphan", Name: "Orphan", Owner: "gone@example.com", RedirectURIs: []string{"https://o.example/cb"}, ClientSecret: "s-orphan"},
		})
		if err != nil || len(ids) != 2 {
			t.Fatalf("ImportClients = %v, %v", ids, err)
		}
		_, err = e.svc.ImportClients(t.Context(), []LegacyClient{{ClientID: "bidi", Name: "Bidi", Owner: "\u202emoc.elpmaxe@ved",
			RedirectURIs: []string{"https://b.example/cb"}, ClientSecret: "s-bidi"}})
		if !errors.Is(err, data.ErrInvalid) || !strings.Contains(err.Error(), `client 1 ("bidi"): the owner holds an invisible or control character`) {
			t.Errorf("ImportClients(owner with a bidi override) = %v; want refused, naming the client", err)
		}
		if v, _ := e.svc.ShowClient(t.Context(), "mine"); v.OwnerID != dev.ID || v.Owner != dev.Email || v.UnclaimedOwner != "" {
			t.Errorf("mine: owner %d %q %q; want dev (%d)", v.OwnerID, v.Owner, v.UnclaimedOwner, dev.ID)
		}
		if v, _ := e.svc.ShowClient(t.Context(), "orphan"); v.OwnerID != 0 || v.Owner != "" || v.UnclaimedOwner != "gone@example.com" {
			t.Errorf("orphan: owner %d %q %q; want unclaimed gone@example.com", v.OwnerID, v.Owner, v.UnclaimedOwner)
		}
		// The email's later holder gets nothing.
		gone, err := e.svc.AddUser(t.Context(), NewUser{Email: "gone@example.com", Username: "gone", Name: "Gone", Password: "correct horse"})
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := e.svc.ShowClient(t.Context(), "orphan"); v.OwnerID != 0 {
			t.Errorf("orphan went to user %d, the new holder of its old owner's email", v.OwnerID)
		}
		if _, err := e.svc.SetClientOptions(t.Context(), "orphan", ClientOptions{Owner: ptr("nobody")}); !errors.Is(err, data.ErrNotFound) {
			t.Errorf("SetClientOptions(owner nobody) = %v; want ErrNotFound", err)
		}
		v, err := e.svc.SetClientOptions(t.Context(), "orphan", ClientOptions{Owner: ptr("gone")})
		if err != nil || v.OwnerID != gone.ID || v.UnclaimedOwner != "" {
			t.Errorf("SetClientOptions(owner gone) = %d %q, %v; want user %d", v.OwnerID, v.UnclaimedOwner, err, gone.ID)
		}
	})
}

func ptr[T any](v T) *T { return &v }
