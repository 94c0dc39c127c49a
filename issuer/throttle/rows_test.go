package throttle

import (
	"bytes"
	"context"
	"net/netip"
	"testing"
	"time"
)

// fakeRows records what a RowStore asks of its database and answers a
// state per row.
type fakeRows struct {
	rows   [][]byte
	rules  []Rule
	failed bool
	state  map[string]int64
}

func (f *fakeRows) Load(_ context.Context, rows [][]byte) ([]int64, error) {
	f.rows = rows
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = f.state[string(r)]
	}
	return out, nil
}

func (f *fakeRows) Fail(_ context.Context, _ time.Time, rows [][]byte, rules []Rule) ([]int64, error) {
	f.rows, f.rules = rows, rules
	out := make([]int64, len(rows))
	for i, r := range rows {
		f.state[string(r)] += 7
		out[i] = f.state[string(r)]
	}
	return out, nil
}

func (f *fakeRows) Charge(ctx context.Context, now time.Time, rows [][]byte, rules []Rule) ([]int64, bool, error) {
	full, err := f.Fail(ctx, now, rows, rules)
	return full, true, err
}

func (f *fakeRows) Settle(_ context.Context, _ time.Time, rows [][]byte, rules []Rule, failed bool) ([]int64, error) {
	f.rows, f.rules, f.failed = rows, rules, failed
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = f.state[string(r)]
	}
	return out, nil
}

// TestRowStore: a key of a limiter is the row "NAME:" + its binary form
// (so two limiters' keys never share a row), Fail, Charge and Settle pass
// each key's rule (and whether the attempt failed) and set Full from the
// answer, Load reads the same rows back, and an
// announced row reaches the followers of its limiter only, as the key it
// was; a malformed announcement is dropped.
func TestRowStore(t *testing.T) {
	ctx := t.Context()
	f := &fakeRows{state: map[string]int64{}}
	s := NewRowStore(f)
	addr := netip.MustParseAddr("192.0.2.1")
	k1, k2 := UserKey(42, addr), AddrKey(addr)
	rule := Rule{Burst: 5, Every: time.Minute}
	keys := []StoredKey{{Key: k1, Rule: rule}, {Key: k2, Rule: Rule{Burst: 50, Every: time.Second}}}
	if err := s.Fail(ctx, "login", time.Unix(100, 0), keys); err != nil {
		t.Fatal(err)
	}
	want, _ := k1.AppendBinary([]byte("login:"))
	if len(f.rows) != 2 || !bytes.Equal(f.rows[0], want) || f.rules[0] != rule || f.rules[1].Burst != 50 {
		t.Fatalf("Fail sent rows %q rules %v; want %q first with its rule", f.rows, f.rules, want)
	}
	if keys[0].Full != 7 || keys[1].Full != 7 {
		t.Fatalf("Full after Fail = %d, %d; want the database's 7", keys[0].Full, keys[1].Full)
	}
	other := []StoredKey{{Key: k1}}
	if err := s.Load(ctx, "token", other); err != nil {
		t.Fatal(err)
	}
	if other[0].Full != 0 {
		t.Fatalf("the token limiter's key read %d; want 0 (another limiter's row)", other[0].Full)
	}
	again := []StoredKey{{Key: k1}}
	if err := s.Load(ctx, "login", again); err != nil || again[0].Full != 7 {
		t.Fatalf("Load = %d, %v; want 7", again[0].Full, err)
	}

	held := []StoredKey{{Key: k1, Rule: rule}}
	if ok, err := s.Charge(ctx, "login", time.Unix(100, 0), held); err != nil || !ok || held[0].Full != 14 || !bytes.Equal(f.rows[0], want) {
		t.Fatalf("Charge = %v, %v, Full %d, row %q; want held, the database's 14, %q", ok, err, held[0].Full, f.rows[0], want)
	}
	if err := s.Settle(ctx, "login", time.Unix(100, 0), held, true); err != nil || !f.failed || f.rules[0] != rule || held[0].Full != 14 {
		t.Fatalf("Settle = %v, failed %v, rule %v, Full %d; want the failure passed on with its rule", err, f.failed, f.rules[0], held[0].Full)
	}

	var got []Key
	var fulls []int64
	s.Follow("login", func(k Key, full int64) { got, fulls = append(got, k), append(fulls, full) })
	s.Follow("token", func(Key, int64) { t.Error("the token limiter heard a login key") })
	s.Learn(want, 99)
	s.Learn([]byte("login:short"), 1)
	s.Learn([]byte("no colon"), 1)
	if len(got) != 1 || got[0] != k1 || fulls[0] != 99 {
		t.Fatalf("followers heard %v %v; want only %v at 99", got, fulls, k1)
	}
}
