package cache_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/data/bolt"
	"oauthd/data/cache"
	"oauthd/data/datatest"
	"oauthd/data/memory"
)

func TestConformance(t *testing.T) {
	datatest.RunStoreTests(t, func(*testing.T) data.Store { return cache.New(memory.New()) })
}

// TestConformanceBolt runs the suite over the backend serve wraps.
func TestConformanceBolt(t *testing.T) {
	datatest.RunStoreTests(t, func(t *testing.T) data.Store {
		s, err := bolt.Open(filepath.Join(t.TempDir(), "c.db"), bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return cache.New(s)
	})
}

// counting counts the wrapped store's GetClient calls and can hold one of
// them after it has read, to stage a write racing with a cache fill.
type counting struct {
	data.Store
	gets   atomic.Int64
	loaded chan struct{} // closed-over per test; nil: no hold
	resume chan struct{}
}

func (c *counting) GetClient(ctx context.Context, id string) (data.Client, error) {
	c.gets.Add(1)
	cl, err := c.Store.GetClient(ctx, id)
	if c.loaded != nil {
		c.loaded <- struct{}{}
		<-c.resume
	}
	return cl, err
}

var t0 = time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)

func client(id string) data.Client {
	return data.Client{
		ID: id, Name: "App", OwnerID: 1, Type: data.Confidential,
		RedirectURIs: []string{"https://app.example/cb"}, Scopes: []string{"PROFILE_READ"},
		Status:    data.StatusApproved,
		Secrets:   []data.ClientSecret{{ID: "cs_1", Hash: data.Hash("s1"), CreatedAt: t0}},
		CreatedAt: t0, UpdatedAt: t0,
	}
}

func newStore(t *testing.T) (*cache.Store, *counting) {
	t.Helper()
	under := &counting{Store: memory.New()}
	s := cache.New(under)
	t.Cleanup(func() { s.Close() })
	if err := s.CreateClient(t.Context(), client("c1")); err != nil {
		t.Fatal(err)
	}
	return s, under
}

func TestGetClientServedFromMemory(t *testing.T) {
	s, under := newStore(t)
	for range 5 {
		c, err := s.GetClient(t.Context(), "c1")
		if err != nil || c.ID != "c1" {
			t.Fatalf("GetClient = %+v, %v", c, err)
		}
	}
	if n := under.gets.Load(); n != 1 {
		t.Errorf("wrapped GetClient called %d times; want 1", n)
	}
}

func TestCopiesAreIndependent(t *testing.T) {
	s, _ := newStore(t)
	c, _ := s.GetClient(t.Context(), "c1")
	c.Secrets[0].Hash[0] ^= 0xff
	c.Scopes[0] = "X"
	c.RedirectURIs[0] = "Y"
	again, _ := s.GetClient(t.Context(), "c1")
	if !data.Equal(again.Secrets[0].Hash, data.Hash("s1")) || again.Scopes[0] != "PROFILE_READ" || again.RedirectURIs[0] != "https://app.example/cb" {
		t.Errorf("a caller's change reached the cache: %+v", again)
	}
}

func TestUpdateInvalidates(t *testing.T) {
	s, under := newStore(t)
	ctx := t.Context()
	if _, err := s.GetClient(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	// A revoked secret stops working at once (the CLI's change over the
	// admin socket goes through this same store).
	_, err := s.UpdateClient(ctx, "c1", func(c data.Client) (data.Client, error) {
		c.Secrets = []data.ClientSecret{{ID: "cs_2", Hash: data.Hash("s2"), CreatedAt: t0}}
		return c, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.GetClient(ctx, "c1")
	if err != nil || len(c.Secrets) != 1 || c.Secrets[0].ID != "cs_2" {
		t.Fatalf("after update GetClient = %+v, %v; want secret cs_2", c.Secrets, err)
	}
	if n := under.gets.Load(); n != 2 {
		t.Errorf("wrapped GetClient called %d times; want 2", n)
	}
}

func TestUnknownClientNotCached(t *testing.T) {
	s, under := newStore(t)
	for range 3 {
		if _, err := s.GetClient(t.Context(), "nope"); err == nil {
			t.Fatal("GetClient(unknown) succeeded")
		}
	}
	if err := s.CreateClient(t.Context(), client("nope")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetClient(t.Context(), "nope"); err != nil {
		t.Fatalf("GetClient after create: %v", err)
	}
	if n := under.gets.Load(); n != 4 {
		t.Errorf("wrapped GetClient called %d times; want 4", n)
	}
}

// TestWriteDuringFillIsNotLost stages the race: a GetClient has read the
// old record from the database when an update commits; the old record must
// not be cached over the new one.
func TestWriteDuringFillIsNotLost(t *testing.T) {
	s, under := newStore(t)
	ctx := t.Context()
	under.loaded, under.resume = make(chan struct{}), make(chan struct{})
	got := make(chan data.Client)
	go func() {
		c, _ := s.GetClient(ctx, "c1")
		got <- c
	}()
	<-under.loaded // the reader holds the old record
	under.loaded = nil
	if _, err := s.UpdateClient(ctx, "c1", func(c data.Client) (data.Client, error) {
		c.Status = data.StatusRejected
		c.RejectReason = "spam"
		return c, nil
	}); err != nil {
		t.Fatal(err)
	}
	close(under.resume)
	if old := <-got; old.Status != data.StatusApproved {
		t.Fatalf("reader got %q; want the record it read (approved)", old.Status)
	}
	c, err := s.GetClient(ctx, "c1")
	if err != nil || c.Status != data.StatusRejected {
		t.Fatalf("GetClient after the race = %q, %v; want rejected", c.Status, err)
	}
}
