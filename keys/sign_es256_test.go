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
// "sample". signES256 must give exactly this R, and n − S for the
// vector's S, which is high: its nonce is the deterministic one, its S the
// low one of the pair, and its R||S encoding keeps leading zeros.
func TestSignES256RFC6979(t *testing.T) {
	x, _ := hex.DecodeString("C9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721")
	key, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), x)
	if err != nil {
		t.Fatal(err)
	}
	vectorS, _ := new(big.Int).SetString("F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8", 16)
	lowS := new(big.Int).Sub(elliptic.P256().Params().N, vectorS)
	want := fmt.Sprintf("EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716%064X", lowS)
	sig, err := signES256([]byte("prefix"), key, []byte("sample"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%X", sig); got != fmt.Sprintf("%X", "prefix")+want {
		t.Errorf("signature = %s; want prefix then %s", got, want)
	}
}

var halfN = new(big.Int).Rsh(elliptic.P256().Params().N, 1)

// TestLowS: lowS maps every S above n/2 to n − S and leaves the others,
// at the edges too.
func TestLowS(t *testing.T) {
	n := elliptic.P256().Params().N
	one := big.NewInt(1)
	for _, s := range []*big.Int{
		one, new(big.Int).Sub(halfN, one), halfN, new(big.Int).Add(halfN, one),
		new(big.Int).Sub(n, one), new(big.Int).Lsh(one, 255), new(big.Int).Sub(n, new(big.Int).Lsh(one, 64)),
	} {
		var b [32]byte
		s.FillBytes(b[:])
		lowS(&b)
		want := s
		if s.Cmp(halfN) > 0 {
			want = new(big.Int).Sub(n, s)
		}
		if got := new(big.Int).SetBytes(b[:]); got.Cmp(want) != 0 {
			t.Errorf("lowS(%x) = %x; want %x", s, got, want)
		}
	}
}

// Every signature verifies and has a low S, including the ones whose R or S is shorter
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
		if s.Cmp(halfN) > 0 {
			t.Fatalf("signature %d has a high S", i)
		}
		d := sha256.Sum256(msg)
		if !ecdsa.Verify(&key.PublicKey, d[:], r, s) {
			t.Fatalf("signature %d does not verify", i)
		}
	}
	if short == 0 {
		t.Log("no short R or S in this run")
	}
}
