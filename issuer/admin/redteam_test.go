package admin

import (
	"errors"
	"testing"
	"time"

	"oauthd/data"
)

// TestRejectRevisionHoldsTheReviewedChange: an administrator rejects an
// owner's pending change with the revision they looked at. A retry of the
// same rejection (a double click, a timed-out call), or a rejection whose
// change the owner withdrew meanwhile, must not fall through to rejecting
// the whole client, which revokes every grant of its users for good.
func TestRejectRevisionHoldsTheReviewedChange(t *testing.T) {
	both(t, func(t *testing.T, e env) {
		ctx := t.Context()
		addDev(t, e.svc)
		id := approvedClient(t, e.svc).ClientID
		code := data.Hash("code")
		if err := e.store.CreateAuthCode(ctx, data.AuthCode{Hash: code, ClientID: id, UserID: 1, ExpiresAt: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.store.ExchangeAuthCode(ctx, code, func(data.AuthCode) (data.Family, error) {
			return data.Family{ID: "f1", ClientID: id, UserID: 1, TokenHash: data.Hash("f1"), ExpiresAt: t0.Add(time.Hour), AbsoluteExp: t0.Add(time.Hour)}, nil
		}); err != nil {
			t.Fatal(err)
		}
		grantsLeft := func(what string) {
			t.Helper()
			if fams, _ := e.store.ListFamilies(ctx, id); len(fams) != 1 {
				t.Fatalf("%s: the client's grants = %d; want 1 (untouched)", what, len(fams))
			}
		}

		edit(t, e.svc, id, ClientEdit{Scopes: []string{"PROFILE_READ", "BOOKING_READ", "TEAM_BOOKING_READ"}})
		seen, err := e.svc.ShowClient(ctx, id)
		if err != nil || seen.PendingChange == nil {
			t.Fatalf("show = %+v, %v; want a pending change", seen, err)
		}
		v, err := e.svc.RejectRevision(ctx, id, "not needed", seen.Revision)
		if err != nil || v.Status != "approved" || v.PendingChange != nil || v.RejectedChange == nil {
			t.Fatalf("RejectRevision = %+v, %v; want the change rejected, the client approved", v, err)
		}
		// The same rejection again: the client is no longer what was seen.
		if _, err := e.svc.RejectRevision(ctx, id, "not needed", seen.Revision); !errors.Is(err, data.ErrConflict) {
			t.Fatalf("retried RejectRevision: %v; want ErrConflict", err)
		}
		if c, _ := e.store.GetClient(ctx, id); c.Status != data.StatusApproved {
			t.Fatalf("after a retried rejection the client is %s; want approved", c.Status)
		}
		grantsLeft("retried rejection")

		// The owner withdraws the change between the look and the rejection.
		edit(t, e.svc, id, ClientEdit{Scopes: []string{"PROFILE_READ", "BOOKING_READ", "TEAM_BOOKING_READ"}})
		seen, _ = e.svc.ShowClient(ctx, id)
		edit(t, e.svc, id, ClientEdit{Scopes: []string{"PROFILE_READ", "BOOKING_READ"}})
		if _, err := e.svc.RejectRevision(ctx, id, "not needed", seen.Revision); !errors.Is(err, data.ErrConflict) {
			t.Fatalf("RejectRevision of a withdrawn change: %v; want ErrConflict", err)
		}
		grantsLeft("rejection of a withdrawn change")

		// With the current revision, rejecting the client itself still works.
		seen, _ = e.svc.ShowClient(ctx, id)
		if v, err := e.svc.RejectRevision(ctx, id, "abuse", seen.Revision); err != nil || v.Status != "rejected" {
			t.Fatalf("RejectRevision of the client = %+v, %v; want rejected", v, err)
		}
	})
}
