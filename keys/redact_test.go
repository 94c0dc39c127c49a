package keys

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"testing"
)

func TestPrivateKeyNeverPrints(t *testing.T) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pk := privateKey{priv}
	raw, err := priv.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	scalar := new(big.Int).SetBytes(raw)
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "key", pk, "signer", &signer{key: pk})
	j, _ := json.Marshal(pk)
	for name, out := range map[string]string{
		"%v": fmt.Sprintf("%v", pk), "%+v": fmt.Sprintf("%+v", pk), "%#v": fmt.Sprintf("%#v", pk),
		"signer %+v": fmt.Sprintf("%+v", signer{key: pk}), "slog": logged.String(), "json": string(j),
	} {
		if strings.Contains(out, scalar.String()) || strings.Contains(out, scalar.Text(16)) {
			t.Errorf("%s output contains the private scalar: %s", name, out)
		}
	}
}
