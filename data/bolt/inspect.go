package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"oauthd/data"
)

// SchemaVersion is the schema this build reads and writes; [Open] upgrades
// a file of an earlier one (UpgradableSchemas) to it.
const SchemaVersion = schemaVersion

// UpgradableSchemas are the schemas [Open] upgrades to [SchemaVersion].
var UpgradableSchemas = []string{schemaIdentity}

// Inspection is what [Inspect] found in a file.
type Inspection struct {
	// Schema is the file's schema version; "" for no oauthd database yet
	// (no file, an empty one, or one never set up): Open will create it.
	Schema string
	// Keys is the signing-key set ([data.Store.ListKeys]).
	Keys []data.SigningKey
}

// Inspect reads, without writing anything to the file or its write-ahead
// log, what must be checked before [Open] may create or upgrade the file:
// its schema (refused as Open refuses it: one from a newer oauthd) and its
// signing keys (a record that no upgrade has changed). When another
// process holds the file it fails after opts.Timeout with an error
// wrapping [ErrLocked], as Open does.
func Inspect(path string, opts Options) (Inspection, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if err := checkExists(path); errors.Is(err, ErrNoDatabase) {
		return Inspection{}, nil
	} else if err != nil {
		return Inspection{}, err
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: opts.Timeout, ReadOnly: true,
		OpenFile: func(name string, flag int, mode os.FileMode) (*os.File, error) {
			return os.OpenFile(name, flag&^os.O_CREATE, mode)
		}})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return Inspection{}, fmt.Errorf("database %s is in use by another process (is `oauthd serve` running on it?): %w", path, ErrLocked)
	}
	if err != nil {
		return Inspection{}, fmt.Errorf("open database %s: %w", path, err)
	}
	defer db.Close()
	var in Inspection
	err = db.View(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil || meta.Get(keySchema) == nil {
			return nil // not an oauthd file yet
		}
		in.Schema = string(meta.Get(keySchema))
		if err := checkBuckets(tx); err != nil {
			return err
		}
		if in.Schema != schemaVersion && !slices.Contains(UpgradableSchemas, in.Schema) {
			return schemaError(in.Schema)
		}
		if b := tx.Bucket(bucketKeys); b != nil {
			if _, err := get(b, keySetKey, &in.Keys); err != nil {
				return fmt.Errorf("read the signing keys: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return Inspection{}, fmt.Errorf("open database %s: %w", path, err)
	}
	return in, nil
}

// checkBuckets refuses a file holding a bucket this build does not know,
// which a newer oauthd made: running an older binary on it would ignore
// what it holds (say, let a user disabled since log in). A rollback is
// restoring the backup taken before the upgrade (docs/PRODUCTION.md).
func checkBuckets(tx *bbolt.Tx) error {
	return tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
		if !slices.ContainsFunc(allBuckets, func(b []byte) bool { return bytes.Equal(b, name) }) {
			return fmt.Errorf("%w: the file was written by a newer oauthd (it holds %q, which this one, reading schema %q, does not know); "+
				"run that oauthd (`oauthd version` shows the schema a binary reads), or restore the backup taken before the upgrade", ErrSchema, name, schemaVersion)
		}
		return nil
	})
}

// schemaError is the refusal of a file of schema have, which this build
// neither reads nor upgrades: it names both versions and what to do.
func schemaError(have string) error {
	if slices.Contains(UpgradableSchemas, have) {
		return fmt.Errorf("%w %q (this oauthd reads %q and upgrades %q): start `oauthd serve` on it once, which upgrades it, then run this command again",
			ErrSchema, have, schemaVersion, have)
	}
	return fmt.Errorf("%w %q (this oauthd reads %q): the file was written by another oauthd release; run that release "+
		"(`oauthd version` shows the schema a binary reads), or restore the backup taken before the upgrade", ErrSchema, have, schemaVersion)
}
