package postgres_test

import (
	"strings"
	"testing"

	"oauthd/data/postgres"
)

// TestRedact: the database URL as serve logs it ("oauthd listening … db=")
// and as every "open database …" error shows it carries no password: not
// the URL's own (user:password@), and not one given as a parameter, which
// libpq and pgx accept as well (?password=…, sslpassword for an encrypted
// client key). The rest of the URL stays, to say which database it is.
func TestRedact(t *testing.T) {
	for _, raw := range []string{
		"postgres://u:SeCrEt1@127.0.0.1:5432/db?sslmode=disable",
		"postgres://u@127.0.0.1:5432/db?sslmode=disable&password=SeCrEt1&default_query_exec_mode=exec",
		"postgresql://u@127.0.0.1/db?Password=SeCrEt1",
		"postgres://u@127.0.0.1/db?sslpassword=SeCrEt1&sslkey=/k.pem",
		"postgres://u@127.0.0.1/db?password=SeCrEt1&password=SeCrEt1",
		"postgres://u@127.0.0.1/db?pass%77ord=SeCrEt1",
		"postgres://u@127.0.0.1/db?pass%zzord=SeCrEt1",
	} {
		got := postgres.Redact(raw)
		if strings.Contains(got, "SeCrEt1") {
			t.Errorf("Redact(%s) = %s; want the password hidden", raw, got)
		}
		if !strings.Contains(got, "127.0.0.1") || !strings.Contains(got, "/db") {
			t.Errorf("Redact(%s) = %s; want the host and database kept", raw, got)
		}
	}
	if got := postgres.Redact("postgres://u@h/db?sslmode=disable&default_query_exec_mode=exec"); got != "postgres://u@h/db?sslmode=disable&default_query_exec_mode=exec" {
		t.Errorf("a URL without a password: Redact = %s; want it unchanged", got)
	}
}
