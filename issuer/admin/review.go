package admin

import (
	"context"
	"errors"
	"fmt"
	"oauthd/data"
	"strings"
)

// ApproveClient implements [Service.ApproveClient]: it approves a client
// under review, or, on an approved client with a pending change, applies
// that change.
func (l *Local) ApproveClient(ctx context.Context, id string) (ClientView, error) {
	return l.ApproveRevision(ctx, id, "")
}

// ApproveRevision implements [Service.ApproveRevision]; revision "" checks
// nothing.
func (l *Local) ApproveRevision(ctx context.Context, id, revision string) (ClientView, error) {
	var change *data.ClientChange
	c, err := l.update(ctx, id, func(c data.Client) (data.Client, error) {
		change = nil
		if r := clientRevision(c); revision != "" && r != revision {
			return c, newError(data.ErrConflict, fmt.Sprintf("client %s changed since revision %s (it is now %s): nothing was approved; "+
				"look again with `oauthd clients show %s`", id, revision, r, id))
		}
		if c.Status == data.StatusApproved && c.Pending != nil {
			change = c.Pending
			return c.WithPending(), nil
		}
		c.Status, c.RejectReason = data.StatusApproved, ""
		return c, nil
	})
	if err != nil {
		return ClientView{}, err
	}
	if change != nil {
		l.audit(ctx, "client_change_approved", append([]any{"client_id", id}, changeAttrs(change)...)...)
	} else {
		l.audit(ctx, "client_approved", "client_id", id)
	}
	return l.viewOne(ctx, c)
}

// RejectClient implements [Service.RejectClient]; reason is required. On
// an approved client with a pending change it rejects that change (the
// client stays approved, as it was); otherwise it rejects the client.
func (l *Local) RejectClient(ctx context.Context, id, reason string) (ClientView, error) {
	return l.RejectRevision(ctx, id, reason, "")
}

// RejectRevision implements [Service.RejectRevision]; revision "" checks
// nothing.
func (l *Local) RejectRevision(ctx context.Context, id, reason, revision string) (ClientView, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return ClientView{}, newError(data.ErrInvalid, "a rejection needs a reason; pass --reason TEXT")
	}
	var change *data.ClientChange
	c, err := l.update(ctx, id, func(c data.Client) (data.Client, error) {
		change = nil
		if r := clientRevision(c); revision != "" && r != revision {
			return c, newError(data.ErrConflict, fmt.Sprintf("client %s changed since revision %s (it is now %s): nothing was rejected; "+
				"look again with `oauthd clients show %s`", id, revision, r, id))
		}
		if c.Status == data.StatusApproved && c.Pending != nil {
			change = c.Pending.Clone()
			change.RejectReason = reason
			c.Pending, c.RejectedChange = nil, change
			return c, nil
		}
		c.Status, c.RejectReason = data.StatusRejected, reason
		return c, nil
	})
	if err != nil {
		return ClientView{}, err
	}
	if change != nil {
		l.audit(ctx, "client_change_rejected", append([]any{"client_id", id, "reason", reason}, changeAttrs(change)...)...)
	} else {
		l.audit(ctx, "client_rejected", "client_id", id, "reason", reason)
		if c.Status == data.StatusRejected {
			if _, err := l.revokeGrants(ctx, id); err != nil {
				return ClientView{}, err
			}
		}
	}
	return l.viewOne(ctx, c)
}

// revokeGrants deletes every refresh-token family of a rejected client, so
// that its users' grants end for good: its access tokens are refused at
// once by /v2/me and introspection (which also check the client's status,
// for the moment between the rejection and this), and a later approval
// does not bring the grants back; the users authorize again. It returns
// how many families it deleted.
func (l *Local) revokeGrants(ctx context.Context, id string) (int, error) {
	fams, err := l.store.ListFamilies(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("client %s is rejected, but listing its grants failed (run the rejection again to revoke them): %w", id, err)
	}
	n := 0
	for _, f := range fams {
		switch err := l.store.DeleteFamily(ctx, f.ID); {
		case err == nil:
			n++
		case !errors.Is(err, data.ErrNotFound):
			return n, fmt.Errorf("client %s is rejected, but revoking its grants failed after %d of %d (run the rejection again): %w", id, n, len(fams), err)
		}
	}
	l.audit(ctx, "client_grants_revoked", "client_id", id, "count", n)
	return n, nil
}
