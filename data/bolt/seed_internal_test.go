package bolt

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data/datatest"
)

// TestSeedFamiliesBytes: the file SeedFamilies writes holds, byte for byte,
// the keys and values the code exchange writes for the same inputs, in
// every bucket (the codes, the families, their indexes, the expiry index).
func TestSeedFamiliesBytes(t *testing.T) {
	ctx := t.Context()
	fams, codes := datatest.SeedInputs()
	dir := t.TempDir()
	var dumps [2]map[string]string
	for i, name := range []string{"exchanged.db", "seeded.db"} {
		path := filepath.Join(dir, name)
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			datatest.ExchangeAll(t, s, fams, codes)
		} else if err := s.SeedFamilies(ctx, fams, codes); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil { // checkpoints the log into the file
			t.Fatal(err)
		}
		dumps[i] = dumpFile(t, path)
	}
	for k, v := range dumps[0] {
		if dumps[1][k] != v {
			t.Errorf("%s: seeded %q; exchanged %q", k, dumps[1][k], v)
		}
	}
	for k, v := range dumps[1] {
		if _, ok := dumps[0][k]; !ok {
			t.Errorf("%s: seeded %q; the exchange wrote none", k, v)
		}
	}
}

// dumpFile is every key and value of the record buckets of the bbolt file
// at path ("bucket/key" → value), the meta bucket left out.
func dumpFile(t *testing.T, path string) map[string]string {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]string{}
	err = db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			if bytes.Equal(name, bucketMeta) {
				return nil
			}
			return b.ForEach(func(k, v []byte) error {
				out[fmt.Sprintf("%s/%x", name, k)] = string(v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
