package datatest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"oauthd/data"
)

// Garbage collection.

func testGC(t *testing.T, s data.Store) {
	now := t0.Add(time.Hour)
	for i, exp := range []time.Duration{-time.Minute, -time.Nanosecond, 0, time.Minute} {
		c := newCode(fmt.Sprintf("oauthd_ac_%d", i), "a")
		c.ExpiresAt = now.Add(exp)
		wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, c), nil)
	}
	// A used code expires like any other.
	used := newCode("oauthd_ac_used", "a")
	used.ExpiresAt = now.Add(-time.Second)
	wantErr(t, "CreateAuthCode(used)", s.CreateAuthCode(ctx, used), nil)
	_, _, err := s.ExchangeAuthCode(ctx, used.Hash, func(c data.AuthCode) (data.Family, error) {
		f := newFamily("live", "a", "rt-live")
		f.ExpiresAt, f.AbsoluteExp = now.Add(time.Hour), now.Add(48*time.Hour)
		return f, nil
	})
	wantErr(t, "ExchangeAuthCode(used)", err, nil)
	fams := []struct {
		id             string
		idle, absolute time.Duration
	}{
		{"idle-expired", -time.Second, time.Hour},
		{"absolute-expired", time.Hour, -time.Second},
		{"both-expired", -time.Hour, -time.Second},
		{"live2", time.Second, time.Hour},
	}
	for _, f := range fams {
		code := newCode("oauthd_ac_f_"+f.id, "a")
		code.ExpiresAt = now.Add(time.Hour)
		wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
		_, _, err := s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
			fam := newFamily(f.id, "a", "rt-"+f.id)
			fam.ExpiresAt, fam.AbsoluteExp = now.Add(f.idle), now.Add(f.absolute)
			return fam, nil
		})
		wantErr(t, "ExchangeAuthCode", err, nil)
	}
	for i, exp := range []time.Duration{-time.Second, time.Second} {
		sess := data.Session{Hash: data.Hash(fmt.Sprintf("oauthd_ss_%d", i)), UserID: 1, CreatedAt: t0, ExpiresAt: now.Add(exp)}
		wantErr(t, "CreateSession", s.CreateSession(ctx, sess), nil)
	}

	wantErr(t, "UseNonce(expired)", s.UseNonce(ctx, []byte("n-old"), now.Add(-time.Second)), nil)
	wantErr(t, "UseNonce(live)", s.UseNonce(ctx, []byte("n-live"), now.Add(time.Second)), nil)

	got, err := s.GarbageCollect(ctx, now)
	wantErr(t, "GarbageCollect", err, nil)
	mustEqual(t, "GarbageCollect", got, data.GCResult{AuthCodes: 3, Families: 3, Sessions: 1, Nonces: 1})
	// The collected nonce is free again; the live one is still used.
	wantErr(t, "UseNonce(collected)", s.UseNonce(ctx, []byte("n-old"), now.Add(time.Second)), nil)
	wantErr(t, "UseNonce(live again)", s.UseNonce(ctx, []byte("n-live"), now.Add(time.Second)), data.ErrExists)

	for i, live := range []bool{false, false, true, true} {
		_, _, err := s.ExchangeAuthCode(ctx, data.AuthCodeKey(fmt.Sprintf("oauthd_ac_%d", i)), func(c data.AuthCode) (data.Family, error) {
			return data.Family{}, errors.New("probe")
		})
		if gone := errors.Is(err, data.ErrNotFound); gone == live {
			t.Fatalf("code %d: exchange error %v; live = %v", i, err, live)
		}
	}
	left, _ := s.ListFamilies(ctx, "")
	var ids []string
	for _, f := range left {
		ids = append(ids, f.ID)
	}
	mustEqual(t, "families left", ids, []string{"live", "live2"})
	_, err = s.GetSession(ctx, data.Hash("oauthd_ss_0"))
	wantErr(t, "GetSession(expired)", err, data.ErrNotFound)
	_, err = s.GetSession(ctx, data.Hash("oauthd_ss_1"))
	wantErr(t, "GetSession(live)", err, nil)

	again, err := s.GarbageCollect(ctx, now)
	wantErr(t, "GarbageCollect again", err, nil)
	mustEqual(t, "GarbageCollect again", again, data.GCResult{})
}

// testGCAfterRotation: the collector goes by a family's expiry as its
// last rotation left it: a family created about to expire and extended
// since stays until its new expiry; one whose rotation moved its expiry
// earlier goes at that one.
func testGCAfterRotation(t *testing.T, s data.Store) {
	now := t0.Add(time.Hour)
	for _, id := range []string{"extended", "shortened"} {
		code := newCode("oauthd_ac_"+id, "a")
		code.ExpiresAt = now.Add(time.Hour)
		wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
		_, _, err := s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
			f := newFamily(id, "a", "rt-"+id)
			f.ExpiresAt, f.AbsoluteExp = now.Add(-time.Second), now.Add(48*time.Hour)
			if id == "shortened" {
				f.ExpiresAt = now.Add(10 * time.Hour)
			}
			return f, nil
		})
		wantErr(t, "ExchangeAuthCode", err, nil)
	}
	for id, exp := range map[string]time.Time{"extended": now.Add(2 * time.Hour), "shortened": now.Add(-time.Minute)} {
		_, err := s.RotateRefreshToken(ctx, id, func(f data.Family) (data.Family, error) {
			f.TokenHash, f.ExpiresAt = data.Hash("rt2-"+id), exp
			f.Generation++
			return f, nil
		})
		wantErr(t, "RotateRefreshToken "+id, err, nil)
	}
	for _, c := range []struct {
		at   time.Time
		gone int
		left []string
	}{
		{now, 1, []string{"extended"}},
		{now, 0, []string{"extended"}},
		{now.Add(2 * time.Hour), 0, []string{"extended"}},
		{now.Add(2*time.Hour + time.Nanosecond), 1, nil},
	} {
		got, err := s.GarbageCollect(ctx, c.at)
		wantErr(t, "GarbageCollect", err, nil)
		if got.Families != c.gone {
			t.Fatalf("GarbageCollect(now%+v) removed %d families; want %d", c.at.Sub(now), got.Families, c.gone)
		}
		left, _ := s.ListFamilies(ctx, "a")
		var ids []string
		for _, f := range left {
			ids = append(ids, f.ID)
		}
		mustEqual(t, fmt.Sprintf("families left after GarbageCollect(now%+v)", c.at.Sub(now)), ids, c.left)
	}
}

// testNoncesOnce: a key is used once; another key is independent; an
// empty key is refused.
func testNoncesOnce(t *testing.T, s data.Store) {
	ctx := context.Background()
	exp := time.Now().Add(time.Minute)
	if used, err := s.NonceUsed(ctx, []byte("jti-1")); err != nil || used {
		t.Fatalf("NonceUsed before UseNonce = %v, %v; want false", used, err)
	}
	wantErr(t, "UseNonce", s.UseNonce(ctx, []byte("jti-1"), exp), nil)
	if used, err := s.NonceUsed(ctx, []byte("jti-1")); err != nil || !used {
		t.Fatalf("NonceUsed after UseNonce = %v, %v; want true", used, err)
	}
	wantErr(t, "UseNonce(replay)", s.UseNonce(ctx, []byte("jti-1"), exp), data.ErrExists)
	wantErr(t, "UseNonce(other)", s.UseNonce(ctx, []byte("jti-2"), exp), nil)
	wantErr(t, "UseNonce(empty)", s.UseNonce(ctx, nil, exp), data.ErrInvalid)
}

// testNoncesConcurrent: of many concurrent uses of one key exactly one
// succeeds.
func testNoncesConcurrent(t *testing.T, s data.Store) {
	ctx := context.Background()
	exp := time.Now().Add(time.Minute)
	const n = 16
	errs := make(chan error, n)
	for range n {
		go func() { errs <- s.UseNonce(ctx, []byte("race"), exp) }()
	}
	ok := 0
	for range n {
		switch err := <-errs; {
		case err == nil:
			ok++
		case !errors.Is(err, data.ErrExists):
			t.Fatalf("UseNonce: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent UseNonce calls succeeded, want 1", ok, n)
	}
}
