package consenttest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

// Device plays the user of the device flow (RFC 8628 §3.3): it opens
// deviceURL (the verification_uri, or verification_uri_complete with the
// code prefilled), signs in with login and password when the login page
// comes, types userCode into the code form when it is not "" (else keeps
// what the page prefilled) and presses Continue, then presses Allow (or
// Deny) on the consent page. It returns the text of the page that ends
// the flow. Any other page is a *[PageError].
func (b *Browser) Device(ctx context.Context, deviceURL, login, password, userCode string, allow bool) (string, error) {
	start, err := url.Parse(deviceURL)
	if err != nil || start.Scheme == "" || start.Host == "" {
		return "", fmt.Errorf("consenttest: device URL %q is not absolute", deviceURL)
	}
	ctx = context.WithValue(ctx, stopKey{}, stopAt{origin: origin(start)})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, start.String(), nil)
	if err != nil {
		return "", fmt.Errorf("consenttest: %w", err)
	}
	loggedIn, entered, decided := false, false, false
	for range maxSteps {
		resp, body, err := b.do(req)
		if err != nil {
			return "", err
		}
		page := resp.Request.URL
		doc, perr := html.Parse(strings.NewReader(body))
		if perr != nil || resp.StatusCode != http.StatusOK {
			return "", pageError(resp, body, doc)
		}
		forms := parseForms(doc)
		f := findForm(forms, page, "/device")
		switch {
		case decided:
			return body, nil
		case !loggedIn && findForm(forms, page, "/auth/login") != nil:
			lf := findForm(forms, page, "/auth/login")
			vals, ok := lf.loginValues(login, password)
			if !ok {
				return "", pageError(resp, body, doc)
			}
			loggedIn = true
			req, err = lf.request(ctx, page, vals)
		case f != nil && !entered && f.hiddenValues().Get("action") == "lookup":
			vals := f.hiddenValues()
			for _, in := range f.inputs {
				if in.name == "user_code" {
					vals.Set("user_code", in.value)
				}
			}
			if userCode != "" {
				vals.Set("user_code", userCode)
			}
			entered = true
			req, err = f.request(ctx, page, vals)
		case f != nil && entered:
			vals := f.hiddenValues()
			choice := "deny"
			if allow {
				choice = "allow"
			}
			btn, ok := f.button(choice)
			if !ok {
				return "", pageError(resp, body, doc)
			}
			vals.Add(btn.name, btn.value)
			decided = true
			req, err = f.request(ctx, page, vals)
		default:
			return "", pageError(resp, body, doc)
		}
		if err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("consenttest: the device flow did not end after %d pages", maxSteps)
}
