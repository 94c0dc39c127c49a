package datatest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"oauthd/data"
)

// FamilySeeder is the benchmark-only bulk path a backend may offer
// (oauthd bench --seed): codes[i] stored as redeemed by fams[i], and
// fams[i], as [data.Store.ExchangeAuthCode] would store them.
type FamilySeeder interface {
	SeedFamilies(ctx context.Context, fams []data.Family, codes []data.AuthCode) error
}

// SeedInputs are the codes and families RunSeedFamiliesTest writes both
// ways: three users (one with two families), times in another zone than
// UTC, every optional field set somewhere and left empty elsewhere, one
// family without an absolute expiry and one whose absolute expiry comes
// first.
func SeedInputs() ([]data.Family, []data.AuthCode) {
	zone := time.FixedZone("UTC+3", 3*3600)
	t := time.Date(2026, 1, 2, 3, 4, 5, 6789, zone)
	var fams []data.Family
	var codes []data.AuthCode
	for i, u := range []int64{7, 8, 8, 1 << 40} {
		c := data.AuthCode{Hash: data.AuthCodeKey(data.NewAuthCode(t)), ClientID: "seed-client", UserID: u,
			RedirectURI: "https://app.example.com/cb", Scopes: []string{"PROFILE_READ", "BOOKING_READ"},
			CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGjSstw-cM", CreatedAt: t, ExpiresAt: t.Add(time.Minute)}
		f := data.Family{ID: data.NewFamilyID(t.Add(time.Duration(i) * time.Millisecond)), ClientID: c.ClientID, UserID: u, Scopes: c.Scopes,
			TokenHash: data.Hash("seeded-token-" + string(rune('a'+i))), CreatedAt: t, RotatedAt: t,
			ExpiresAt: t.Add(time.Duration(i+1) * time.Hour), AbsoluteExp: t.Add(90 * 24 * time.Hour), CodeHash: c.Hash, Tagged: true}
		switch i {
		case 1:
			c.Nonce, c.AuthTime, c.Scopes = "n-1", t.Add(-time.Minute), []string{"openid"}
			f.Scopes, f.AuthTime, f.JKT = c.Scopes, c.AuthTime, "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
		case 2:
			c.Unrestricted, f.Unrestricted, f.AbsoluteExp = true, true, time.Time{}
		case 3:
			f.AbsoluteExp = t.Add(30 * time.Minute) // before its idle expiry
		}
		fams, codes = append(fams, f), append(codes, c)
	}
	return fams, codes
}

// ExchangeAll writes fams and codes into s the way the code exchange
// does: each code created, then exchanged for its family.
func ExchangeAll(t *testing.T, s data.Store, fams []data.Family, codes []data.AuthCode) {
	t.Helper()
	for i, c := range codes {
		if err := s.CreateAuthCode(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.ExchangeAuthCode(t.Context(), c.Hash, func(data.AuthCode) (data.Family, error) { return fams[i], nil }); err != nil {
			t.Fatal(err)
		}
	}
}

// RunSeedFamiliesTest checks that what SeedFamilies writes reads back
// exactly as what the code exchange writes for the same inputs: every
// family (GetFamily, ListUserFamilies, ListFamilies), every code's
// tombstone (a second exchange finds it used; Export, when the store
// has it), a rotation of a seeded family, and an expiry sweep that removes
// the same records from both. open returns a new, empty store each call;
// it must implement FamilySeeder.
func RunSeedFamiliesTest(t *testing.T, open func(t *testing.T) data.Store) {
	ctx := t.Context()
	fams, codes := SeedInputs()
	exchanged, seeded := open(t), open(t)
	ExchangeAll(t, exchanged, fams, codes)
	sd, ok := seeded.(FamilySeeder)
	if !ok {
		t.Fatalf("%T has no SeedFamilies", seeded)
	}
	if err := sd.SeedFamilies(ctx, fams, codes); err != nil {
		t.Fatal(err)
	}
	if err := sd.SeedFamilies(ctx, fams[:1], codes); err == nil {
		t.Error("SeedFamilies took 1 family and 4 codes")
	}

	same := func(what string) {
		t.Helper()
		for _, f := range fams {
			a, errA := exchanged.GetFamily(ctx, f.ID)
			b, errB := seeded.GetFamily(ctx, f.ID)
			if errors.Is(errA, data.ErrNotFound) != errors.Is(errB, data.ErrNotFound) || (errA == nil) != (errB == nil) {
				t.Fatalf("%s: GetFamily(%s): seeded %v; exchanged %v", what, f.ID, errB, errA)
			}
			mustEqual(t, what+": GetFamily "+f.ID, b, a)
		}
		for _, u := range []int64{7, 8, 1 << 40} {
			a, err := exchanged.ListUserFamilies(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			b, err := seeded.ListUserFamilies(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			mustEqual(t, what+": ListUserFamilies", b, a)
		}
		a, err := exchanged.ListFamilies(ctx, "seed-client")
		if err != nil {
			t.Fatal(err)
		}
		b, err := seeded.ListFamilies(ctx, "seed-client")
		if err != nil {
			t.Fatal(err)
		}
		mustEqual(t, what+": ListFamilies", b, a)
		type exporter interface {
			Export(ctx context.Context) (data.Dump, error)
		}
		ea, okA := exchanged.(exporter)
		eb, okB := seeded.(exporter)
		if okA && okB {
			da, err := ea.Export(ctx)
			if err != nil {
				t.Fatal(err)
			}
			db, err := eb.Export(ctx)
			if err != nil {
				t.Fatal(err)
			}
			mustEqual(t, what+": exported codes", db.AuthCodes, da.AuthCodes)
			mustEqual(t, what+": exported families", db.Families, da.Families)
		}
	}
	same("as written")

	// The tombstones: a second exchange of every code finds it used, and
	// says which family it made.
	for _, c := range codes {
		for _, s := range []data.Store{exchanged, seeded} {
			code, _, err := s.ExchangeAuthCode(ctx, c.Hash, func(data.AuthCode) (data.Family, error) {
				return data.Family{}, errors.New("exchanged twice")
			})
			wantErr(t, "second exchange", err, data.ErrCodeUsed)
			if !code.Used {
				t.Errorf("second exchange of a %T code returned %+v; want it used", s, code)
			}
		}
	}

	// A rotation of a seeded family, the same on both.
	now := fams[0].CreatedAt.Add(10 * time.Minute)
	for _, s := range []data.Store{exchanged, seeded} {
		if _, err := s.RotateRefreshToken(ctx, fams[0].ID, rotateTo("next", now)); err != nil {
			t.Fatal(err)
		}
	}
	same("after a rotation")

	// A sweep an hour and a half later: the codes' tombstones (a minute's
	// life), family 0 (rotated: idle for a day now, so it stays), family
	// 3 (absolute expiry after 30 minutes); family 1 (two hours) and
	// family 2 (three) stay.
	at := fams[0].CreatedAt.Add(90 * time.Minute)
	ra, err := exchanged.GarbageCollect(ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := seeded.GarbageCollect(ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ra, rb) || rb.Families != 1 || rb.AuthCodes != 4 {
		t.Errorf("sweep removed %+v from the seeded store, %+v from the exchanged one; want 1 family and 4 codes from each", rb, ra)
	}
	same("after a sweep")
}
