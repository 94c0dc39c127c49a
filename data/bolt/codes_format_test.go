package bolt

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data"
)

func authCodeCases() map[string]data.AuthCode {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	full := data.AuthCode{
		Hash: data.Hash("code"), ClientID: "app", UserID: 42, RedirectURI: "https://app.example.com/cb",
		Scopes: []string{"PROFILE_READ", "BOOKING_READ"}, CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
		CreatedAt: t0, ExpiresAt: t0.Add(time.Minute),
	}
	used := full
	used.Used, used.FamilyID = true, "fam_1"
	empty := full
	empty.Hash, empty.Scopes, empty.CodeChallenge = []byte{}, []string{}, ""
	legacy := full
	legacy.Scopes, legacy.Unrestricted, legacy.UserID = nil, true, -1
	return map[string]data.AuthCode{
		"full":         full,
		"used":         used,
		"empty slices": empty,
		"unrestricted": legacy,
		"zero":         {},
	}
}

// TestAuthCodeCodec: the binary form decodes to what the JSON form decodes
// to (the format it replaces), for nil and empty slices and zero times.
func TestAuthCodeCodec(t *testing.T) {
	codecRoundTrip(t, authCodeCases(), appendAuthCode)
}

// TestAuthCodeCodecRefusesDamage: every truncation, a trailing byte, an
// unknown version and a flag that is neither 0 nor 1 are refused, never
// decoded into a half-filled code.
func TestAuthCodeCodecRefusesDamage(t *testing.T) {
	c := authCodeCases()["used"]
	raw := appendAuthCode(nil, &c)
	// Used is the byte before FamilyID's length and its 5 bytes.
	flag := bytes.Clone(raw)
	flag[len(flag)-7] = 2
	codecRefusesDamage(t, raw, decodeAuthCode, flag)
}

// TestAuthCodeJSONRecordsStillRead: a code written as JSON by an earlier
// version is exchanged, then stored in the binary form, and a replay of it
// is refused with the family it was exchanged for.
func TestAuthCodeJSONRecordsStillRead(t *testing.T) {
	s := openTestStore(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Second)
	c := authCodeCases()["full"]
	c.CreatedAt, c.ExpiresAt = now, now.Add(time.Minute)
	js, _ := json.Marshal(c)
	if err := s.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketCodes).Put(c.Hash, js)
	}); err != nil {
		t.Fatal(err)
	}
	fam := familyCases()["full"]
	fam.ID = "fam_from_json_code"
	exchange := func(got data.AuthCode) (data.Family, error) {
		if !reflect.DeepEqual(got, c) {
			t.Errorf("exchange saw %+v; want %+v", got, c)
		}
		return fam, nil
	}
	if _, _, err := s.ExchangeAuthCode(ctx, c.Hash, exchange); err != nil {
		t.Fatalf("ExchangeAuthCode: %v", err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.db.View(func(tx *bbolt.Tx) error {
		if raw := tx.Bucket(bucketCodes).Get(c.Hash); len(raw) == 0 || raw[0] != codeV1 {
			t.Errorf("exchanged code stored as % x...; want the binary form", raw[:1])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.ExchangeAuthCode(ctx, c.Hash, exchange)
	if !errors.Is(err, data.ErrCodeUsed) || got.FamilyID != fam.ID || !got.Used {
		t.Errorf("replay = %+v, %v; want ErrCodeUsed naming %s", got, err, fam.ID)
	}
}

// FuzzDecodeAuthCode: decoding arbitrary bytes never panics, and whatever
// decodes from the binary form encodes back to the same bytes.
func FuzzDecodeAuthCode(f *testing.F) {
	for _, c := range authCodeCases() {
		f.Add(appendAuthCode(nil, &c))
	}
	f.Add([]byte(`{"client_id":"x"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var c data.AuthCode
		if err := decodeAuthCode(raw, &c); err != nil || raw[0] == '{' {
			return
		}
		if again := appendAuthCode(nil, &c); !bytes.Equal(again, raw) {
			t.Fatalf("decode(% x) re-encodes as % x", raw, again)
		}
	})
}

// BenchmarkAuthCodeCodec: one decode and one encode of a code, as an
// exchange does inside the group commit, binary and JSON.
func BenchmarkAuthCodeCodec(b *testing.B) {
	c := authCodeCases()["full"]
	bin := appendAuthCode(nil, &c)
	js, _ := json.Marshal(c)
	b.Run("binary", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 256)
		for b.Loop() {
			var g data.AuthCode
			if err := decodeAuthCode(bin, &g); err != nil {
				b.Fatal(err)
			}
			buf = appendAuthCode(buf[:0], &g)
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var g data.AuthCode
			if err := json.Unmarshal(js, &g); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(g); err != nil {
				b.Fatal(err)
			}
		}
	})
}
