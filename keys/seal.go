package keys

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// MasterKeySize is the size of the master key: AES-256.
const MasterKeySize = 32

// sealVersion prefixes sealed private keys so the format can change.
const sealVersion = 1

// ParseMasterKey parses a master key given as 64 hex digits or as base64
// (standard or URL alphabet, padded or not) of 32 bytes. Surrounding white
// space is ignored. The error never repeats the input.
func ParseMasterKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*MasterKeySize {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == MasterKeySize {
			return b, nil
		}
	}
	return nil, errors.New("a master key is 32 bytes, written as 64 hex digits or base64")
}

// sealer encrypts private keys with the master key (AES-256-GCM, random
// 96-bit nonce, the kid as additional data so a sealed key cannot be moved
// to another record).
type sealer struct{ aead cipher.AEAD }

func newSealer(master []byte) (*sealer, error) {
	if len(master) != MasterKeySize {
		return nil, fmt.Errorf("master key is %d bytes; want %d", len(master), MasterKeySize)
	}
	block, err := aes.NewCipher(master)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

// seal returns version || nonce || ciphertext.
func (s *sealer) seal(kid string, plain []byte) []byte {
	ns := s.aead.NonceSize()
	out := make([]byte, 1+ns, 1+ns+len(plain)+s.aead.Overhead())
	out[0] = sealVersion
	rand.Read(out[1 : 1+ns])
	return s.aead.Seal(out, out[1:1+ns], plain, []byte(kid))
}

// open reverses seal; any failure is [ErrBadMasterKey].
func (s *sealer) open(kid string, sealed []byte) ([]byte, error) {
	ns := s.aead.NonceSize()
	if len(sealed) < 1+ns+s.aead.Overhead() || sealed[0] != sealVersion {
		return nil, fmt.Errorf("key %s: %w", kid, ErrBadMasterKey)
	}
	plain, err := s.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], []byte(kid))
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", kid, ErrBadMasterKey)
	}
	return plain, nil
}
