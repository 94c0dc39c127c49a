package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestParseConfigExecMode: statements are prepared once per connection
// (cache_statement) unless the URL chooses another mode, as PgBouncer's
// transaction pooling needs (exec or simple_protocol), in either form of
// connection string.
func TestParseConfigExecMode(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want pgx.QueryExecMode
	}{
		{"postgres://u@127.0.0.1:5432/db?sslmode=disable", pgx.QueryExecModeCacheStatement},
		{"postgres://u@127.0.0.1:5432/db?sslmode=disable&default_query_exec_mode=exec", pgx.QueryExecModeExec},
		{"postgresql://u@127.0.0.1/db?default_query_exec_mode=simple_protocol", pgx.QueryExecModeSimpleProtocol},
		{"postgres://u@127.0.0.1/db?default_query_exec_mode=cache_describe&pool_max_conns=4", pgx.QueryExecModeCacheDescribe},
		{"postgres://u@127.0.0.1/db?default_query_exec_mode=cache_statement", pgx.QueryExecModeCacheStatement},
		{"host=127.0.0.1 user=u dbname=db default_query_exec_mode=exec", pgx.QueryExecModeExec},
		{"host=127.0.0.1 user=u dbname=db", pgx.QueryExecModeCacheStatement},
		// The name elsewhere (a password) chooses nothing.
		{"postgres://u:default_query_exec_mode@127.0.0.1/db", pgx.QueryExecModeCacheStatement},
	} {
		cfg, err := parseConfig(tc.raw, Options{})
		if err != nil {
			t.Errorf("%s: %v", tc.raw, err)
			continue
		}
		if got := cfg.ConnConfig.DefaultQueryExecMode; got != tc.want {
			t.Errorf("%s: exec mode %v; want %v", tc.raw, got, tc.want)
		}
	}
	if _, err := parseConfig("postgres://u@127.0.0.1/db?default_query_exec_mode=bogus", Options{}); err == nil {
		t.Error("an unknown mode: no error; want the URL refused")
	}
}
