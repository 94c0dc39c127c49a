package keys

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"testing"
)

// RFC 6979 §A.2.5: ECDSA, 256 bits (prime field), SHA-256, message
// "sample". signES256 must give exactly this R and S: its nonce is the
// deterministic one, and its R||S encoding keeps leading zeros.
func TestSignES256RFC6979(t *testing.T) {
	x, _ := hex.DecodeString("C9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721")
	key, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), x)
	if err != nil {
		t.Fatal(err)
	}
	want := "EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716" +
		"F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8"
	sig, err := signES256([]byte("prefix"), key, []byte("sample"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%X", sig); got != fmt.Sprintf("%X", "prefix")+want {
		t.Errorf("signature = %s; want prefix then %s", got, want)
	}
}

// Every signature verifies, including the ones whose R or S is shorter
// than 32 bytes (one in 128 signatures) and must be left-padded.
func TestSignES256Verifies(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	short := 0
	for i := range 2000 {
		msg := fmt.Appendf(nil, "header.payload-%d", i)
		sig, err := signES256(nil, key, msg)
		if err != nil {
			t.Fatal(err)
		}
		if len(sig) != 64 {
			t.Fatalf("signature of %d bytes", len(sig))
		}
		if sig[0] == 0 || sig[32] == 0 {
			short++
		}
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		d := sha256.Sum256(msg)
		if !ecdsa.Verify(&key.PublicKey, d[:], r, s) {
			t.Fatalf("signature %d does not verify", i)
		}
	}
	if short == 0 {
		t.Log("no short R or S in this run")
	}
}
