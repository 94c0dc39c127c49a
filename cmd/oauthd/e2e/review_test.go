package e2e

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// reviewView is the part of `clients show --json` the review tests read.
type reviewView struct {
	Revision      string   `json:"revision"`
	Status        string   `json:"status"`
	RedirectURIs  []string `json:"redirect_uris"`
	Scopes        []string `json:"scopes"`
	PendingChange *struct {
		AddScopes       []string `json:"add_scopes"`
		AddRedirectURIs []string `json:"add_redirect_uris"`
		ProposedBy      string   `json:"proposed_by"`
	} `json:"pending_change"`
	RejectedChange *struct {
		AddRedirectURIs []string `json:"add_redirect_uris"`
		RejectReason    string   `json:"reject_reason"`
	} `json:"rejected_change"`
}

// TestReviewWidening is the item 1 through the real server: the
// owner widens an approved client in the settings pages (Chromium); the
// new redirect URI is refused at the authorization endpoint with the 400
// page (never a redirect there) and the new scope with invalid_scope to an
// approved URI, until `clients approve`; `clients reject --reason` leaves
// the approved client as it was; a narrowing applies at once. Each step
// leaves an audit record.
func TestReviewWidening(t *testing.T) {
	bctx := consenttest.Chrome(t, 1280, 1000)
	db := filepath.Join(t.TempDir(), "o.db")
	srv, sink := startServeLogged(t, db)
	mustOauthd(t, db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--password-stdin")
	e := &e2e{server: srv}
	const oldURI, newURI, thirdURI = e2eRedirect, "http://127.0.0.1:9/new", "http://127.0.0.1:9/third"
	id, secret := e.client(t, oldURI, []string{"PROFILE_READ"})
	show := func() reviewView {
		t.Helper()
		var v reviewView
		oneJSON(t, e.cli(t, "clients", "show", id, "--json"), &v)
		return v
	}
	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		consenttest.Step(t, bctx, name, actions...)
	}
	page := e.base + "/settings/clients/" + id
	setURIs := func(uris ...string) {
		t.Helper()
		step("save redirect URIs "+strings.Join(uris, " "),
			chromedp.Navigate(page), chromedp.WaitVisible(chromedp.ID("redirect_uris")),
			chromedp.SetValue(chromedp.ID("redirect_uris"), strings.Join(uris, "\n")),
			chromedp.Click(chromedp.CSS(`#redirect-uris button[type="submit"]`)),
			chromedp.WaitVisible(chromedp.CSS(`p.alert-ok`)))
	}

	// The owner signs in to the settings pages and widens the client.
	step("sign in", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`input[type="password"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="login"]`), e2eEmail),
		chromedp.SendKeys(chromedp.CSS(`input[type="password"]`), e2ePassword),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("redirect-uris")))
	setURIs(oldURI, newURI)
	step("add a scope", chromedp.Click(chromedp.CSS(`#scopes input[value="BOOKING_READ"]`)),
		chromedp.Click(chromedp.CSS(`#scopes button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS(`#scopes .badge-pending`)))
	text, err := chromedp.Run(bctx, chromedp.TextContent(chromedp.CSS("section.card")))
	if err != nil || !strings.Contains(text, "Your change is not in force yet") || !strings.Contains(text, newURI) {
		t.Fatalf("settings page after widening: %v\n%s", err, text)
	}

	v := show()
	if v.Status != "approved" || !slices.Equal(v.RedirectURIs, []string{oldURI}) || !slices.Equal(v.Scopes, []string{"PROFILE_READ"}) ||
		v.PendingChange == nil || !slices.Equal(v.PendingChange.AddRedirectURIs, []string{newURI}) ||
		!slices.Equal(v.PendingChange.AddScopes, []string{"BOOKING_READ"}) || !strings.Contains(v.PendingChange.ProposedBy, "settings_page") {
		t.Fatalf("clients show after widening = %+v, pending %+v", v, v.PendingChange)
	}
	if out := e.cli(t, "clients", "show", id); !strings.Contains(out, "pending_change:") || !strings.Contains(out, "adds redirect URIs "+newURI) ||
		!strings.Contains(out, "oauthd clients approve "+id) {
		t.Errorf("clients show (text) = %s", out)
	}
	var pending []struct {
		ClientID string `json:"client_id"`
	}
	oneJSON(t, e.cli(t, "clients", "list", "--status", "pending", "--json"), &pending)
	if len(pending) != 1 || pending[0].ClientID != id {
		t.Errorf("clients list --status pending = %+v; want the client with the pending change", pending)
	}

	// The attacker's form: the widened client's new redirect URI is refused
	// with the 400 page, never a redirect to it; the new scope is refused
	// to the approved URI.
	ctx := context.Background()
	verifier := oauth2.GenerateVerifier()
	b := consenttest.New()
	authorize := func(redirect string, scopes ...string) (string, error) {
		conf := e.config(id, secret, redirect, oauth2.AuthStyleInParams, scopes...)
		got, err := b.Authorize(ctx, conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)), e2eEmail, e2ePassword, true)
		if err != nil {
			return "", err
		}
		return got.String(), nil
	}
	wantPage := func(redirect string, scopes ...string) {
		t.Helper()
		got, err := authorize(redirect, scopes...)
		var pe *consenttest.PageError
		if !errors.As(err, &pe) || pe.StatusCode != http.StatusBadRequest {
			t.Fatalf("authorize with %s = %q, %v; want the 400 error page", redirect, got, err)
		}
	}
	wantPage(newURI, "PROFILE_READ")
	got, err := authorize(oldURI, "PROFILE_READ", "BOOKING_READ")
	if err != nil || !strings.HasPrefix(got, oldURI+"?") || !strings.Contains(got, "error=invalid_scope") {
		t.Fatalf("authorize with the pending scope = %q, %v; want invalid_scope at the approved URI", got, err)
	}
	if got, err := authorize(oldURI, "PROFILE_READ"); err != nil || !strings.Contains(got, "code=") {
		t.Fatalf("the approved settings stopped working: %q, %v", got, err)
	}

	// Approved (at the revision the operator saw): both work, and the code
	// is exchanged for the new scope.
	e.cli(t, "clients", "approve", id, "--revision", v.Revision)
	if v := show(); v.PendingChange != nil || !slices.Equal(v.RedirectURIs, []string{oldURI, newURI}) {
		t.Fatalf("after approve: %+v", v)
	}
	conf := e.config(id, secret, newURI, oauth2.AuthStyleInParams, "PROFILE_READ", "BOOKING_READ")
	code := e.codeFlow(t, ctx, b, conf, oauth2.S256ChallengeOption(verifier))
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil || tok.Extra("scope") != "PROFILE_READ BOOKING_READ" {
		t.Fatalf("exchange after approval: %v, scope %v", err, tok.Extra("scope"))
	}

	// Bait and switch: the owner replaces the change after the operator
	// looked; approving the revision the operator saw is refused.
	setURIs(oldURI, newURI, "http://127.0.0.1:9/innocent")
	seen := show().Revision
	setURIs(oldURI, newURI, thirdURI)
	if out, errOut, err := oauthd(t, db, "", "clients", "approve", id, "--revision", seen); err == nil || !strings.Contains(errOut, "nothing was approved") {
		t.Fatalf("approve --revision after the owner's switch = %v, %q, %q; want a refusal", err, out, errOut)
	}

	// Rejected: the change goes, the approved client stays as it was.
	wantPage(thirdURI, "PROFILE_READ")
	e.cli(t, "clients", "reject", id, "--reason", "third URI is not ours")
	v = show()
	if v.Status != "approved" || v.PendingChange != nil || v.RejectedChange == nil || v.RejectedChange.RejectReason != "third URI is not ours" ||
		!slices.Equal(v.RedirectURIs, []string{oldURI, newURI}) {
		t.Fatalf("after reject: %+v", v)
	}
	wantPage(thirdURI, "PROFILE_READ")
	step("see the rejection", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`div.alert`)))
	if text, _ := chromedp.Run(bctx, chromedp.TextContent(chromedp.CSS("section.card"))); !strings.Contains(text, "third URI is not ours") {
		t.Errorf("the settings page does not show the rejection's reason:\n%s", text)
	}

	// Narrowing applies at once: the removed URI is refused immediately.
	setURIs(newURI)
	if v := show(); v.PendingChange != nil || !slices.Equal(v.RedirectURIs, []string{newURI}) {
		t.Fatalf("after narrowing: %+v", v)
	}
	wantPage(oldURI, "PROFILE_READ")

	for _, ev := range []string{"client_change_proposed", "client_change_approved", "client_change_rejected", "client_narrowed"} {
		if len(sink.grep("msg=audit", "event="+ev, "client_id="+id)) == 0 {
			t.Errorf("no %s audit record", ev)
		}
	}
	if len(sink.grep("event=client_change_proposed", "actor.via=settings_page")) == 0 {
		t.Error("the proposal's audit record does not name the developer")
	}
}

// TestReviewOperatorChangesApplyAtOnce: the CLI's changes need no review
// (the operator is the reviewer), also while a change is pending.
func TestReviewOperatorChangesApplyAtOnce(t *testing.T) {
	e := startE2E(t)
	id, _ := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	var v reviewView
	oneJSON(t, e.cli(t, "clients", "redirect-uris", "set", id, e2eRedirect, "http://127.0.0.1:9/op", "--json"), &v)
	if v.PendingChange != nil || len(v.RedirectURIs) != 2 {
		t.Errorf("redirect-uris set = %+v; want applied at once", v)
	}
	oneJSON(t, e.cli(t, "clients", "scopes", "set", id, "PROFILE_READ", "ORG_BOOKING_READ", "--json"), &v)
	if v.PendingChange != nil || len(v.Scopes) != 2 {
		t.Errorf("scopes set = %+v; want applied at once", v)
	}
	b := consenttest.New()
	verifier := oauth2.GenerateVerifier()
	conf := e.config(id, "", "http://127.0.0.1:9/op", oauth2.AuthStyleInParams, "ORG_BOOKING_READ")
	e.codeFlow(t, context.Background(), b, conf, oauth2.S256ChallengeOption(verifier))
}
