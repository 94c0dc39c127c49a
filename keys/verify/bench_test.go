package verify_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"math/big"
	"strings"
	"testing"

	"oauthd/keys/verify"
)

// BenchmarkVerify measures Verify per alg (without the token cache) next
// to the bare signature check of the same token (the floor Verify cannot
// beat), so the overhead of parsing and claim checks is visible; /cached
// is the same token answered from the cache.
func BenchmarkVerify(b *testing.B) {
	es, ed, rs := fixedKeys(b)
	c := newClock()
	ks := staticKeys{es.kid: es, ed.kid: ed, rs.kid: rs}
	v, err := verify.New(verify.Config{Issuer: issuer, Keys: ks, Now: c.Now, CacheEntries: -1})
	if err != nil {
		b.Fatal(err)
	}
	vc, err := verify.New(verify.Config{Issuer: issuer, Keys: ks, Now: c.Now})
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range []testKey{es, ed, rs} {
		tok := mint(b, k, validClaims(c.Now()), nil)
		b.Run(k.alg+"/cached", func(b *testing.B) {
			b.ReportAllocs()
			ctx := b.Context()
			for b.Loop() {
				if _, err := vc.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(k.alg, func(b *testing.B) {
			b.ReportAllocs()
			ctx := b.Context()
			for b.Loop() {
				if _, err := v.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(k.alg+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			ctx := b.Context()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := v.Verify(ctx, tok); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		verifyRaw := rawVerifier(b, k, tok)
		b.Run(k.alg+"/raw", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !verifyRaw() {
					b.Fatal("raw verify failed")
				}
			}
		})
		b.Run(k.alg+"/raw/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if !verifyRaw() {
						b.Error("raw verify failed")
						return
					}
				}
			})
		})
	}
}

// rawVerifier returns the bare signature check of tok with k's public key.
func rawVerifier(b *testing.B, k testKey, tok string) func() bool {
	i := strings.LastIndexByte(tok, '.')
	signed := []byte(tok[:i])
	sig, err := base64.RawURLEncoding.DecodeString(tok[i+1:])
	if err != nil {
		b.Fatal(err)
	}
	switch pub := k.pub().(type) {
	case *ecdsa.PublicKey:
		return func() bool {
			h := sha256.Sum256(signed)
			var r, s = new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
			return ecdsa.Verify(pub, h[:], r, s)
		}
	case ed25519.PublicKey:
		return func() bool { return ed25519.Verify(pub, signed, sig) }
	case *rsa.PublicKey:
		return func() bool {
			h := sha256.Sum256(signed)
			return rsa.VerifyPKCS1v15(pub, crypto.SHA256, h[:], sig) == nil
		}
	}
	b.Fatalf("unexpected key type %T", k.pub())
	return nil
}
