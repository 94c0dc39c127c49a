package datatest

import (
	"fmt"
	"reflect"
	"testing"

	"oauthd/data"
)

// Records come back as data.Normalize says, the same from every backend.

// testNormalized: every record comes back from every read as
// [data.Normalize] of the record written, to reflect.DeepEqual, and shares
// no memory with it; so every backend returns the same records.
func testNormalized(t *testing.T, s data.Store) {
	r := fullRecords()
	checkCoverage(t, r)
	localize(&r)
	roundTrip(t, s, &r, wantNormalized(t))
}

// testEmptySlices: empty slices come back as [data.Normalize] says (nil
// where the field's JSON omits it when empty, empty elsewhere).
func testEmptySlices(t *testing.T, s data.Store) {
	r := hollowRecords()
	roundTrip(t, s, &r, wantNormalized(t))
}

func wantNormalized(t *testing.T) func(what string, got, written any) {
	return func(what string, got, written any) {
		t.Helper()
		want := normalized(written)
		if d := firstDiff(reflect.ValueOf(got), reflect.ValueOf(want), reflect.TypeOf(got).Name()); d != "" {
			t.Fatalf("%s differs from data.Normalize of the record written: %s", what, d)
		}
		if shared := aliases(got, written); len(shared) > 0 {
			t.Fatalf("%s shares memory with the record written: %v", what, shared)
		}
	}
}

// normalized is data.Normalize of v, a record.
func normalized(v any) any {
	switch r := v.(type) {
	case data.User:
		return data.Normalize(r)
	case data.Client:
		return data.Normalize(r)
	case data.AuthCode:
		return data.Normalize(r)
	case data.Family:
		return data.Normalize(r)
	case data.Grant:
		return data.Normalize(r)
	case data.Session:
		return data.Normalize(r)
	case []data.SigningKey:
		return data.Normalize(r)
	case data.Revocation:
		return data.Normalize(r)
	}
	panic(fmt.Sprintf("datatest: %T is not a record", v))
}

// firstDiff describes the first place where a and b differ
// (reflect.DeepEqual), or returns "" when they are deeply equal.
func firstDiff(a, b reflect.Value, path string) string {
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s: type %v; want %v", path, a.Type(), b.Type())
	}
	switch a.Kind() {
	case reflect.Struct:
		if a.Type() == timeType {
			return diffLeaf(a, b, path)
		}
		for i := range a.NumField() {
			if p := firstDiff(a.Field(i), b.Field(i), join(path, a.Type().Field(i).Name)); p != "" {
				return p
			}
		}
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: nil is %v; want %v", path, a.IsNil(), b.IsNil())
			}
			return ""
		}
		return firstDiff(a.Elem(), b.Elem(), path)
	case reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s = %#v; want %#v (nil against empty)", path, a.Interface(), b.Interface())
		}
		fallthrough
	case reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: length %d; want %d", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if p := firstDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	default:
		return diffLeaf(a, b, path)
	}
	return ""
}

func diffLeaf(a, b reflect.Value, path string) string {
	if reflect.DeepEqual(a.Interface(), b.Interface()) {
		return ""
	}
	return fmt.Sprintf("%s = %#v; want %#v", path, a.Interface(), b.Interface())
}

// aliases lists the paths of the slices and pointers of b that share
// memory with a slice or pointer of a.
func aliases(a, b any) []string {
	seen := map[uintptr]bool{}
	var walk func(v reflect.Value, path string, f func(v reflect.Value, path string))
	walk = func(v reflect.Value, path string, f func(v reflect.Value, path string)) {
		switch v.Kind() {
		case reflect.Struct:
			if v.Type() == timeType {
				return
			}
			for i := range v.NumField() {
				walk(v.Field(i), join(path, v.Type().Field(i).Name), f)
			}
		case reflect.Pointer:
			if !v.IsNil() {
				f(v, path)
				walk(v.Elem(), path, f)
			}
		case reflect.Slice:
			if v.Cap() > 0 {
				f(v, path)
			}
			for i := range v.Len() {
				walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i), f)
			}
		case reflect.Map:
			if !v.IsNil() {
				f(v, path)
			}
			for _, k := range v.MapKeys() {
				walk(v.MapIndex(k), fmt.Sprintf("%s[%v]", path, k.Interface()), f)
			}
		}
	}
	walk(reflect.ValueOf(a), "", func(v reflect.Value, _ string) { seen[v.Pointer()] = true })
	var out []string
	walk(reflect.ValueOf(b), reflect.TypeOf(b).Name(), func(v reflect.Value, path string) {
		if seen[v.Pointer()] {
			out = append(out, path)
		}
	})
	return out
}

// hollowRecords is records whose slices are empty but not nil, wherever
// the rules allow.
func hollowRecords() records {
	r := fullRecords()
	legacy := newClient("hollow")
	legacy.Type, legacy.Legacy, legacy.Status = data.Public, true, data.StatusApproved
	legacy.Scopes, legacy.Secrets, legacy.Usage = []string{}, []data.ClientSecret{}, []data.UsageDay{}
	legacy.RejectedChange = &data.ClientChange{AddScopes: []string{}, AddRedirectURIs: []string{}, ProposedBy: "user 1", ProposedAt: t0}
	r.Clients = []data.Client{legacy}
	r.Code.Scopes, r.FreshCode.Scopes, r.Grant.Scopes = []string{}, []string{}, []string{}
	r.Family.Scopes, r.Family.TokenHash = []string{}, []byte{}
	r.Family.CodeHash, r.Family.PrevHash, r.Family.LegacyHash = []byte{}, []byte{}, []byte{}
	for i := range r.Keys {
		r.Keys[i].Private, r.Keys[i].Public = []byte{}, []byte{}
	}
	return r
}
