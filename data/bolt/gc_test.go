package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data"
)

// The expiry index and the sweep in batches (expiry.go, gc.go). newFamily
// (wal_test.go) makes a family of user 1, client "app", expiring at
// walT0 + 1 h, from a code expiring at walT0 + 1 min.

// indexEntries lists the expiry index of the bbolt file (after a
// checkpoint) as "bucket/key@offset from walT0".
func indexEntries(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	err := s.exclusive(t.Context(), "test", false, func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketExpiry).ForEach(func(k, _ []byte) error {
			ns := int64(binary.BigEndian.Uint64(k[:8]) ^ 1<<63)
			key := string(k[9:])
			if int(k[8]) != hotFamilies && int(k[8]) != hotRevoked {
				key = fmt.Sprintf("%x", k[9:])
			}
			out = append(out, fmt.Sprintf("%s/%s@%v", hotBuckets[k[8]], key, time.Unix(0, ns).Sub(walT0)))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func familyIDs(t *testing.T, s *Store) []string {
	t.Helper()
	fams, err := s.ListFamilies(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range fams {
		ids = append(ids, f.ID)
	}
	return ids
}

// setExpiry rotates family id to generation gen+1 with expiry exp.
func setExpiry(t *testing.T, s *Store, id string, gen int, exp time.Time) {
	t.Helper()
	_, err := s.RotateRefreshToken(t.Context(), id, func(f data.Family) (data.Family, error) {
		f.TokenHash = data.Hash(fmt.Sprintf("%s/%d", id, gen+1))
		f.Generation++
		f.ExpiresAt = exp
		return f, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSweepByIndex: the sweep removes exactly what expired, from the
// index: a family whose entry went stale because rotations extended it
// stays (its entry moves to its expiry), a deleted family's entry goes
// with no record counted, and a family's other indexes go with it.
func TestSweepByIndex(t *testing.T) {
	s := openTestStore(t)
	for _, id := range []string{"a-expires", "b-extended", "c-deleted"} {
		newFamily(t, s, id)
	}
	setExpiry(t, s, "b-extended", 0, walT0.Add(3*time.Hour))
	setExpiry(t, s, "b-extended", 1, walT0.Add(5*time.Hour)) // an extension writes no entry
	if err := s.DeleteFamily(t.Context(), "c-deleted"); err != nil {
		t.Fatal(err)
	}
	before := indexEntries(t, s)
	if n := len(before); n != 7 { // 3 codes, 3 families, 1 tombstone
		t.Fatalf("index before the sweep: %v; want 7 entries", before)
	}

	r, err := s.GarbageCollect(t.Context(), walT0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if want := (data.GCResult{AuthCodes: 3, Families: 1}); r != want {
		t.Fatalf("GarbageCollect = %+v; want %+v", r, want)
	}
	if ids := familyIDs(t, s); !slices.Equal(ids, []string{"b-extended"}) {
		t.Fatalf("families after the sweep: %v; want b-extended", ids)
	}
	if fams, _ := s.ListUserFamilies(t.Context(), 1); len(fams) != 1 || fams[0].ID != "b-extended" {
		t.Fatalf("ListUserFamilies after the sweep: %+v; want b-extended", fams)
	}
	want := []string{"families/b-extended@5h0m0s", "revoked/c-deleted@6h0m0s"}
	if got := indexEntries(t, s); !slices.Equal(got, want) {
		t.Fatalf("index after the sweep: %v; want %v", got, want)
	}
	r, err = s.GarbageCollect(t.Context(), walT0.Add(7*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if want := (data.GCResult{Families: 1, Revocations: 1}); r != want {
		t.Fatalf("second GarbageCollect = %+v; want %+v", r, want)
	}
	if got := indexEntries(t, s); len(got) != 0 {
		t.Fatalf("index after everything expired: %v; want empty", got)
	}
}

// TestExpiryIndexBuiltOnOpen: a file written before the expiry index
// existed (no bucket, no marker) gets it at the next Open (here one record
// a transaction), and sweeps by it.
func TestExpiryIndexBuiltOnOpen(t *testing.T) {
	defer func(n int) { buildChunk = n }(buildChunk)
	buildChunk = 1
	s := openTestStore(t)
	path := s.Path()
	newFamily(t, s, "a")
	newFamily(t, s, "b")
	setExpiry(t, s, "b", 0, walT0.Add(5*time.Hour))
	if err := s.UseNonce(t.Context(), []byte("jti"), walT0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	sess := data.Session{Hash: data.Hash("sess"), UserID: 1, CreatedAt: walT0, ExpiresAt: walT0.Add(time.Minute)}
	if err := s.CreateSession(t.Context(), sess); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket(bucketExpiry); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Delete(keyExpiryIndex)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	s = reopen(t, path)
	want := []string{"auth_codes/" + fmt.Sprintf("%x", data.Hash("code-a")) + "@1m0s", "auth_codes/" + fmt.Sprintf("%x", data.Hash("code-b")) + "@1m0s",
		"sessions/" + fmt.Sprintf("%x", data.Hash("sess")) + "@1m0s", "nonces/" + fmt.Sprintf("%x", "jti") + "@1m0s",
		"families/a@1h0m0s", "families/b@5h0m0s"}
	got := indexEntries(t, s)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("index built at open: %v; want %v", got, want)
	}
	r, err := s.GarbageCollect(t.Context(), walT0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if want := (data.GCResult{AuthCodes: 2, Families: 1, Sessions: 1, Nonces: 1}); r != want {
		t.Fatalf("GarbageCollect = %+v; want %+v", r, want)
	}
	if ids := familyIDs(t, s); !slices.Equal(ids, []string{"b"}) {
		t.Fatalf("families after the sweep: %v; want b", ids)
	}
}

// TestSweepInBatches: a sweep over many expired records commits them in
// several transactions, and a hot write queued between two of them is
// answered before the sweep ends.
func TestSweepInBatches(t *testing.T) {
	s := openTestStore(t)
	s.sweepBatch = 10
	const n = 35
	for i := range n {
		c := data.AuthCode{Hash: data.Hash(fmt.Sprint("code-", i)), ClientID: "app", UserID: 1, RedirectURI: "https://app.example.com/cb",
			CreatedAt: walT0, ExpiresAt: walT0.Add(time.Minute)}
		if err := s.CreateAuthCode(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	var batches int
	var between []error
	s.afterBatch = func() {
		batches++
		// The writers run between two batches: this write, in the
		// sweep's own goroutine, would never be answered if the sweep
		// still held the committer.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		sess := data.Session{Hash: data.Hash(fmt.Sprint("sess-", batches)), UserID: 1, CreatedAt: walT0, ExpiresAt: walT0.Add(time.Hour)}
		between = append(between, s.CreateSession(ctx, sess))
	}
	r, err := s.GarbageCollect(t.Context(), walT0.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if r.AuthCodes != n {
		t.Fatalf("GarbageCollect removed %d codes; want %d", r.AuthCodes, n)
	}
	// 10, 10, 10 and then 5: three full batches, each followed by the
	// writers.
	if batches != 3 || slices.ContainsFunc(between, func(err error) bool { return err != nil }) {
		t.Fatalf("%d batches with writes between them: %v; want 3 answered", batches, between)
	}
	if _, err := s.GetSession(t.Context(), data.Hash("sess-3")); err != nil {
		t.Fatalf("the write between the last two batches: %v", err)
	}
}

// TestExpiryIndexSurvivesCrash: the index entries go through the
// write-ahead log with their records: after a crash that left them in the
// log only, the replayed store sweeps the records that expired.
func TestExpiryIndexSurvivesCrash(t *testing.T) {
	s := openTestStore(t)
	newFamily(t, s, "a")
	newFamily(t, s, "b")
	setExpiry(t, s, "b", 0, walT0.Add(30*time.Minute)) // moved earlier: a new entry
	if s.CommitStats().Checkpoints != 0 {
		t.Fatal("a checkpoint ran; the test needs the writes in the log only")
	}
	c := reopen(t, crashCopy(t, s))
	r, err := c.GarbageCollect(t.Context(), walT0.Add(45*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if want := (data.GCResult{AuthCodes: 2, Families: 1}); r != want {
		t.Fatalf("GarbageCollect after the crash = %+v; want %+v", r, want)
	}
	if ids := familyIDs(t, c); !slices.Equal(ids, []string{"a"}) {
		t.Fatalf("families after the sweep: %v; want a", ids)
	}
}
