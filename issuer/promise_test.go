package issuer

import (
	"context"
	"reflect"
	"testing"
	"time"

	"oauthd/data"
)

// capturingStore hands the refresh grant's update function and presented
// hash to the test, and rotates as the wrapped store does.
type capturingStore struct {
	Store
	update    func(data.Family) (data.Family, error)
	presented []byte
}

func (c *capturingStore) RotateRefreshToken(ctx context.Context, id string, update func(data.Family) (data.Family, error)) (data.Family, error) {
	c.update, c.presented = update, data.Presented(ctx)
	return c.Store.RotateRefreshToken(ctx, id, update)
}

// TestRefreshKeepsTheRotationPromise: the refresh grant's update function
// keeps the promise it makes with data.WithPresented, on which
// data/postgres rotates in one statement when another replica rotated
// last: on a family whose current token is the presented one, the
// decision and the successor do not depend on PrevHash, RotatedAt or
// Generation (but for one more), and a later ExpiresAt never refuses. A
// change of refresh.go that reads one of them fails here.
func TestRefreshKeepsTheRotationPromise(t *testing.T) {
	capture := &capturingStore{}
	env := newTkEnv(t, func(c *Config) { capture.Store = c.Store; c.Store = capture })
	tok := env.exchange()
	id, _ := data.ParseRefreshToken(tok.RefreshToken)
	tok = env.refreshOK(tok.RefreshToken)
	stored, err := env.store.GetFamily(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	env.refreshOK(tok.RefreshToken) // captures the update that rotated stored
	if !data.Equal(capture.presented, data.Hash(tok.RefreshToken)) {
		t.Fatalf("the refresh grant presented %x; want the hash of the refresh token", capture.presented)
	}
	if !data.Equal(stored.TokenHash, capture.presented) {
		t.Fatal("setup: the stored family's current token is not the presented one")
	}
	base, err := capture.update(stored)
	if err != nil {
		t.Fatalf("update on the stored family: %v", err)
	}
	other := stored
	other.PrevHash = data.Hash("some earlier token")
	other.RotatedAt = stored.RotatedAt.Add(-time.Hour)
	other.Generation = stored.Generation + 40
	other.ExpiresAt = stored.ExpiresAt.Add(time.Minute) // later
	got, err := capture.update(other)
	if err != nil {
		t.Fatalf("update on the family with other PrevHash, RotatedAt, Generation and a later ExpiresAt: %v; want the same rotation", err)
	}
	if got.Generation != other.Generation+1 || base.Generation != stored.Generation+1 {
		t.Errorf("Generation: %d from %d, %d from %d; want one more each", base.Generation, stored.Generation, got.Generation, other.Generation)
	}
	// Every field but the new token (a fresh secret each call) and the
	// generation is the same.
	got.TokenHash, got.Generation = base.TokenHash, base.Generation
	if !reflect.DeepEqual(got, base) {
		t.Errorf("successors differ:\n%+v\n%+v", got, base)
	}
	// An expired family is refused whatever else.
	expired := stored
	expired.ExpiresAt = env.clock().Add(-time.Second)
	if _, err := capture.update(expired); err == nil {
		t.Error("update rotated a family whose ExpiresAt has passed")
	}
}
