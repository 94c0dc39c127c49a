package datatest

import (
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

	got, err := s.GarbageCollect(ctx, now)
	wantErr(t, "GarbageCollect", err, nil)
	mustEqual(t, "GarbageCollect", got, data.GCResult{AuthCodes: 3, Families: 3, Sessions: 1})

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
