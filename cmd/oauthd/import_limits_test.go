package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/argon2"
)

// TestUsersImportRefusesCostlyHash: `users import` refuses an argon2id
// hash with p above 4 (one check would run that many threads in one
// password slot), naming the row and the limit, and imports nothing;
// p=4 is accepted.
func TestUsersImportRefusesCostlyHash(t *testing.T) {
	c := newCLI(t)
	hash := func(p uint8) string {
		salt := make([]byte, 16)
		rand.Read(salt)
		key := argon2.IDKey([]byte("pw"), salt, 1, 256, p, 32)
		b64 := base64.RawStdEncoding
		return fmt.Sprintf("$argon2id$v=19$m=256,t=1,p=%d$%s$%s", p, b64.EncodeToString(salt), b64.EncodeToString(key))
	}
	file := filepath.Join(t.TempDir(), "u.csv")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("email,name,password_hash\nok@x.example,Ok,\"" + hash(4) + "\"\nwide@x.example,Wide,\"" + hash(16) + "\"\n")
	_, errOut, err := c.run("", "users", "import", file)
	if err == nil || !strings.Contains(errOut, "line 3: password_hash:") || !strings.Contains(errOut, "p=16") || !strings.Contains(errOut, "at most p=4") {
		t.Fatalf("import with a p=16 hash: %v\n%s\nwant refused, naming line 3 and the limit p=4", err, errOut)
	}
	if out := c.ok("", "users", "list", "--json"); strings.Contains(out, "ok@x.example") {
		t.Fatal("a refused import stored a user")
	}
	write("email,name,password_hash\nok@x.example,Ok,\"" + hash(4) + "\"\n")
	c.ok("", "users", "import", file)
}

// TestUsersImportCSVDuplicateColumn: a CSV header that names a column
// twice is refused (which of the two would count is a guess), saying
// which column and where.
func TestUsersImportCSVDuplicateColumn(t *testing.T) {
	c := newCLI(t)
	file := filepath.Join(t.TempDir(), "u.csv")
	csv := "email,name,Name,password_hash\na@x.example,Ann,Mallory,$2b$04$abcdefghijklmnopqrstuu5e8yHn7wQwCUr0tq1kkT0b6nJ1mVEyS\n"
	if err := os.WriteFile(file, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := c.run("", "users", "import", file)
	if err == nil || !strings.Contains(errOut, `the column "name" twice (fields 2 and 3)`) {
		t.Fatalf("duplicate column: %v\n%s\nwant refused naming the column", err, errOut)
	}
}
