package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/data/bolt"
)

// cheapHash is a bcrypt hash of cost 4 that users import takes quickly.
const cheapHash = "$2b$04$abcdefghijklmnopqrstuu5e8yHn7wQwCUr0tq1kkT0b6nJ1mVEyS"

// TestUsersAddAndImportOneReading: issue 31's identifiers through the
// command line: users add refuses each with the reason, users import
// names the row, and no user is made.
func TestUsersAddAndImportOneReading(t *testing.T) {
	c := newCLI(t)
	c.ok("a long password\n", "users", "add", "--email", "ann@plat.test", "--username", "ann", "--name", "Ann", "--password-stdin")
	for _, tc := range []struct{ flag, value, want string }{
		{"--username", "+1", "reads as a user ID"},
		{"--username", "+0002", "reads as a user ID"},
		{"--username", "-0", "reads as a user ID"},
		{"--username", "007", "names a user ID"},
		{"--username", "\uff0b\uff11", "not a valid username"},
		{"--username", "-h", "starts with -"},
		{"--email", "ann\u034f@plat.test", "U+034F"},
		{"--email", "ann\ufe0f@plat.test", "U+FE0F"},
		{"--email", "ann\u3164@plat.test", "U+3164"},
		{"--email", "ann@plat.test\U000e0041", "U+E0041"},
		{"--name", "\u3164\u3164\u3164", "U+3164"},
		{"--name", "\u2800", "no visible character"},
		{"--name", "Ann\U000e0041", "U+E0041"},
		{"--time-zone", "Local", "not an IANA time zone"},
		{"--time-zone", "localtime", "not an IANA time zone"},
	} {
		args := map[string]string{"--email": "new@plat.test", "--username": "newbie", "--name": "New", "--time-zone": "UTC"}
		args[tc.flag] = tc.value
		c.fails(tc.want, "a long password\n", "users", "add", "--email", args["--email"], "--username", args["--username"],
			"--name", args["--name"], "--time-zone", args["--time-zone"], "--password-stdin")
	}
	file := filepath.Join(t.TempDir(), "users.csv")
	rows := "email,username,name,time_zone,password_hash\n" +
		"fine@plat.test,fine,Fine,UTC," + cheapHash + "\n" +
		"plus@plat.test,+1,Plus,UTC," + cheapHash + "\n" +
		"cgj@plat.test,c\u034fgj,CGJ,UTC," + cheapHash + "\n" +
		"filler@plat.test,filler,\u3164,UTC," + cheapHash + "\n" +
		"local@plat.test,local,Local,Local," + cheapHash + "\n"
	if err := os.WriteFile(file, []byte(rows), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := c.run("", "users", "import", file)
	if err == nil {
		t.Fatal("users import of bad identifiers succeeded")
	}
	for _, want := range []string{"4 of 5 rows are bad", "line 3: \"+1\" reads as a user ID", "line 4: ", "U+034F", "line 5: the name", "U+3164", "line 6: \"Local\" is not an IANA"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("users import: stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "line 2") {
		t.Errorf("users import names the good row:\n%s", errOut)
	}
	var us []json.RawMessage
	oneJSON(t, c.ok("", "users", "list", "--json"), &us)
	if len(us) != 1 {
		t.Errorf("%d users after the refusals; want ann alone", len(us))
	}
}

// TestUsersListReportsRefusedIdentifiers: users an earlier release stored
// with identifiers refused today are listed with the reason (STATE and
// "invalid"), changed in nothing; "+1" as a USER names user 1.
func TestUsersListReportsRefusedIdentifiers(t *testing.T) {
	c := newCLI(t)
	c.ok("a long password\n", "users", "add", "--email", "ann@plat.test", "--username", "ann", "--name", "Ann", "--password-stdin")
	st, err := bolt.Open(c.db, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, u := range []data.User{
		{Email: "plus@plat.test", Username: "+1", Name: "Plus", TimeZone: "UTC", CreatedAt: now},
		{Email: "vs\ufe0f@plat.test", Name: "\u3164", TimeZone: "Local", CreatedAt: now},
	} {
		if _, err := st.CreateUser(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	text := c.ok("", "users", "list")
	for _, want := range []string{`refused today: username: "+1" reads as a user ID`, "U+FE0F", `time zone: "Local"`} {
		if !strings.Contains(text, want) {
			t.Errorf("users list lacks %q:\n%s", want, text)
		}
	}
	var list []struct {
		ID       int64   `json:"id"`
		Email    string  `json:"email"`
		Username string  `json:"username"`
		Name     string  `json:"name"`
		TimeZone string  `json:"time_zone"`
		Invalid  *string `json:"invalid"`
	}
	oneJSON(t, c.ok("", "users", "list", "--json"), &list)
	if len(list) != 3 || list[0].Invalid != nil || list[1].Invalid == nil || list[2].Invalid == nil ||
		!strings.Contains(*list[1].Invalid, "reads as a user ID") || !strings.Contains(*list[2].Invalid, "name: ") {
		t.Fatalf("users list --json = %+v; want ann without a note, the other two with one", list)
	}
	if list[1].Username != "+1" || list[2].Email != "vs\ufe0f@plat.test" || list[2].Name != "\u3164" || list[2].TimeZone != "Local" {
		t.Errorf("users list --json = %+v; want the stored values unchanged", list)
	}
	// One reading: "+1" is user 1; the user named "+1" is reached by email.
	var v struct {
		ID    int64  `json:"id"`
		State string `json:"state"`
	}
	oneJSON(t, c.ok("", "users", "disable", "+1", "--json"), &v)
	if v.ID != list[0].ID {
		t.Errorf("users disable +1 disabled user %d; want user %d (ann)", v.ID, list[0].ID)
	}
	oneJSON(t, c.ok("", "users", "disable", "plus@plat.test", "--json"), &v)
	if v.ID != list[1].ID {
		t.Errorf("users disable plus@plat.test disabled user %d; want %d", v.ID, list[1].ID)
	}
}
