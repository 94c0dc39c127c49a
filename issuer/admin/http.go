package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"oauthd/data"
)

// request is the JSON body of every admin call; each operation reads the
// fields it needs.
type request struct {
	ID       string         `json:"id,omitempty"`
	Status   string         `json:"status,omitempty"`
	Reason   string         `json:"reason,omitempty"`
	SecretID string         `json:"secret_id,omitempty"`
	Scopes   []string       `json:"scopes,omitempty"`
	URIs     []string       `json:"uris,omitempty"`
	Alg      string         `json:"alg,omitempty"`
	KID      string         `json:"kid,omitempty"`
	User     *NewUser       `json:"user,omitempty"`
	Client   *NewClient     `json:"client,omitempty"`
	Legacy   []LegacyClient `json:"legacy,omitempty"`
	Force    bool           `json:"force,omitempty"`
	Edit     *ClientEdit    `json:"edit,omitempty"`
	Options  *ClientOptions `json:"options,omitempty"`
	Revision string         `json:"revision,omitempty"`
	Users    []ImportUser   `json:"users,omitempty"`
	ClientID string         `json:"client_id,omitempty"`
}

// errorBody is the JSON of a failed call.
type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// Error kinds on the wire and the sentinels they stand for.
var kinds = []struct {
	kind string
	err  error
}{
	{"not_found", data.ErrNotFound},
	{"exists", data.ErrExists},
	{"invalid", data.ErrInvalid},
	{"too_many_secrets", data.ErrTooManySecrets},
	{"last_secret", data.ErrLastSecret},
	{"conflict", data.ErrConflict},
}

func kindOf(err error) string {
	for _, k := range kinds {
		if isErr(err, k.err) {
			return k.kind
		}
	}
	return "internal"
}

func sentinelOf(kind string) error {
	for _, k := range kinds {
		if k.kind == kind {
			return k.err
		}
	}
	return errInternal
}

// errInternal is what an "internal" error from the server unwraps to.
var errInternal = errors.New("internal error in the server")

type operation func(ctx context.Context, svc Service, r request) (any, error)

var operations = map[string]operation{
	"agents/allow": func(ctx context.Context, s Service, r request) (any, error) {
		return s.AllowAgentHost(ctx, r.ID, r.Scopes)
	},
	"agents/list": func(ctx context.Context, s Service, r request) (any, error) { return s.ListAgentHosts(ctx) },
	"agents/deny": func(ctx context.Context, s Service, r request) (any, error) { return s.DenyAgentHost(ctx, r.ID) },
	"users/add": func(ctx context.Context, s Service, r request) (any, error) {
		if r.User == nil {
			return nil, newError(data.ErrInvalid, "missing user")
		}
		return s.AddUser(ctx, *r.User)
	},
	"users/list":    func(ctx context.Context, s Service, r request) (any, error) { return s.ListUsers(ctx) },
	"users/import":  func(ctx context.Context, s Service, r request) (any, error) { return s.ImportUsers(ctx, r.Users) },
	"users/disable": func(ctx context.Context, s Service, r request) (any, error) { return s.DisableUser(ctx, r.ID) },
	"users/enable":  func(ctx context.Context, s Service, r request) (any, error) { return s.EnableUser(ctx, r.ID) },
	"users/apps":    func(ctx context.Context, s Service, r request) (any, error) { return s.ListUserApps(ctx, r.ID) },
	"users/apps/revoke": func(ctx context.Context, s Service, r request) (any, error) {
		return s.RevokeUserApp(ctx, r.ID, r.ClientID)
	},
	"clients/create": func(ctx context.Context, s Service, r request) (any, error) {
		if r.Client == nil {
			return nil, newError(data.ErrInvalid, "missing client")
		}
		return s.CreateClient(ctx, *r.Client)
	},
	"clients/import": func(ctx context.Context, s Service, r request) (any, error) { return s.ImportClients(ctx, r.Legacy) },
	"clients/list":   func(ctx context.Context, s Service, r request) (any, error) { return s.ListClients(ctx, r.Status) },
	"clients/show":   func(ctx context.Context, s Service, r request) (any, error) { return s.ShowClient(ctx, r.ID) },
	"clients/approve": func(ctx context.Context, s Service, r request) (any, error) {
		if r.Revision != "" {
			return s.ApproveRevision(ctx, r.ID, r.Revision)
		}
		return s.ApproveClient(ctx, r.ID)
	},
	"clients/reject": func(ctx context.Context, s Service, r request) (any, error) {
		if r.Revision != "" {
			return s.RejectRevision(ctx, r.ID, r.Reason, r.Revision)
		}
		return s.RejectClient(ctx, r.ID, r.Reason)
	},
	"clients/secrets/generate": func(ctx context.Context, s Service, r request) (any, error) {
		return s.GenerateSecret(ctx, r.ID)
	},
	"clients/secrets/list": func(ctx context.Context, s Service, r request) (any, error) {
		return s.ListSecrets(ctx, r.ID)
	},
	"clients/secrets/revoke": func(ctx context.Context, s Service, r request) (any, error) {
		return struct{}{}, s.RevokeSecret(ctx, r.ID, r.SecretID)
	},
	"clients/scopes/set": func(ctx context.Context, s Service, r request) (any, error) {
		if r.Force {
			return s.ForceScopes(ctx, r.ID, r.Scopes)
		}
		return s.SetScopes(ctx, r.ID, r.Scopes)
	},
	"clients/edit": func(ctx context.Context, s Service, r request) (any, error) {
		if r.Edit == nil {
			return nil, newError(data.ErrInvalid, "missing edit")
		}
		return s.EditClient(ctx, r.ID, *r.Edit)
	},
	"clients/redirect-uris/set": func(ctx context.Context, s Service, r request) (any, error) {
		return s.SetRedirectURIs(ctx, r.ID, r.URIs)
	},
	"clients/post-logout-uris/set": func(ctx context.Context, s Service, r request) (any, error) {
		return s.SetPostLogoutRedirectURIs(ctx, r.ID, r.URIs)
	},
	"clients/options/set": func(ctx context.Context, s Service, r request) (any, error) {
		if r.Options == nil {
			return nil, newError(data.ErrInvalid, "missing options")
		}
		return s.SetClientOptions(ctx, r.ID, *r.Options)
	},
	"keys/list":   func(ctx context.Context, s Service, r request) (any, error) { return s.ListKeys(ctx) },
	"keys/rotate": func(ctx context.Context, s Service, r request) (any, error) { return s.RotateKeys(ctx, r.Alg) },
	"keys/revoke": func(ctx context.Context, s Service, r request) (any, error) {
		return struct{}{}, s.RevokeKey(ctx, r.KID)
	},
}

// maxRequestBody bounds an admin request (imports can be large-ish).
const maxRequestBody = 8 << 20

// Handler serves svc as JSON over HTTP: POST /v1/<operation> (e.g.
// /v1/clients/create) with a JSON body; 200 and the result, or an error
// status and {"error": kind, "message": text}. It is meant for the admin
// Unix socket (mode 0600), which is its only access control.
func Handler(svc Service) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/{op...}", func(w http.ResponseWriter, r *http.Request) {
		op, ok := operations[r.PathValue("op")]
		if !ok {
			writeJSON(w, http.StatusNotFound, errorBody{"not_found", "unknown admin operation " + r.PathValue("op") + "; is the server older than this CLI?"})
			return
		}
		var req request
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBody))
		if err := dec.Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, errorBody{"invalid", "malformed admin request: " + err.Error()})
			return
		}
		res, err := op(r.Context(), svc, req)
		if err != nil {
			kind := kindOf(err)
			writeJSON(w, statusOf(kind), errorBody{kind, err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, res)
	})
	return mux
}

func statusOf(kind string) int {
	switch kind {
	case "not_found":
		return http.StatusNotFound
	case "exists", "conflict", "too_many_secrets", "last_secret":
		return http.StatusConflict
	case "invalid":
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
