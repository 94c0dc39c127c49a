// Package consenttest drives oauthd's login and consent pages for tests; it
// is not for production use.
//
// A [Browser] behaves like a browser without JavaScript: it keeps cookies,
// follows the server's own redirects, fills the login form and submits the
// consent form (Allow or Deny) with every hidden field the pages carry
// (CSRF tokens, return_to, the authorization request), and stops at the
// first redirect to the client's redirect URI (RFC 6749 §4.1.2), whose URL
// it returns. It reads the forms from the HTML the server sends, so a change
// to the templates that a browser would survive does not break it.
//
// [PKCE] makes an RFC 7636 verifier and its S256 challenge.
//
// For the tests that need a real browser, [Chrome] starts a headless
// Chromium driven by chromedp (skipping the test when there is none, except
// in CI), [Step] runs browser actions with a timeout and reports the page
// on failure, and [Screenshot] saves the page at a given viewport.
package consenttest
