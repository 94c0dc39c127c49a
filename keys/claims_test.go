package keys_test

import (
	"reflect"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"oauthd/keys"
)

// TestSignTakesTheContract: Manager.Sign's parameter is the declared
// contract (claims with AppendJSON), not any jwt.Claims checked at run
// time, so claims without the fast path do not compile as its argument;
// JSONClaims makes such claims into the contract.
func TestSignTakesTheContract(t *testing.T) {
	sign, ok := reflect.TypeFor[*keys.Manager]().MethodByName("Sign")
	if !ok {
		t.Fatal("*keys.Manager has no Sign method")
	}
	param := sign.Type.In(1)
	if param != reflect.TypeFor[keys.Claims]() {
		t.Errorf("Sign takes %v; want keys.Claims", param)
	}
	if _, ok := param.MethodByName("AppendJSON"); !ok {
		t.Errorf("Sign's parameter %v has no AppendJSON", param)
	}
	for _, c := range []any{jwt.MapClaims{}, jwt.RegisteredClaims{}, &jwt.RegisteredClaims{}} {
		if reflect.TypeOf(c).Implements(param) {
			t.Errorf("%T would be accepted by Sign without encoding itself", c)
		}
	}
	c, err := keys.JSONClaims(jwt.MapClaims{"sub": "42", "b": "<&>"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(c.AppendJSON([]byte("x"))), `x{"b":"\u003c\u0026\u003e","sub":"42"}`; got != want {
		t.Errorf("JSONClaims(...).AppendJSON = %s; want %s", got, want)
	}
	if _, err := keys.JSONClaims(jwt.MapClaims{"bad": func() {}}); err == nil {
		t.Error("JSONClaims of claims encoding/json cannot encode succeeded")
	}
}
