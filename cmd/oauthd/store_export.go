package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"oauthd/data"
	"oauthd/issuer/admin"
)

// exportPath is the admin socket's route for `oauthd store copy --from`
// a bbolt database that a running server holds locked.
const exportPath = "/v1/store/export"

// exporter is the store slice the export route needs.
type exporter interface {
	Export(ctx context.Context) (data.Dump, error)
}

// withExport adds exportPath to the admin socket's handler h: every record
// of src in one consistent snapshot (bolt's Export reads after a
// checkpoint, in one read transaction), so that a file can be backed up
// while it serves. The socket is the operator's alone (mode 0600), and the
// dump holds what the file holds: hashes, and signing keys as sealed.
func withExport(h http.Handler, src exporter, logger *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("POST "+exportPath, func(w http.ResponseWriter, r *http.Request) {
		d, err := src.Export(r.Context())
		if err != nil {
			logger.ErrorContext(r.Context(), "export the database", "err", err)
			http.Error(w, "export the database: "+err.Error(), http.StatusInternalServerError)
			return
		}
		logger.InfoContext(r.Context(), "audit", "event", "store_exported", "users", len(d.Users), "clients", len(d.Clients), "families", len(d.Families))
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(d); err != nil {
			logger.ErrorContext(r.Context(), "send the export", "err", err)
		}
	})
	return mux
}

// socketSource is the --from of `store copy` when a server holds the
// bbolt file: it reads the records through that server's admin socket.
type socketSource struct {
	http *http.Client
}

// dialSource connects to the admin socket at path; it fails when no
// server answers there.
func dialSource(path string) (*socketSource, error) {
	c, err := admin.SocketHTTP(path, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	return &socketSource{http: c}, nil
}

func (s *socketSource) Export(ctx context.Context) (data.Dump, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://oauthd"+exportPath, nil)
	if err != nil {
		return data.Dump{}, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return data.Dump{}, fmt.Errorf("through the running server's admin socket: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return data.Dump{}, errors.New("the running server is older and cannot export while serving; stop it first")
	}
	if resp.StatusCode != http.StatusOK {
		return data.Dump{}, fmt.Errorf("the running server answered %s", resp.Status)
	}
	var d data.Dump
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		return data.Dump{}, fmt.Errorf("read the running server's export: %w", err)
	}
	return d, nil
}

func (s *socketSource) Import(context.Context, data.Dump) error {
	return errors.New("a database a server holds open cannot be the target of a copy")
}

func (s *socketSource) Close() error {
	s.http.CloseIdleConnections()
	return nil
}
