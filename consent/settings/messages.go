package settings

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"oauthd/consent"
	"oauthd/data"
)

// flashes are the only notices a ?done= code can show: fixed text, never
// text from the query.
var flashes = map[string]string{
	"secret_revoked":      "The secret was revoked. Calls that still send it are refused from now on; tokens already issued stay valid.",
	"redirect_uris_saved": "The redirect URIs were saved.",
	"post_logout_saved":   "The post-logout redirect URIs were saved.",
	"scopes_saved":        "The scopes were saved.",
	"protections_saved":   "The protections were saved.",
	"grant_types_saved":   "The grant types were saved.",
	"migrated":            "The client is migrated: scopes now apply to every new authorization request. Tokens issued earlier keep working until users authorize again.",
	"change_pending":      "Saved for review: what you added waits for a platform administrator, and until then the client works with its approved settings. Anything you removed no longer applies.",
}

// userMessage turns an admin error into a sentence for the page and its
// status; ok is false for errors that are not the user's (a 500).
func userMessage(err error) (msg string, status int, ok bool) {
	switch {
	case errors.Is(err, data.ErrTooManySecrets):
		return "This client already has 2 active secrets: revoke one first, then generate a new one.", http.StatusConflict, true
	case errors.Is(err, data.ErrLastSecret):
		return "This is the client's only secret and a confidential client needs one: generate a new secret first, switch your calls to it, then revoke this one.", http.StatusConflict, true
	case errors.Is(err, data.ErrNotFound):
		return "That secret is not active (it may have been revoked already).", http.StatusNotFound, true
	case errors.Is(err, data.ErrInvalid), errors.Is(err, data.ErrExists), errors.Is(err, data.ErrConflict):
		return webSentence(err.Error()), http.StatusBadRequest, true
	}
	return "", 0, false
}

// webSentence drops the command-line hints (flags, `oauthd …` commands,
// pointers to the README or docs/) that admin's messages carry for operators.
func webSentence(msg string) string {
	parts := strings.Split(msg, "; ")
	keep := parts[:1]
	for _, p := range parts[1:] {
		if strings.ContainsAny(p, "`") || strings.Contains(p, "--") || strings.Contains(p, "README") || strings.Contains(p, "docs/") {
			continue
		}
		keep = append(keep, p)
	}
	out := strings.Join(keep, "; ")
	out = strings.TrimSuffix(out, ";")
	if out != "" && !strings.HasSuffix(out, ".") {
		out += "."
	}
	return strings.ToUpper(out[:1]) + out[1:]
}

// done redirects to the client's page with a fixed notice code.
func done(c echo.Context, id, code string) error {
	return consent.SeeOther(c, clientsPath+"/"+id+"?done="+code)
}

// failed re-renders the client's page with err's message in section, or a
// 500 page for an unexpected error.
func (h *Handler) failed(c echo.Context, op string, err error, rq request, section string, keep func(*settingsView)) error {
	msg, status, ok := userMessage(err)
	if !ok {
		return h.site.InternalError(c, op, err)
	}
	return h.detail(c, status, rq, func(sv *settingsView) {
		sv.Error, sv.msg = section, msg
		if keep != nil {
			keep(sv)
		}
	})
}
