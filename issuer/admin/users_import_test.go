package admin

import (
	"context"
	"strings"
	"testing"

	"oauthd/data/password"
)

// TestImportUsersCountsBadRows: the refusal counts rows, not problems: a
// row whose email and username are both taken is one bad row of one.
func TestImportUsersCountsBadRows(t *testing.T) {
	hash, err := password.Hash("a long password")
	if err != nil {
		t.Fatal(err)
	}
	both(t, func(t *testing.T, e env) {
		ctx := context.Background()
		if _, err := e.svc.AddUser(ctx, NewUser{Email: "ann@example.com", Username: "ann", Name: "Ann", Password: "a long password"}); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name string
			rows []ImportUser
			want []string
		}{
			{"one row, two problems", []ImportUser{{Line: 2, Email: "ann@example.com", Username: "ann", Name: "Ann", PasswordHash: hash}},
				[]string{"1 of 1 rows are bad", "line 2: a user with the login ann@example.com", "line 2: a user with the login ann already"}},
			{"two rows, one bad", []ImportUser{
				{Line: 2, Email: "bob@example.com", Name: "Bob", PasswordHash: hash},
				{Line: 3, Email: "ann@example.com", Username: "ann", Name: "Ann", PasswordHash: hash}},
				[]string{"1 of 2 rows are bad", "line 3:"}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.svc.ImportUsers(ctx, tc.rows)
				if err == nil {
					t.Fatal("ImportUsers accepted a taken login")
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("ImportUsers error %q; want it to say %q", err, w)
					}
				}
			})
		}
	})
}
