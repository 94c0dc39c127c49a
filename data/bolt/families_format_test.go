package bolt

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data"
)

func openTestStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "oauthd.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func familyCases() map[string]data.Family {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	full := data.Family{
		ID: "fam_1", ClientID: "app", UserID: 42, Scopes: []string{"PROFILE_READ", "BOOKING_READ"},
		TokenHash: data.Hash("rt"), Generation: 7, CreatedAt: t0, RotatedAt: t0.Add(time.Hour),
		ExpiresAt: t0.Add(24 * time.Hour), AbsoluteExp: t0.Add(90 * 24 * time.Hour), CodeHash: data.Hash("code"),
	}
	empty := full
	empty.Scopes, empty.TokenHash, empty.CodeHash = []string{}, []byte{}, nil
	unrestricted := full
	unrestricted.Scopes, unrestricted.Unrestricted, unrestricted.UserID = nil, true, -1
	grace := full
	grace.Tagged, grace.PrevHash, grace.LegacyHash = true, data.Hash("rt-1"), data.Hash("legacy")
	return map[string]data.Family{
		"grace fields": grace,
		"full":         full,
		"empty slices": empty,
		"unrestricted": unrestricted,
		"zero":         {},
	}
}

// TestFamilyCodec: the binary form decodes to what the JSON form decodes
// to (the format it replaces), for nil and empty slices and zero times.
func TestFamilyCodec(t *testing.T) {
	codecRoundTrip(t, familyCases(), appendFamily)
}

// codecRoundTrip checks that each case's binary form (enc) decodes to what
// its JSON form decodes to.
func codecRoundTrip[T any](t *testing.T, cases map[string]T, enc func([]byte, *T) []byte) {
	t.Helper()
	for name, v := range cases {
		var got, want T
		if err := jsonUnmarshal(enc(nil, &v), &got); err != nil {
			t.Fatalf("%s: decode: %v", name, err)
		}
		js, _ := json.Marshal(v)
		if err := jsonUnmarshal(js, &want); err != nil {
			t.Fatalf("%s: decode JSON: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: binary round trip = %+v; JSON round trip = %+v", name, got, want)
		}
	}
}

// TestFamilyCodecRefusesDamage: every truncation, a trailing byte and an
// unknown version are refused, never decoded into a half-filled family.
func TestFamilyCodecRefusesDamage(t *testing.T) {
	f := familyCases()["full"]
	codecRefusesDamage(t, appendFamily(nil, &f), decodeFamily)
}

// codecRefusesDamage checks that dec refuses every truncation of the
// binary record raw, raw with a byte appended, raw under another version
// byte, and each of more.
func codecRefusesDamage[T any](t *testing.T, raw []byte, dec func([]byte, *T) error, more ...[]byte) {
	t.Helper()
	for n := 0; n < len(raw); n++ {
		var got T
		if err := dec(raw[:n], &got); err == nil {
			t.Errorf("truncated to %d of %d bytes: decoded %+v", n, len(raw), got)
		}
	}
	bad := append([][]byte{
		append(bytes.Clone(raw), 0),
		append([]byte{0x7f}, raw[1:]...),
		append([]byte{0}, raw[1:]...),
	}, more...)
	for _, b := range bad {
		var got T
		if err := dec(b, &got); err == nil {
			t.Errorf("decoded damaged record % x: %+v", b[:4], got)
		}
	}
}

// TestFamilyJSONRecordsStillRead: a family written as JSON by an earlier
// version reads, is rotated, and is then stored in the binary form.
func TestFamilyJSONRecordsStillRead(t *testing.T) {
	s := openTestStore(t)
	f := familyCases()["full"]
	js, _ := json.Marshal(f)
	if err := s.db.Update(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bucketFamilies).Put([]byte(f.ID), js); err != nil {
			return err
		}
		return tx.Bucket(bucketFamByClient).Put(familyIndexKey(f.ClientID, f.ID), nil)
	}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	got, err := s.GetFamily(ctx, f.ID)
	if err != nil || !reflect.DeepEqual(got, f) {
		t.Fatalf("GetFamily = %+v, %v; want %+v", got, err, f)
	}
	next, err := s.RotateRefreshToken(ctx, f.ID, func(old data.Family) (data.Family, error) {
		old.TokenHash, old.Generation = data.Hash("rt2"), old.Generation+1
		return old, nil
	})
	if err != nil || next.Generation != f.Generation+1 {
		t.Fatalf("RotateRefreshToken = %+v, %v", next, err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.db.View(func(tx *bbolt.Tx) error {
		if raw := tx.Bucket(bucketFamilies).Get([]byte(f.ID)); len(raw) == 0 || raw[0] != familyV2 {
			t.Errorf("rotated family stored as % x...; want the binary form", raw[:1])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetFamily(ctx, f.ID); err != nil || !reflect.DeepEqual(got, next) {
		t.Errorf("GetFamily after rotation = %+v, %v; want %+v", got, err, next)
	}
}

// FuzzDecodeFamily: decoding arbitrary bytes never panics, and whatever
// decodes from the binary form encodes back to the same bytes.
func FuzzDecodeFamily(f *testing.F) {
	for _, fam := range familyCases() {
		f.Add(appendFamily(nil, &fam))
	}
	f.Add([]byte(`{"id":"x"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var fam data.Family
		if err := decodeFamily(raw, &fam); err != nil || raw[0] != familyV2 {
			return
		}
		if again := appendFamily(nil, &fam); !bytes.Equal(again, raw) {
			t.Fatalf("decode(% x) re-encodes as % x", raw, again)
		}
	})
}

// TestFamilyV1RecordsStillRead: a record in the form of the release
// before tags (familyV1: no Tagged, PrevHash, LegacyHash) reads with
// those fields zero, and a V1 record with the V2 fields appended is
// refused (one encoding per family).
func TestFamilyV1RecordsStillRead(t *testing.T) {
	for name, f := range familyCases() {
		if f.Tagged || f.PrevHash != nil || f.LegacyHash != nil {
			continue
		}
		v2 := appendFamily(nil, &f)
		if !bytes.HasSuffix(v2, []byte{0, 0, 0}) {
			t.Fatalf("%s: V2 record does not end with the three empty V2 fields: % x", name, v2)
		}
		v1 := append([]byte{familyV1}, v2[1:len(v2)-3]...)
		var got, want data.Family
		if err := decodeFamily(v1, &got); err != nil {
			t.Fatalf("%s: decode V1: %v", name, err)
		}
		if err := decodeFamily(v2, &want); err != nil {
			t.Fatalf("%s: decode V2: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: V1 decodes to %+v; V2 to %+v", name, got, want)
		}
		var bad data.Family
		if err := decodeFamily(append([]byte{familyV1}, v2[1:]...), &bad); err == nil {
			t.Errorf("%s: a V1 record with V2 fields decoded: %+v", name, bad)
		}
	}
}

func TestFamilyCodecRefusesLongVarint(t *testing.T) {
	f := data.Family{ID: "x"}
	raw := appendFamily(nil, &f)
	// raw[1] is the length of ID (1); spell it in two bytes.
	long := append([]byte{raw[0], 0x81, 0x00}, raw[2:]...)
	var got data.Family
	if err := decodeFamily(long, &got); err == nil {
		t.Errorf("decoded a record with a non-minimal varint: %+v", got)
	}
}

// BenchmarkFamilyCodec: one decode and one encode of a family, as a
// refresh rotation does inside the group commit, binary and JSON.
func BenchmarkFamilyCodec(b *testing.B) {
	f := familyCases()["full"]
	bin := appendFamily(nil, &f)
	js, _ := json.Marshal(f)
	b.Run("binary", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 256)
		for b.Loop() {
			var g data.Family
			if err := decodeFamily(bin, &g); err != nil {
				b.Fatal(err)
			}
			buf = appendFamily(buf[:0], &g)
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var g data.Family
			if err := json.Unmarshal(js, &g); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(g); err != nil {
				b.Fatal(err)
			}
		}
	})
}
