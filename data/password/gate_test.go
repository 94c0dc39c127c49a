package password

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestGateQueue: Slots enter at once, Queue more wait, the rest are
// turned away at once; a waiter gets the first slot that is left.
func TestGateQueue(t *testing.T) {
	g := NewGate(GateConfig{Slots: 2, Queue: 1, MaxWait: time.Minute})
	ctx := context.Background()
	for i := range 2 {
		if err := g.Enter(ctx); err != nil {
			t.Fatalf("Enter %d = %v; want a free slot", i+1, err)
		}
	}
	waited := make(chan error, 1)
	go func() { waited <- g.Enter(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for len(g.admit) < 3 { // the waiter is queued
		if time.Now().After(deadline) {
			t.Fatal("the third Enter never queued")
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	if err := g.Enter(ctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("Enter with slots and queue full = %v; want ErrBusy", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the refusal took %v; want it at once", d)
	}
	g.Leave()
	if err := <-waited; err != nil {
		t.Fatalf("queued Enter = %v; want the freed slot", err)
	}
	g.Leave()
	g.Leave()
	if len(g.slots) != 0 || len(g.admit) != 0 {
		t.Errorf("after every Leave: %d slots, %d admitted; want 0, 0", len(g.slots), len(g.admit))
	}
}

// TestGateMaxWait: a queued check gives up after MaxWait, or when its
// request is cancelled, and leaves no slot taken.
func TestGateMaxWait(t *testing.T) {
	g := NewGate(GateConfig{Slots: 1, Queue: 2, MaxWait: 20 * time.Millisecond})
	if err := g.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := g.Enter(context.Background()); !errors.Is(err, ErrBusy) {
		t.Errorf("Enter past MaxWait = %v; want ErrBusy", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g2 := NewGate(GateConfig{Slots: 1, Queue: 2, MaxWait: time.Hour})
	g2.Enter(context.Background())
	if err := g2.Enter(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Enter with a cancelled context = %v; want context.Canceled", err)
	}
	g.Leave()
	g2.Leave()
	if len(g.admit)+len(g2.admit) != 0 {
		t.Error("a failed Enter kept its place")
	}
}

// TestGateBound: however many checks arrive at once, no more than Slots
// run together.
func TestGateBound(t *testing.T) {
	g := NewGate(GateConfig{Slots: 3, Queue: 1000, MaxWait: time.Minute})
	var running, peak atomic.Int32
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if err := g.Enter(context.Background()); err != nil {
				t.Error(err)
				return
			}
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(100 * time.Microsecond)
			running.Add(-1)
			g.Leave()
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 3 || p < 1 {
		t.Errorf("peak running = %d; want 1..3", p)
	}
}

func TestDefaultSlots(t *testing.T) {
	if n := NewGate(GateConfig{}).Slots(); n != DefaultSlots() || n < 1 {
		t.Errorf("default slots = %d; want DefaultSlots() = %d", n, DefaultSlots())
	}
}
