package backend

import (
	"fmt"
	"os"
	"path/filepath"
)

// noDatabase is the error of a command other than serve on a missing or
// empty database: it names the path it tried and how to point elsewhere.
// Only serve creates a database.
func noDatabase(db string, err error) error {
	where := db
	if abs, aerr := filepath.Abs(db); aerr == nil && abs != db {
		where = fmt.Sprintf("%s (%s)", db, abs)
	}
	why := "it was never set up by `oauthd serve`"
	if fi, serr := os.Stat(db); serr != nil {
		why = "the file does not exist"
	} else if fi.Size() == 0 {
		why = "the file is empty"
	}
	return &messageError{err: err, msg: fmt.Sprintf("there is no oauthd database at %s: %s. Pass --db PATH or set OAUTHD_DB to use another one; "+
		"`oauthd serve --db PATH` creates a new database on its first start (no other command creates one)", where, why)}
}

// messageError is an error with its own sentence that still unwraps to
// the cause (for errors.Is).
type messageError struct {
	msg string
	err error
}

func (e *messageError) Error() string { return e.msg }
func (e *messageError) Unwrap() error { return e.err }
