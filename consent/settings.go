package consent

import (
	"context"

	"oauthd/issuer/admin"
)

// ClientAdmin is the slice of [admin.Service] the client settings pages
// call; *admin.Local is one. Every rule (validation, the two-secret limit,
// the last secret, migration) is its, never the pages'.
type ClientAdmin interface {
	CreateClient(ctx context.Context, c admin.NewClient) (admin.CreatedClient, error)
	ListClients(ctx context.Context, status string) ([]admin.ClientView, error)
	ShowClient(ctx context.Context, id string) (admin.ClientView, error)
	GenerateSecret(ctx context.Context, id string) (admin.CreatedSecret, error)
	ListSecrets(ctx context.Context, id string) ([]admin.SecretView, error)
	RevokeSecret(ctx context.Context, id, secretID string) error
	SetScopes(ctx context.Context, id string, scopes []string) (admin.ClientView, error)
	SetRedirectURIs(ctx context.Context, id string, uris []string) (admin.ClientView, error)
}

var _ ClientAdmin = (*admin.Local)(nil)
