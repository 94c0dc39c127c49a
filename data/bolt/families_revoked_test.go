package bolt

import (
	"path/filepath"
	"testing"
	"time"
)

// TestRevocationSurvivesCrash: a revocation acknowledged by DeleteFamily is
// in the log with the delete, so a kill -9 right after it (a copy of the
// files while the store is open) keeps both the delete and the tombstone;
// a checkpoint then moves the tombstone into the file, where ListRevoked
// still finds it.
func TestRevocationSurvivesCrash(t *testing.T) {
	s := reopen(t, filepath.Join(t.TempDir(), "oauthd.db"))
	newFamily(t, s, "fam1")
	newFamily(t, s, "fam2")
	if err := s.DeleteFamily(t.Context(), "fam1"); err != nil {
		t.Fatal(err)
	}
	c := reopen(t, crashCopy(t, s))
	if _, err := c.GetFamily(t.Context(), "fam1"); err == nil {
		t.Fatal("the revoked family is back after the crash")
	}
	rs, err := c.ListRevoked(t.Context(), time.Time{})
	if err != nil || len(rs) != 1 || rs[0].GrantID != "fam1" || !rs[0].LastIssuedAt.Equal(walT0) {
		t.Fatalf("ListRevoked after the crash = %+v, %v; want fam1 issued at %s", rs, err, walT0)
	}
	// Through a checkpoint (ListFamilies runs after one) into the file.
	if _, err := c.ListFamilies(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	rs, err = c.ListRevoked(t.Context(), time.Time{})
	if err != nil || len(rs) != 1 || rs[0].GrantID != "fam1" {
		t.Fatalf("ListRevoked after a checkpoint = %+v, %v", rs, err)
	}
}
