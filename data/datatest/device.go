package datatest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"oauthd/data"
)

// newDevice is a pending device code of client clientID, made at t0.
func newDevice(userCode, clientID string) data.DeviceCode {
	dc := data.NewDeviceCode(userCode, t0)
	return data.DeviceCode{
		UserCode:  userCode,
		Hash:      data.DeviceCodeKey(dc),
		ClientID:  clientID,
		Scopes:    []string{"BOOKING_READ"},
		CreatedAt: t0,
		ExpiresAt: t0.Add(10 * time.Minute),
		Interval:  5,
		State:     data.DevicePending,
	}
}

func testDeviceCodes(t *testing.T, s data.Store) {
	d := newDevice("BCDFGHJK", "a")
	wantErr(t, "CreateDeviceCode", s.CreateDeviceCode(ctx, d, 10), nil)
	wantErr(t, "CreateDeviceCode again", s.CreateDeviceCode(ctx, d, 10), data.ErrExists)
	other := newDevice("BCDFGHJK", "b")
	wantErr(t, "CreateDeviceCode of a taken user code", s.CreateDeviceCode(ctx, other, 10), data.ErrExists)
	bad := newDevice("bcdfghjk", "a")
	var re *data.RuleError
	if err := s.CreateDeviceCode(ctx, bad, 10); !errors.As(err, &re) {
		t.Fatalf("CreateDeviceCode(lower-case user code) = %v; want a RuleError", err)
	}
	noCode := newDevice("BCDFGHJL", "a")
	noCode.UserCode = ""
	if err := s.CreateDeviceCode(ctx, noCode, 10); !errors.As(err, &re) || re.Field != "user_code" {
		t.Fatalf("CreateDeviceCode(empty user code) = %v; want a RuleError on user_code", err)
	}
	noKey := newDevice("BCDFGHJL", "a")
	noKey.Hash = nil
	if err := s.CreateDeviceCode(ctx, noKey, 10); !errors.As(err, &re) || re.Field != "hash" {
		t.Fatalf("CreateDeviceCode(no key) = %v; want a RuleError on hash", err)
	}
	got, err := s.GetDeviceCode(ctx, d.UserCode)
	wantErr(t, "GetDeviceCode", err, nil)
	mustEqual(t, "GetDeviceCode", got, data.Normalize(d))
	_, err = s.GetDeviceCode(ctx, "ZZZZZZZZ")
	wantErr(t, "GetDeviceCode(unknown)", err, data.ErrNotFound)
	_, err = s.UpdateDeviceCode(ctx, "ZZZZZZZZ", func(d data.DeviceCode) (data.DeviceCode, error) { return d, nil })
	wantErr(t, "UpdateDeviceCode(unknown)", err, data.ErrNotFound)

	// An update error writes nothing.
	boom := errors.New("boom")
	_, err = s.UpdateDeviceCode(ctx, d.UserCode, func(d data.DeviceCode) (data.DeviceCode, error) {
		d.Interval = 99
		return d, boom
	})
	wantErr(t, "UpdateDeviceCode(error)", err, boom)
	// Every field a poll and an approval write comes back.
	want := data.Normalize(d)
	want.LastPoll = t0.Add(7 * time.Second)
	want.Interval = 10
	want.State = data.DeviceApproved
	want.UserID = 1
	got, err = s.UpdateDeviceCode(ctx, d.UserCode, func(d data.DeviceCode) (data.DeviceCode, error) {
		d.LastPoll, d.Interval, d.State, d.UserID = want.LastPoll, want.Interval, want.State, want.UserID
		return d, nil
	})
	wantErr(t, "UpdateDeviceCode", err, nil)
	mustEqual(t, "UpdateDeviceCode", got, want)
	got, err = s.GetDeviceCode(ctx, d.UserCode)
	wantErr(t, "GetDeviceCode after update", err, nil)
	mustEqual(t, "GetDeviceCode after update", got, want)
	// An approved code stays approved; the key and client never change.
	for name, f := range map[string]func(data.DeviceCode) data.DeviceCode{
		"deny an approved code": func(d data.DeviceCode) data.DeviceCode { d.State = data.DeviceDenied; return d },
		"change the client":     func(d data.DeviceCode) data.DeviceCode { d.ClientID = "b"; return d },
		"change the key":        func(d data.DeviceCode) data.DeviceCode { d.Hash = []byte("x"); return d },
	} {
		_, err := s.UpdateDeviceCode(ctx, d.UserCode, func(d data.DeviceCode) (data.DeviceCode, error) { return f(d), nil })
		if !errors.As(err, &re) {
			t.Fatalf("UpdateDeviceCode(%s) = %v; want a RuleError", name, err)
		}
	}
	got, _ = s.GetDeviceCode(ctx, d.UserCode)
	mustEqual(t, "GetDeviceCode after refused updates", got, want)
}

// testDeviceCodeCap: a client holds at most max unexpired device codes;
// expired ones do not count, other clients are not affected.
func testDeviceCodeCap(t *testing.T, s data.Store) {
	codes := []string{"BBBBBBBB", "CCCCCCCC", "DDDDDDDD", "FFFFFFFF"}
	for _, c := range codes[:3] {
		wantErr(t, "CreateDeviceCode "+c, s.CreateDeviceCode(ctx, newDevice(c, "a"), 3), nil)
	}
	wantErr(t, "CreateDeviceCode over the cap", s.CreateDeviceCode(ctx, newDevice(codes[3], "a"), 3), data.ErrTooManyDeviceCodes)
	if _, err := s.GetDeviceCode(ctx, codes[3]); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("a refused device code was stored: %v", err)
	}
	wantErr(t, "CreateDeviceCode of another client", s.CreateDeviceCode(ctx, newDevice(codes[3], "b"), 3), nil)
	// Once the first three have expired, the client may have more.
	later := newDevice("GGGGGGGG", "a")
	later.CreatedAt = t0.Add(10 * time.Minute)
	later.ExpiresAt = later.CreatedAt.Add(10 * time.Minute)
	wantErr(t, "CreateDeviceCode after expiry", s.CreateDeviceCode(ctx, later, 3), nil)
}

// testDeviceCodeCapConcurrent: the count and the insert are one step.
func testDeviceCodeCapConcurrent(t *testing.T, s data.Store) {
	const n, max = 20, 5
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			code := string([]byte{'B', 'C', 'D', 'F', data.UserCodeAlphabet[i%20], data.UserCodeAlphabet[i/20], 'K', 'L'})
			errs[i] = s.CreateDeviceCode(ctx, newDevice(code, "a"), max)
		})
	}
	wg.Wait()
	if ok := raceOutcomes(t, "CreateDeviceCode", errs, data.ErrTooManyDeviceCodes); ok != max {
		t.Fatalf("%d concurrent creates succeeded; want exactly %d (the cap)", ok, max)
	}
}

// testDevicePollRace: polls update the record one after the other (none
// lost), and of two or more redemptions of an approved device code
// (its authorization code stored under the device code's key) exactly
// one gets a family.
func testDevicePollRace(t *testing.T, s data.Store) {
	d := newDevice("HJKLMNPQ", "a")
	wantErr(t, "CreateDeviceCode", s.CreateDeviceCode(ctx, d, 10), nil)
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.UpdateDeviceCode(ctx, d.UserCode, func(d data.DeviceCode) (data.DeviceCode, error) {
				d.Interval++
				return d, nil
			})
		})
	}
	wg.Wait()
	if ok := raceOutcomes(t, "UpdateDeviceCode", errs); ok != n {
		t.Fatalf("%d of %d polls succeeded", ok, n)
	}
	got, _ := s.GetDeviceCode(ctx, d.UserCode)
	if got.Interval != d.Interval+n {
		t.Fatalf("Interval after %d concurrent polls = %d; want %d (an update was lost)", n, got.Interval, d.Interval+n)
	}
	code := data.AuthCode{Hash: d.Hash, ClientID: "a", UserID: 1, Scopes: d.Scopes, CreatedAt: t0, ExpiresAt: d.ExpiresAt}
	wantErr(t, "CreateAuthCode for the device", s.CreateAuthCode(ctx, code), nil)
	wantErr(t, "CreateAuthCode for the device again", s.CreateAuthCode(ctx, code), data.ErrExists)
	for i := range n {
		wg.Go(func() {
			_, _, errs[i] = s.ExchangeAuthCode(ctx, d.Hash, familyFrom(fmt.Sprintf("dfam%d", i), "rt"))
		})
	}
	wg.Wait()
	ok := raceOutcomes(t, "ExchangeAuthCode(device)", errs, data.ErrCodeUsed)
	fams, err := s.ListFamilies(ctx, "")
	wantErr(t, "ListFamilies", err, nil)
	if ok != 1 || len(fams) != 1 {
		t.Fatalf("%d device-code redemptions succeeded, %d families stored; want 1 and 1", ok, len(fams))
	}
}

// testDeviceCodeGC: the collector removes expired device codes only.
func testDeviceCodeGC(t *testing.T, s data.Store) {
	wantErr(t, "CreateDeviceCode", s.CreateDeviceCode(ctx, newDevice("BBBBBBBB", "a"), 10), nil)
	long := newDevice("CCCCCCCC", "a")
	long.ExpiresAt = t0.Add(time.Hour)
	wantErr(t, "CreateDeviceCode", s.CreateDeviceCode(ctx, long, 10), nil)
	r, err := s.GarbageCollect(ctx, t0.Add(30*time.Minute))
	wantErr(t, "GarbageCollect", err, nil)
	if r.DeviceCodes != 1 {
		t.Fatalf("GarbageCollect removed %d device codes; want 1", r.DeviceCodes)
	}
	if _, err := s.GetDeviceCode(ctx, "BBBBBBBB"); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("expired device code after GC: %v", err)
	}
	if _, err := s.GetDeviceCode(ctx, "CCCCCCCC"); err != nil {
		t.Fatalf("live device code after GC: %v", err)
	}
}
