// Package settings serves the developers' client settings pages under
// /settings/clients: the signed-in user's own OAuth clients, the
// registration form, secrets (generated and shown once, revoked), redirect
// URIs, scopes, the DPoP and PAR protections, the migration of legacy
// clients and the panel of a change waiting for review. It also serves
// every user's Connected apps page, /settings/apps: the apps they allowed,
// each with a form that removes its access ([AppAdmin]).
//
// One HTTP handler per file: list.go, new.go (the form), create.go,
// show.go, redirect_uris.go, scopes.go (with the legacy migration),
// protections.go, secret_generate.go, secret_revoke.go, apps.go (the
// Connected apps page) and apps_revoke.go. What they share:
// settings.go (Config, New, Register, the rendering), access.go (the
// steps a route takes before its handler: the form, the session, the CSRF
// token, the client's ownership; the handler gets their result),
// form.go (the input), view.go (what the templates get, the client's page)
// and messages.go (the fixed notices and the sentences of admin's errors).
// The templates are embedded from templates/; common.html holds what every
// page shares.
//
// It owns no rule about clients: every change goes through the
// [ClientAdmin] (issuer/admin), which validates it, keeps the two-secret
// and last-secret limits and holds a widening change for review; the pages
// check that the user owns the client, have package consent check the
// CSRF token, and render. They change clients only with EditClient (the
// owner's change), never with the operator's SetScopes or SetRedirectURIs.
//
// It owns nothing of the site either: the browser session, the login it
// sends the user to, the CSRF check, the page frame (layout.html and the
// stylesheet), the security headers and the error pages are package
// consent's, which this package calls through [consent.Handler] (the
// Config's Site) and which never imports this one. cmd/oauthd mounts both
// on one router. It must not read the session cookie, compare CSRF tokens,
// set page headers or write an error page of its own.
package settings
