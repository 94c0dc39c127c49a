package datatest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"oauthd/data"
)

// testAgentHosts: the operator's host reviews are stored, replaced, listed
// in host order, deleted, and refused when not canonical or without a
// known scope.
func testAgentHosts(t *testing.T, s data.Store) {
	ctx := context.Background()
	if _, err := s.GetAgentHost(ctx, "claude.example"); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("GetAgentHost before any: %v; want ErrNotFound", err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123, time.FixedZone("x", 3600))
	a := data.AgentHost{Host: "claude.example", Scopes: []string{"PROFILE_READ", "BOOKING_READ"}, AllowedAt: t0}
	b := data.AgentHost{Host: "agent.example:8443", Scopes: []string{"PROFILE_READ"}, AllowedAt: t0}
	for _, h := range []data.AgentHost{a, b} {
		if err := s.PutAgentHost(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	a.Scopes = []string{"PROFILE_READ"}
	if err := s.PutAgentHost(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetAgentHost(ctx, "claude.example")
	if err != nil || !reflect.DeepEqual(got, data.NormalizeAgentHost(a)) {
		t.Errorf("GetAgentHost = %+v, %v; want %+v", got, err, data.NormalizeAgentHost(a))
	}
	list, err := s.ListAgentHosts(ctx)
	if err != nil || len(list) != 2 || list[0].Host != "agent.example:8443" || list[1].Host != "claude.example" {
		t.Errorf("ListAgentHosts = %+v, %v; want both in host order", list, err)
	}
	for _, bad := range []data.AgentHost{
		{Host: "Claude.Example", Scopes: []string{"PROFILE_READ"}},
		{Host: "claude.example:443", Scopes: []string{"PROFILE_READ"}},
		{Host: "https://claude.example", Scopes: []string{"PROFILE_READ"}},
		{Host: "x.example", Scopes: nil},
		{Host: "x.example", Scopes: []string{"ROOT"}},
	} {
		if err := s.PutAgentHost(ctx, bad); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("PutAgentHost(%+v) = %v; want ErrInvalid", bad, err)
		}
	}
	if err := s.DeleteAgentHost(ctx, "claude.example"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAgentHost(ctx, "claude.example"); !errors.Is(err, data.ErrNotFound) {
		t.Errorf("second DeleteAgentHost = %v; want ErrNotFound", err)
	}
	if _, err := s.GetAgentHost(ctx, "claude.example"); !errors.Is(err, data.ErrNotFound) {
		t.Errorf("GetAgentHost after delete: %v; want ErrNotFound", err)
	}
}
