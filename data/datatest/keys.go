package datatest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"oauthd/data"
)

// Signing keys.

func newKey(kid string, state data.KeyState) data.SigningKey {
	return data.SigningKey{KID: kid, Alg: "ES256", State: state, Private: []byte(`{"d":"` + kid + `"}`), Public: []byte(`{"kid":"` + kid + `"}`), CreatedAt: t0}
}

func testKeys(t *testing.T, s data.Store) {
	empty, err := s.ListKeys(ctx)
	wantErr(t, "ListKeys(empty)", err, nil)
	if len(empty) != 0 {
		t.Fatalf("ListKeys on an empty store = %v", empty)
	}
	var seen []data.SigningKey
	set := []data.SigningKey{newKey("k1", data.KeyActive), newKey("k2", data.KeyNext)}
	got, err := s.UpdateKeys(ctx, func(old []data.SigningKey) ([]data.SigningKey, error) {
		seen = old
		return set, nil
	})
	wantErr(t, "UpdateKeys", err, nil)
	if len(seen) != 0 {
		t.Fatalf("UpdateKeys on an empty store passed %v", seen)
	}
	mustEqual(t, "UpdateKeys", got, set)
	list, _ := s.ListKeys(ctx)
	mustEqual(t, "ListKeys", list, set)

	// The update replaces the whole set.
	set2 := []data.SigningKey{newKey("k3", data.KeyActive)}
	_, err = s.UpdateKeys(ctx, func(old []data.SigningKey) ([]data.SigningKey, error) {
		mustEqual(t, "set passed to update", old, set)
		return set2, nil
	})
	wantErr(t, "UpdateKeys(replace)", err, nil)
	list, _ = s.ListKeys(ctx)
	mustEqual(t, "ListKeys after replace", list, set2)

	boom := errors.New("boom")
	_, err = s.UpdateKeys(ctx, func(old []data.SigningKey) ([]data.SigningKey, error) {
		old[0].State = data.KeyRetired
		return nil, boom
	})
	wantErr(t, "UpdateKeys(error)", err, boom)
	for _, bad := range [][]data.SigningKey{
		{newKey("a", data.KeyActive), newKey("b", data.KeyActive)},
		{newKey("a", data.KeyActive), newKey("a", data.KeyNext)},
		{newKey("", data.KeyActive)},
		{newKey("a", "bogus")},
	} {
		_, err = s.UpdateKeys(ctx, func([]data.SigningKey) ([]data.SigningKey, error) { return bad, nil })
		wantErr(t, fmt.Sprintf("UpdateKeys(%d keys)", len(bad)), err, data.ErrInvalid)
	}
	list, _ = s.ListKeys(ctx)
	mustEqual(t, "ListKeys after refused updates", list, set2)
}

func testKeysConcurrent(t *testing.T, s data.Store) {
	_, err := s.UpdateKeys(ctx, func([]data.SigningKey) ([]data.SigningKey, error) {
		return []data.SigningKey{newKey("k0", data.KeyActive), newKey("k1", data.KeyNext)}, nil
	})
	wantErr(t, "UpdateKeys", err, nil)
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			// promote: active → retired, next → active, a new next.
			_, errs[i] = s.UpdateKeys(ctx, func(ks []data.SigningKey) ([]data.SigningKey, error) {
				for j := range ks {
					switch ks[j].State {
					case data.KeyActive:
						ks[j].State = data.KeyRetired
					case data.KeyNext:
						ks[j].State = data.KeyActive
					}
				}
				return append(ks, newKey(fmt.Sprintf("g%d-%d", i, len(ks)), data.KeyNext)), nil
			})
		})
	}
	wg.Wait()
	for _, err := range errs {
		wantErr(t, "UpdateKeys(promote)", err, nil)
	}
	ks, _ := s.ListKeys(ctx)
	count := map[data.KeyState]int{}
	for _, k := range ks {
		count[k.State]++
	}
	if count[data.KeyActive] != 1 || count[data.KeyNext] != 1 || count[data.KeyRetired] != n || len(ks) != n+2 {
		t.Fatalf("after %d promotions: %v in %d keys; want 1 active, 1 next, %d retired (a lost update otherwise)", n, count, len(ks), n)
	}
}
