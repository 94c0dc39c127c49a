package datatest

import (
	"testing"
	"time"

	"oauthd/data"
)

func testSessions(t *testing.T, s data.Store) {
	sess := data.Session{Hash: data.Hash("oauthd_ss_1"), UserID: 1, CSRF: "csrf", CreatedAt: t0, ExpiresAt: t0.Add(12 * time.Hour)}
	wantErr(t, "CreateSession", s.CreateSession(ctx, sess), nil)
	wantErr(t, "CreateSession again", s.CreateSession(ctx, sess), data.ErrExists)
	noHash := sess
	noHash.Hash = nil
	wantRule(t, "CreateSession without a hash", s.CreateSession(ctx, noHash), "hash")
	got, err := s.GetSession(ctx, sess.Hash)
	wantErr(t, "GetSession", err, nil)
	mustEqual(t, "GetSession", got, sess)
	_, err = s.GetSession(ctx, data.Hash("oauthd_ss_2"))
	wantErr(t, "GetSession(unknown)", err, data.ErrNotFound)
	wantErr(t, "DeleteSession", s.DeleteSession(ctx, sess.Hash), nil)
	wantErr(t, "DeleteSession again", s.DeleteSession(ctx, sess.Hash), data.ErrNotFound)
	_, err = s.GetSession(ctx, sess.Hash)
	wantErr(t, "GetSession after delete", err, data.ErrNotFound)
}
