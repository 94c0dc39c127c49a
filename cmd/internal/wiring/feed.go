package wiring

import (
	"fmt"
	"log/slog"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/issuer"
	"oauthd/keys"
)

// registerFeed mounts the revoked-grants feed ({base_url}/.well-known/revoked-grants).
func registerFeed(e *echo.Echo, store data.Store, km *keys.Manager, base string, logger *slog.Logger, outage *issuer.Outage) error {
	feed, err := issuer.NewFeed(issuer.FeedConfig{Store: store, Signer: km, Issuer: base, Logger: logger, Outage: outage})
	if err != nil {
		return fmt.Errorf("revoked-grants feed: %w", err)
	}
	feed.Register(e)
	return nil
}
